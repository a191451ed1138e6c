#!/bin/bash
# 15_fd_shortage_finish.sh - out of file descriptors when a pack's jobs
# finish (issue 31, item 9, the pack path; 15_fd_shortage_pack covers a
# join and a checkpoint): --pack 8, `ulimit -n 64`, no reserve
# (VKINRD_FD_RESERVE=0). Eight jobs train together; while connections
# hold every descriptor they reach their last epoch at one boundary, and
# their exports (model.safetensors, recon.png: written by several threads
# when eight finish together) cannot be written. Each is paused, saying
# it lacks file descriptors, none failed; once the connections close the
# daemon's retry queues them again and each ends done, with its exports
# and every epoch once in its history.
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
export VKINRD_CHECKPOINT_EPOCHS=1000
(ulimit -n 64 && VKINRD_FD_RESERVE=0 exec "$VKINRD" --socket "$SOCK" --state-dir "$STATE" \
	--pack 8 -v >>"$T/daemon.log" 2>&1) &
DPID=$!
for _ in $(seq 1 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = connect_retry()
img = sample("s.png", 16, 16)
jobs = [submit(c, img, epochs=60, width=16, seed=i) for i in range(8)]
for j in jobs:
    wait_epoch(c, j, 2)
# all eight step together; hold every descriptor before their end
held = []
for i in range(80):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
        held.append(s)
    except OSError:
        pass
    time.sleep(0.01)
ends = [wait_state(c, j, ("paused", "failed", "done"), timeout=120) for j in jobs]
states = [(e["state"], (e.get("error") or "")[:90]) for e in ends]
print("# with every descriptor held: %s" % sorted(set(states)))
tap.ok(all(e["state"] == "paused" and "file descriptors" in (e.get("error") or "")
           for e in ends if e["state"] != "done") and not any(e["state"] == "failed" for e in ends),
       "jobs of a pack that cannot write their files when they finish are paused, saying why, "
       "none failed", states)
for s in held:
    s.close()
ends = [wait_state(c, j, ("done", "failed"), timeout=240) for j in jobs]
hist = [[json.loads(l)["epoch"] for l in open(os.path.join(os.environ["STATE"], "jobs", j,
                                                           "metrics.ndjson"))] for j in jobs]
files = all(os.path.exists(os.path.join(os.environ["STATE"], "jobs", j, f))
            for j in jobs for f in ("model.safetensors", "recon.png"))
tap.ok(all(e["state"] == "done" for e in ends) and files
       and all(h == list(range(1, 61)) for h in hist),
       "once the connections close, each is queued again by itself and ends done, with its "
       "exports and every epoch once",
       ([(e["state"], e.get("error")) for e in ends], [h[-3:] for h in hist], files))
tap.done()
EOF_PY
stop_daemon
tap_done
