#!/bin/bash
# 88_stop_two_workers.sh - an idle daemon with two workers (`--device 0
# --device 0`), after a 4-job batch has run on both, stops within 2 s of
# SIGTERM, exits 0 and says "stopped". Each worker reports that it has
# stopped before it releases its device, and the daemon waits for the
# release one second at most (a driver slow to tear down cannot hold the
# stop up). The 2 s are read off the daemon's own log, from the signal's
# line to its last one: the process's exit after that (a sanitizer build's
# leak check, a loaded machine) is bounded only loosely, 60 s.
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
start_daemon --device 0 --device 0 || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("s.png", 16, 16)
jobs = [submit(c, img, epochs=4, width=16, batch="b1") for _ in range(4)]
ends = [wait_state(c, j, ("done", "failed"))["state"] for j in jobs]
workers = {c.call("job.get", {"job": j})["device"] for j in jobs}
tap.ok(ends == ["done"] * 4, "a 4-job batch runs to the end on two workers", ends)
tap.done()
EOF_PY
sleep 1 # both workers idle
t0=$(date +%s%N)
kill -TERM "$DPID"
wait "$DPID"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
DPID=
# the daemon's own time from the signal to its last line, in ms
own=$(python3 - "$T/daemon.log" <<'EOF_PY'
import datetime, sys
t = lambda l: datetime.datetime.strptime(l[:23], "%Y-%m-%d %H:%M:%S.%f")
lines = [l for l in open(sys.argv[1]) if l[:2] == "20"]
sig = [i for i, l in enumerate(lines) if "signal 15" in l]
print(int((t(lines[-1]) - t(lines[sig[-1]])).total_seconds() * 1000) if sig else 999999)
EOF_PY
)
if [ "$rc" = 0 ] && [ "$own" -lt 2000 ] && [ "$ms" -lt 60000 ] &&
	grep -qE "(info|notice): stopped" "$T/daemon.log"; then
	echo "ok 2 - SIGTERM: the idle daemon with two workers stops in $own ms (under 2 s; exited after $ms ms), status 0"
else
	echo "not ok 2 - SIGTERM: the idle daemon with two workers stops in $own ms (under 2 s; exited after $ms ms), status $rc"
	TAP_FAILED=1
fi
grep -E "released|releasing|stopp" "$T/daemon.log" | sed "s/^/# /"
tap_done
