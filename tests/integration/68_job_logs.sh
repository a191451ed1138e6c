#!/bin/bash
# 68_job_logs.sh - `vkinrctl logs ID`: one job's events, with times, in
# order (submitted, started, paused, resumed, started again, done), the
# same words as the daemon's log lines; kept across a daemon restart,
# gone with the job; an unknown id exits 3, a missing one 2.
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
"$MKSAMPLE" "$T/e.png" 16 16 >/dev/null
J=$("$CTL" submit -q --epochs 300 --width 16 "$T/e.png")
# paused while it runs, so that it starts twice
for _ in $(seq 300); do
	"$CTL" --json show "$J" | grep -q '"state":"running"' && break
	sleep 0.05
done
"$CTL" pause "$J" >/dev/null
"$CTL" resume "$J" >/dev/null
"$CTL" wait "$J" >/dev/null
"$CTL" logs "$J" >"$T/logs1"; RC1=$?

# in_order FILE WORD...: each WORD starts a line's text, in that order
in_order() {
	local f=$1 line=0 at; shift
	for w in "$@"; do
		at=$(grep -nE "^[0-9-]{10} [0-9:]{8}  $w" "$f" | cut -d: -f1 |
			awk -v l="$line" '$1 > l { print; exit }')
		[ -n "$at" ] || { echo "no \"$w\" after line $line"; cat "$f"; return 1; }
		line=$at
	done
}
check "logs ID exits 0 and prints TIME  TEXT lines" \
	bash -c "[ $RC1 = 0 ] && [ -s '$T/logs1' ] && ! grep -Evq '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}  ' '$T/logs1'"
check "submitted, started, paused, resumed, started, done: in order" \
	in_order "$T/logs1" "submitted by uid $(id -u)" "starting on" "paused at epoch" \
	"resumed by uid $(id -u) \\(was paused\\)" "starting on" "done at epoch 300"
check "the same words as the daemon's log lines" \
	bash -c "grep -q 'job $J: resumed by uid' '$T/daemon.log' && grep -q 'job $J: done at epoch 300' '$T/daemon.log'"
check "--json: the events with Unix times" \
	bash -c "'$CTL' --json logs '$J' | python3 -c '
import json, sys
r = json.load(sys.stdin)
ev = r[\"events\"]
assert r[\"job\"] == \"$J\" and len(ev) >= 6, r
assert all(isinstance(e[\"time\"], float) and e[\"time\"] > 1.7e9 for e in ev), ev
assert [e[\"time\"] for e in ev] == sorted(e[\"time\"] for e in ev), ev
assert ev[-1][\"text\"] == \"done at epoch 300\", ev'"

stop_daemon
start_daemon || { echo "not ok 5 - daemon restarts"; exit 1; }
"$CTL" logs "$J" >"$T/logs2"
check "the events survive a daemon restart" cmp "$T/logs1" "$T/logs2"

"$CTL" logs 999 >"$T/out" 2>"$T/err"; RC=$?
check "an unknown id exits 3 and says so" \
	bash -c "[ $RC = 3 ] && [ ! -s '$T/out' ] && grep -q 'no job with id' '$T/err'"
"$CTL" logs >/dev/null 2>&1; RC=$?
check "no id: a usage error (2)" test "$RC" = 2
"$CTL" rm "$J" >/dev/null
"$CTL" logs "$J" >/dev/null 2>&1; RC=$?
check "rm takes the events with the job" \
	bash -c "[ $RC = 3 ] && [ ! -e '$STATE/jobs/$J' ]"
stop_daemon
tap_done
