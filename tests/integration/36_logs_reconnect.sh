#!/bin/bash
# 36_logs_reconnect.sh - `vkinrctl logs -f` survives a daemon restart, as
# watch does (issue 36): it is following a running job when the daemon
# is stopped and started again; it says it is reconnecting, connects
# again, prints the events that came meanwhile and after (the restart's,
# the cancellation) with none of the earlier ones twice, and exits 0 once
# the job has ended. With the daemon gone for good, `logs -f --timeout 1`
# gives up after about a second with exit 69.
# run.sh: light
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
"$MKSAMPLE" "$T/r.png" 16 16 >/dev/null
JOB=$("$CTL" submit -q --epochs 100000 --width 16 "$T/r.png")
"$CTL" logs -f "$JOB" >"$T/logs.out" 2>"$T/logs.err" & FOLLOWER=$!
# the daemon's event is "starting on DEVICE"; a pattern that never
# matched made this wait run its whole minute
for _ in $(seq 600); do
	grep -q "starting on" "$T/logs.out" && break
	sleep 0.1
done
grep -q "starting on" "$T/logs.out" || echo "# logs -f showed no start in a minute"
before=$(wc -l <"$T/logs.out")
stop_daemon
sleep 1
start_daemon || echo "# the daemon did not start again"
for _ in $(seq 600); do
	[ "$("$CTL" --json show "$JOB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" = running ] && break
	sleep 0.1
done
sleep 1
"$CTL" cancel "$JOB" >/dev/null
for _ in $(seq 300); do
	kill -0 $FOLLOWER 2>/dev/null || break
	sleep 0.1
done
kill -0 $FOLLOWER 2>/dev/null && kill $FOLLOWER
wait $FOLLOWER; rc=$?
n=0
ok() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; TAP_FAILED=$((TAP_FAILED + 1)); sed 's/^/#   /' "$T"/logs.*; fi; }
ok "logs -f across the restart: exit 0 once the job is cancelled" '[ $rc = 0 ] && tail -1 "$T/logs.out" | grep -qi "cancel"'
ok "it said it was reconnecting" 'grep -q "lost vkinrd.*reconnecting" "$T/logs.err"'
ok "it printed the events after the restart, the earlier ones once" 'python3 -c "
import sys
lines = open(sys.argv[1]).read().splitlines()
want = open(sys.argv[2]).read().splitlines()
assert len(lines) > int(sys.argv[3]) + 1, lines
assert lines == want, (lines, want)
" "$T/logs.out" <("$CTL" logs "$JOB"; true) "$before"'
JOB2=$("$CTL" submit -q --epochs 100000 --width 16 "$T/r.png")
"$CTL" logs -f --timeout 1 "$JOB2" >/dev/null 2>"$T/logs.gone" & F=$!
sleep 1
t0=$(date +%s%N)
stop_daemon
wait $F; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
ok "a daemon that stays away: logs -f --timeout 1 exits 69 a second after it went (${ms} ms)" '[ $rc = 69 ] && [ $ms -ge 1000 ] && [ $ms -lt 15000 ]'
ok "... saying why" 'grep -q "cannot reach vkinrd" "$T/logs.gone"'
tap_done
