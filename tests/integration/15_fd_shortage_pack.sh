#!/bin/bash
# 15_fd_shortage_pack.sh - out of file descriptors in a pack (--pack 8,
# `ulimit -n 64`, no reserve: VKINRD_FD_RESERVE=0), as 15_fd_shortage.sh
# does without packs. A job paused beforehand is resumed while
# connections hold every descriptor: it cannot read its checkpoint to
# join the pack, and is paused saying so, not failed; a job training
# meanwhile cannot write its checkpoint and is paused too. Once the
# connections close, the daemon's retry queues both again and they end
# done, every epoch once in their histories.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
(ulimit -n 64 && VKINRD_FD_RESERVE=0 exec "$VKINRD" --socket "$SOCK" --state-dir "$STATE" \
	--pack 8 -v >>"$T/daemon.log" 2>&1) &
DPID=$!
for _ in $(seq 1 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = connect_retry()
img = sample("s.png", 16, 16)
late = submit(c, img, epochs=80, width=16, seed=7)
wait_epoch(c, late, 6)
c.call("job.pause", {"job": late})
wait_state(c, late, ("paused",))
run = submit(c, img, epochs=300, width=16, seed=8)
wait_epoch(c, run, 2)
held = []
for i in range(80):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
        held.append(s)
    except OSError:
        pass
    time.sleep(0.01)
c.request("job.resume", {"job": late})
# paused with the reason (the daemon's retry may queue it again meanwhile,
# and it is paused again while the descriptors stay held)
end = time.time() + 8
while time.time() < end:
    a = c.call("job.get", {"job": late})
    if a["state"] in ("failed", "done") or (
            a["state"] == "paused" and "file descriptors" in (a.get("error") or "")):
        break
    time.sleep(0.05)
b = wait_state(c, run, ("paused", "failed", "done"), timeout=90)
tap.ok(a["state"] == "paused" and "file descriptors" in (a.get("error") or ""),
       "a job that cannot read its files to join the pack is paused, saying why: %s"
       % (a.get("error") or "")[:160], a)
tap.ok(b["state"] == "paused" and "file descriptors" in (b.get("error") or ""),
       "the pack's running job that cannot write its checkpoint is paused too", b)
for s in held:
    s.close()
ends = [wait_state(c, j, ("done", "failed"), timeout=240) for j in (late, run)]
hist = [[json.loads(l)["epoch"] for l in open(os.path.join(os.environ["STATE"], "jobs", j,
                                                           "metrics.ndjson"))] for j in (late, run)]
tap.ok([e["state"] for e in ends] == ["done", "done"]
       and hist == [list(range(1, 81)), list(range(1, 301))],
       "once the connections close, both are queued again by themselves and end done, "
       "every epoch once", ([(e["state"], e.get("error")) for e in ends], [h[-3:] for h in hist]))
tap.done()
EOF_PY
stop_daemon
tap_done
