#!/bin/bash
# 36_rm_retry_chain.sh - a job and its retries share their name (retry
# copies it); the name then stands for them, not for an ambiguity: `retry`,
# `show` and the other one-job verbs take the newest of the chain, `rm -f`
# removes the whole chain (cancelling the running one), `metrics` covers
# every job of it. Two unrelated jobs of one name stay refused (exit 2)
# and nothing is removed.
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
"$MKSAMPLE" "$T/a.png" 16 16 >/dev/null

state() { "$CTL" --json show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {
	for _ in $(seq 600); do [ "$(state "$1" 2>/dev/null)" = "$2" ] && return 0; [ -n "$1" ] || return 1; sleep 0.05; done
	return 1
}

# A cancelled, retried by name as R1; R1 cancelled, retried by name as R2
A=$("$CTL" submit -q --epochs 100000 --width 16 --name chain "$T/a.png")
wait_state "$A" running
"$CTL" cancel chain >/dev/null
R1=$("$CTL" retry -q chain 2>"$T/err"); RC=$?
check "retry by the name of a cancelled job" \
	bash -c "[ $RC = 0 ] && [ -n '$R1' ] && [ '$R1' != '$A' ]"
wait_state "$R1" running
"$CTL" cancel chain >"$T/out" 2>"$T/err"; RC=$?
check "the name of a job and its retry is not ambiguous: cancel takes the newest" \
	bash -c "[ $RC = 0 ] && grep -q 'job $R1 cancelled' '$T/out' && [ ! -s '$T/err' ]"
R2=$("$CTL" retry -q chain 2>"$T/err"); RC=$?
wait_state "$R2" running
check "retry and show by that name take the newest of the chain" \
	bash -c "[ $RC = 0 ] && [ \"\$('$CTL' --json show chain | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[\"id\"], j[\"retry_of\"])')\" = '$R2 $R1' ]"
"$CTL" --json metrics chain >"$T/metrics" 2>"$T/err"; RC=$?
check "metrics by that name covers the whole chain" \
	bash -c "[ $RC = 0 ] && python3 -c '
import json, sys
got = sorted(j[\"job\"] for j in json.load(open(\"$T/metrics\"))[\"jobs\"])
assert got == sorted([\"$A\", \"$R1\", \"$R2\"]), got'"

# unrelated jobs of one name: still refused, nothing removed
U1=$("$CTL" submit -q --epochs 3 --width 16 --name twin "$T/a.png")
U2=$("$CTL" submit -q --epochs 3 --width 16 --name twin "$T/a.png")
"$CTL" rm -f twin >"$T/out" 2>"$T/err"; RC=$?
check "rm -f of a name two unrelated jobs have is refused (2), removing nothing" \
	bash -c "[ $RC = 2 ] && grep -q \"the name 'twin' is ambiguous: 2 jobs have it\" '$T/err' &&
		[ -d '$STATE/jobs/$U1' ] && [ -d '$STATE/jobs/$U2' ]"

"$CTL" rm -f chain >"$T/out" 2>"$T/err"; RC=$?
check "rm -f by the name removes the job and its retries, the running one cancelled first" \
	bash -c "[ $RC = 0 ] && [ ! -s '$T/err' ] && grep -q 'job $A removed' '$T/out' && grep -q 'job $R1 removed' '$T/out' &&
		grep -q 'job $R2 removed' '$T/out' && [ ! -e '$STATE/jobs/$A' ] && [ ! -e '$STATE/jobs/$R2' ] &&
		! '$CTL' list -q | grep -qxE '$A|$R1|$R2'"
stop_daemon
tap_done
