#!/bin/bash
# 37_after_retry.sh - `submit --after JOB[,JOB]` and `retry JOB`, through
# the real client and daemon.
#
# --after: the job stays queued (shown as waiting) until the jobs it names
# are done, then runs; it is still waiting after a daemon restart; a
# dependency cancelled fails it with a sentence naming that job; one
# already failed or cancelled, or unknown, is refused at submission; a
# done dependency removed while it waits releases it rather than failing
# it. retry: a cancelled job runs again from scratch as a new job with the
# same settings (retry_of names the old one, which stays); a done or
# running job is refused; -q prints the new id alone.
# run.sh: light
. "$(dirname "$0")/lib.bash"
tap_plan 11
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
"$MKSAMPLE" "$T/a.png" 16 16 >/dev/null

state() { "$CTL" --json show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_running() {
	for _ in $(seq 600); do [ "$(state "$1")" = running ] && return 0; sleep 0.05; done
	return 1
}

# A long job, and one that waits for it: the second must not start while
# the first runs (one worker, --pack 1, so it would start once the first is
# paused; it is paused here so that only --after holds it back).
A=$("$CTL" submit -q --epochs 100000 --width 16 --name long "$T/a.png")
wait_running "$A"
B=$("$CTL" submit -q --after "$A" --epochs 20 --width 16 --name follower "$T/a.png")
"$CTL" pause "$A" >/dev/null
sleep 1
check "a job with --after stays queued while its job is not done, shown as waiting" \
	bash -c "[ \"\$('$CTL' --json show $B | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[\"state\"], j[\"after\"], j[\"waiting_for\"])')\" = \"queued ['$A'] ['$A']\" ] &&
		'$CTL' list | grep -E '^$B +follower +waiting'"

stop_daemon
start_daemon || { echo "not ok 2 - daemon restarts"; exit 1; }
sleep 1
check "it is still waiting after a daemon restart" \
	bash -c "[ \"\$('$CTL' --json show $B | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[\"state\"], j[\"waiting_for\"])')\" = \"queued ['$A']\" ] && grep -q '\"after\"' '$STATE/jobs/$B/after.json'"

# its job cancelled: it fails, saying which and why
"$CTL" cancel "$A" >/dev/null
for _ in $(seq 100); do [ "$(state "$B")" = failed ] && break; sleep 0.05; done
check "its job cancelled, it fails with a reason naming that job" \
	bash -c "'$CTL' show $B | grep -q 'error .*job $A, which it waits for (--after), was cancelled' &&
		'$CTL' logs $B | grep -q 'failed: job $A, which it waits for'"
"$CTL" wait "$B" >/dev/null 2>&1; RC=$?
check "wait on it exits 1" test "$RC" = 1

"$CTL" submit --after "$A" "$T/a.png" >"$T/out" 2>"$T/err"; RC=$?
check "--after a cancelled job is refused at submission (3), saying why" \
	bash -c "[ $RC = 3 ] && grep -q 'job $A is cancelled' '$T/err'"
"$CTL" submit --after 9999 "$T/a.png" >"$T/out" 2>"$T/err"; RC=$?
check "--after an unknown job is refused (3)" \
	bash -c "[ $RC = 3 ] && grep -q 'no job with id' '$T/err'"

# retry: a new job, same settings, from scratch
R=$("$CTL" retry -q "$A"); RC=$?
check "retry of a cancelled job: a new job with the same settings, retry_of the old" \
	bash -c "[ $RC = 0 ] && [ -n '$R' ] && [ '$R' != '$A' ] && '$CTL' --json show $R | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j[\"retry_of\"] == \"$A\" and j[\"name\"] == \"long\" and j[\"epochs\"] == 100000 and j[\"width\"] == 16, j
assert j[\"state\"] in (\"queued\", \"running\"), j' && [ \"\$('$CTL' --json show $A | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = cancelled ] &&
		'$CTL' logs $A | grep -q 'retried as job $R'"
wait_running "$R"
"$CTL" retry "$R" >"$T/out" 2>"$T/err"; RC=$?
check "retry of a running job is refused (3), saying what retries" \
	bash -c "[ $RC = 3 ] && grep -q 'only a failed or cancelled job can be retried' '$T/err'"
# --after several, one of them a name; done ones count (R paused, so
# that the one worker runs D)
"$CTL" pause "$R" >/dev/null
D=$("$CTL" submit -q --epochs 5 --width 16 --name quick "$T/a.png")
"$CTL" wait "$D" >/dev/null
E=$("$CTL" submit -q --after "quick,$R" --epochs 5 --width 16 "$T/a.png")
sleep 1
check "--after a name and an id: waits only for the one not done" \
	bash -c "[ \"\$('$CTL' --json show $E | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[\"state\"], sorted(j[\"after\"]), j[\"waiting_for\"])')\" = \"queued \$(python3 -c 'print(sorted([\"$D\", \"$R\"]))') ['$R']\" ]"
"$CTL" rm "$R" >/dev/null
for _ in $(seq 200); do [ "$(state "$E")" = failed ] && break; sleep 0.05; done
check "its job removed before it was done: it fails, saying so" \
	bash -c "'$CTL' show $E | grep -q 'error .*job $R, which it waits for (--after), is gone: it was removed before it was done'"

# a done job removed while one waits for it: released, not failed
F=$("$CTL" submit -q --epochs 100000 --width 16 "$T/a.png")
wait_running "$F"
G=$("$CTL" submit -q --after "$D,$F" --epochs 5 --width 16 "$T/a.png")
"$CTL" rm "$D" >/dev/null
"$CTL" cancel "$F" >/dev/null
H=$("$CTL" submit -q --epochs 5 --width 16 "$T/a.png")
"$CTL" wait "$H" >/dev/null
check "a done job it waits for removed: not a failure (the cancelled one is)" \
	bash -c "'$CTL' show $G | grep -q 'error .*job $F, which it waits for (--after), was cancelled'"
stop_daemon
tap_done
