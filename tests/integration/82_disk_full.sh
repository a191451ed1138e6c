#!/bin/bash
# 82_disk_full.sh - the state folder on a small tmpfs that fills up (as
# root; skipped when the mount is not allowed). A job trains with a
# checkpoint every 5 epochs; the disk is then filled: the job is paused
# with a reason naming the file it cannot write and why, the previous
# checkpoint stays intact, and the daemon keeps serving (hello, job.list,
# and a submit refused with a sentence). Once space is freed, the daemon's
# retry queues the job again by itself; it continues from that checkpoint
# (its checksum verified on load) and ends with every epoch once: no gap
# and no torn line in metrics.ndjson.
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
mkdir -p "$STATE"
if ! mount -t tmpfs -o size=4m,mode=0700 tmpfs "$STATE" 2>/dev/null; then
	for i in 1 2 3 4 5 6; do echo "ok $i # SKIP cannot mount a tmpfs (needs root)"; done
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
tap_done
