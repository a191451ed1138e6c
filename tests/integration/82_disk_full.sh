#!/bin/bash
# 82_disk_full.sh - the state folder on a small tmpfs that fills up (as
# root; skipped when the mount is not allowed). A job trains with a
# checkpoint every 5 epochs; the disk is then filled: the job is paused
# with a reason naming the file it cannot write and why, the previous
# checkpoint stays intact, and the daemon keeps serving (hello, job.list,
# and a submit refused with a sentence). Once space is freed, the daemon's
# retry queues the job again by itself; it continues from that checkpoint
# (its checksum verified on load) and ends with every epoch once: no gap
# and no torn line in metrics.ndjson. Then the same with checkpoints rare
# (VKINRD_CHECKPOINT_EPOCHS=100000), so that the first write to fail is
# the append of an epoch to metrics.ndjson: paused naming that file,
# resumed by itself once space is freed, and its history whole.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device
mkdir -p "$STATE"
if ! mount -t tmpfs -o size=4m,mode=0700 tmpfs "$STATE" 2>/dev/null; then
	for i in 1 2 3 4 5 6 7 8 9; do echo "ok $i # SKIP cannot mount a tmpfs (needs root)"; done
	exit 0
fi
trap '[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null; wait; umount -l "$STATE"; cleanup' EXIT
export VKINRD_CHECKPOINT_EPOCHS=5
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
state = os.environ["STATE"]
img = sample("f.png", 24, 24)
c = Client()
job = submit(c, img, epochs=150, width=16, seed=4)
wait_epoch(c, job, 12)
filler = os.path.join(state, "filler")
fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        os.write(fd, b"\0" * 4096)
except OSError:
    pass
os.close(fd)
j = wait_state(c, job, ("paused", "failed", "done"), timeout=60)
err = j.get("error") or ""
tap.ok(j["state"] == "paused" and os.path.join(state, "jobs", job) in err and "space" in err,
       "the job that cannot write is paused, naming the file and the cause", j)
ckpt = open(os.path.join(state, "jobs", job, "checkpoint.safetensors"), "rb").read()
hlen = int.from_bytes(ckpt[:8], "little")
meta = json.loads(ckpt[8:8 + hlen])["__metadata__"]
tap.ok(5 <= int(meta["epoch"]) <= j["epoch"] and int(meta["epoch"]) % 5 == 0,
       "the previous checkpoint is there, whole (epoch %s)" % meta.get("epoch"), meta)
ok = c.call("hello")["protocol"] >= 1 and \
     [x["id"] for x in c.call("job.list")["jobs"]] == [job]
r = c.request("job.submit", {"image": {"png": png_b64(img)}, "epochs": 5, "width": 16})
tap.ok(ok and "error" in r and r["error"]["message"],
       "the daemon keeps serving: hello, job.list; a submit is refused with a sentence",
       r)
time.sleep(4)
still = c.call("job.get", {"job": job})["state"]
os.unlink(filler)
epochs, states, _ = follow(c, job)
tap.ok(still == "paused" and states[-1:] == ["done"],
       "it stays paused while the disk is full; with space again it resumes by itself and finishes",
       (still, states))
# (a live follower saw the rewind to the checkpoint; the history is whole)
text = open(os.path.join(state, "jobs", job, "metrics.ndjson")).read()
hist = [json.loads(s)["epoch"] for s in text.splitlines()]
print("# history after the disk-full episode: %d epochs, %d missing" %
      (len(hist), len(set(range(1, 151)) - set(hist))))
c2 = Client()
replay, _, _ = follow(c2, job)
tap.ok(hist == list(range(1, 151)) and replay == hist,
       "every epoch once in its history (metrics.ndjson, a replay)", (hist, replay))
tap.ok(os.path.exists("/proc/%s" % os.environ["DPID"]), "the daemon is still up")
tap.done()
EOF_PY
stop_daemon
rm -f "$STATE/filler"
export VKINRD_CHECKPOINT_EPOCHS=100000
TAP_N=6
start_daemon || { echo "not ok 7 - daemon starts again"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
state = os.environ["STATE"]
c = Client()
job = submit(c, sample("g.png", 24, 24), epochs=300, width=16, seed=5)
wait_epoch(c, job, 10)
metrics = os.path.join(state, "jobs", job, "metrics.ndjson")
filler = os.path.join(state, "filler")
fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
for size in (65536, 4096, 64, 1):  # to the last byte, then a line cannot fit
    try:
        while True:
            os.write(fd, b"\0" * size)
    except OSError:
        pass
os.close(fd)
j = wait_state(c, job, ("paused", "failed", "done"), timeout=60)
err = j.get("error") or ""
tap.ok(j["state"] == "paused" and metrics in err and "space" in err,
       "an epoch that cannot be appended pauses the job, naming metrics.ndjson and the cause", j)
time.sleep(3)
still = c.call("job.get", {"job": job})["state"]
os.unlink(filler)
epochs, states, _ = follow(c, job)
tap.ok(still == "paused" and states[-1:] == ["done"],
       "it stays paused while the disk is full, then resumes by itself and finishes", (still, states))
text = open(metrics).read()
hist = [json.loads(s)["epoch"] for s in text.splitlines()]
print("# history after a failed append: %d epochs, %d missing, ends with a newline: %s" %
      (len(hist), len(set(range(1, 301)) - set(hist)), text.endswith("\n")))
tap.ok(hist == list(range(1, 301)) and text.endswith("\n"),
       "metrics.ndjson has every epoch once, no torn line", hist)
tap.done()
EOF_PY
stop_daemon
tap_done
