#!/bin/bash
# 88_stop_two_workers.sh - an idle daemon with two workers (`--device 0
# --device 0`), after a 4-job batch has run on both, stops within 2 s of
# SIGTERM, exits 0 and says "stopped". Each worker reports that it has
# stopped before it releases its device, and the daemon waits for the
# release one second at most (a driver slow to tear down cannot hold the
# stop up).
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
if [ "$rc" = 0 ] && [ "$ms" -lt 2000 ] && grep -qE "(info|notice): stopped" "$T/daemon.log"; then
	echo "ok 2 - SIGTERM: the idle daemon with two workers stops in $ms ms (under 2 s), status 0"
else
	echo "not ok 2 - SIGTERM: the idle daemon with two workers stops in $ms ms (under 2 s), status $rc"
	TAP_FAILED=1
fi
grep -E "released|releasing|stopp" "$T/daemon.log" | sed "s/^/# /"
tap_done
