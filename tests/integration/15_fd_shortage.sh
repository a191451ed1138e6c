#!/bin/bash
# 15_fd_shortage.sh - the daemon under `ulimit -n 64` while a client opens
# more connections than that: connections are refused, with an error line
# naming RLIMIT_NOFILE, before the daemon's own files run short (it keeps
# the last QUOTA_FD_RESERVE descriptors for them). A job training
# meanwhile (a checkpoint every 5 epochs, its history appended every
# epoch) ends done with every epoch once, an export of it works while the
# connections are still open, and once they close, new ones are served.
# Then with no reserve (VKINRD_FD_RESERVE=0) the connections take every
# descriptor: the job's checkpoint cannot be written, so the job is paused
# saying why, as on a full disk (not failed), and once the connections
# close the daemon's retry queues it again and it ends done.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
start_limited() {
	(ulimit -n 64 && exec "$VKINRD" --socket "$SOCK" --state-dir "$STATE" --pack 1 -v \
		>>"$T/daemon.log" 2>&1) &
	DPID=$!
	for _ in $(seq 1 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
}
start_limited
run_py <<'EOF_PY'
import select
from rpc import *
tap = Tap()
c = connect_retry()
img = sample("s.png", 16, 16)
job = submit(c, img, epochs=60, width=16, seed=5)
wait_epoch(c, job, 2)

held, refused, other = [], [], []
for i in range(80):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
    except OSError as e:
        other.append(repr(e))
        continue
    held.append(s)
    time.sleep(0.01)
time.sleep(1)
for s in held:
    if select.select([s], [], [], 0)[0]:
        data = s.recv(4096)
        line = data.split(b"\n")[0]
        try:
            refused.append(json.loads(line))
        except ValueError:
            other.append(data[:100])
named = [r for r in refused if r.get("error", {}).get("code") == -32004
         and r["error"].get("data", {}).get("limit") == "RLIMIT_NOFILE"
         and "RLIMIT_NOFILE is 64" in r["error"]["message"]]
tap.ok(refused and len(named) == len(refused) and len(held) - len(refused) < 64 - 16,
       "of 80 connections under ulimit -n 64, %d refused naming RLIMIT_NOFILE, %d kept"
       % (len(refused), len(held) - len(refused)), (refused[:2], other[:3]))

epochs, states, _ = follow(c, job, timeout=180)
tap.ok(states[-1:] == ["done"] and epochs[-1:] == [60],
       "the job training meanwhile ends done (its checkpoints and history written)",
       (states, epochs[-3:], c.call("job.get", {"job": job}).get("error")))
hist = [json.loads(l)["epoch"] for l in open(os.path.join(os.environ["STATE"], "jobs", job,
                                                          "metrics.ndjson"))]
r = c.request("job.export", {"job": job})
tap.ok(hist == list(range(1, 61)) and "result" in r,
       "every epoch once in its history; an export works with the connections still open",
       (hist[-3:], str(r)[:300]))
for s in held:
    s.close()
time.sleep(0.5)
tap.ok(connect_retry().call("hello")["protocol"] >= 1, "once they close, a new connection is served")
tap.ok(os.path.exists("/proc/%s" % os.environ["DPID"]), "the daemon is still up")
tap.done()
EOF_PY
stop_daemon
TAP_N=5

VKINRD_FD_RESERVE=0 start_limited
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = connect_retry()
job = submit(c, os.path.join(T, "s.png"), epochs=200, width=16, seed=6)
wait_epoch(c, job, 2)
held = []
for i in range(80):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
        held.append(s)
    except OSError:
        pass
    time.sleep(0.01)
j = wait_state(c, job, ("paused", "failed", "done"), timeout=90)
tap.ok(j["state"] == "paused" and "Too many open files" in (j.get("error") or "")
       and "file descriptors" in j["error"],
       "no reserve: the job that cannot write its checkpoint is paused, saying why", j)
for s in held:
    s.close()
epochs, states, _ = follow(c, job, timeout=180)
hist = [json.loads(l)["epoch"] for l in open(os.path.join(os.environ["STATE"], "jobs", job,
                                                          "metrics.ndjson"))]
tap.ok(states[-1:] == ["done"] and hist == list(range(1, 201)),
       "once the connections close, it is queued again by itself and ends done, every epoch once",
       (states, hist[-3:], c.call("job.get", {"job": job}).get("error")))
tap.done()
EOF_PY
stop_daemon
tap_done
