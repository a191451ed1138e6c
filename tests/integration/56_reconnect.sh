#!/bin/bash
# 56_reconnect.sh - scripts survive a daemon restart: `vkinrctl wait` and
# `vkinrctl watch` (plain lines and --json) are running when the daemon is
# stopped mid-job and started again; they reconnect, carry on from the
# epoch they had seen, and exit 0 once the job is done, the watch's last
# line saying so. With the daemon gone for good, `watch --timeout 1` gives
# up after about a second with exit 69.
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
"$MKSAMPLE" "$T/r.png" 16 16 >/dev/null
JOB=$("$CTL" submit -q --epochs 300 --width 16 --lr 1e-3 "$T/r.png")
"$CTL" wait "$JOB" >"$T/wait.out" 2>"$T/wait.err" & WAITER=$!
"$CTL" watch "$JOB" >"$T/watch.out" 2>"$T/watch.err" & WATCHER=$!
"$CTL" --json watch "$JOB" >"$T/json.out" 2>"$T/json.err" & JSONER=$!
for _ in $(seq 600); do
	e=$("$CTL" --json show "$JOB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])')
	[ "$e" -ge 30 ] && break
	sleep 0.1
done
stop_daemon
sleep 1
start_daemon || echo "# the daemon did not start again"
n=0
wait $WAITER; rc_wait=$?
wait $WATCHER; rc_watch=$?
wait $JSONER; rc_json=$?
ok() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; TAP_FAILED=$((TAP_FAILED + 1)); sed 's/^/#   /' "$T"/*.err; fi; }
ok "wait across the restart: exit 0" '[ $rc_wait = 0 ] && grep -q "done at epoch 300/300" "$T/wait.out"'
ok "watch across the restart: exit 0, ending done" '[ $rc_watch = 0 ] && tail -1 "$T/watch.out" | grep -q "done at epoch 300/300"'
ok "watch said it was reconnecting" 'grep -q "reconnecting" "$T/watch.err"'
ok "watch --json: exit 0, every epoch once, in order" '[ $rc_json = 0 ] && python3 -c "
import json, sys
ep = [m[\"epoch\"] for m in map(json.loads, open(sys.argv[1])) if m[\"event\"] == \"job.progress\"]
assert ep == sorted(set(ep)) and ep[-1] == 300, ep
" "$T/json.out"'
JOB2=$("$CTL" submit -q --epochs 100000 --width 16 "$T/r.png")
"$CTL" watch --timeout 1 "$JOB2" >/dev/null 2>"$T/gone.err" & W=$!
sleep 1
t0=$(date +%s%N) # the watch's second starts after this, once the daemon is gone
stop_daemon
wait $W; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
ok "a daemon that stays away: watch --timeout 1 exits 69 a second after it went (${ms} ms)" '[ $rc = 69 ] && [ $ms -ge 1000 ] && [ $ms -lt 15000 ]'
ok "... saying why" 'grep -q "cannot reach vkinrd" "$T/gone.err"'
tap_done
