#!/bin/bash
# 38_queue_verbs.sh - the small queue verbs, through the real client and
# daemon: jobs named by their name wherever an id is taken (a name two
# jobs have is refused, listing both); `logs -f` prints events as they
# come and ends with the job; `rm -f` cancels and removes a running job
# (plain rm refuses it with a hint); `list -q` prints the ids alone and
# `--no-header` drops the header row of the table and the CSV.
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
"$MKSAMPLE" "$T/a.png" 16 16 >/dev/null

A=$("$CTL" submit -q --epochs 5 --width 16 --name alpha "$T/a.png")
"$CTL" wait alpha >/dev/null; RC=$?
check "wait by name" bash -c "[ $RC = 0 ] && '$CTL' --json show alpha | grep -q '\"id\":\"$A\"'"
check "logs and export by name" \
	bash -c "'$CTL' logs alpha | grep -q 'done at epoch 5' && '$CTL' export alpha --model '$T/m.safetensors' --recon '$T/r.png' >/dev/null && [ -s '$T/m.safetensors' ]"

B=$("$CTL" submit -q --epochs 5 --width 16 --name alpha "$T/a.png")
"$CTL" wait "$B" >/dev/null
"$CTL" show alpha >"$T/out" 2>"$T/err"; RC=$?
check "a name two jobs have is refused (2), listing both" \
	bash -c "[ $RC = 2 ] && [ ! -s '$T/out' ] && grep -q \"the name 'alpha' is ambiguous: 2 jobs have it: $A (done), $B (done)\" '$T/err'"
"$CTL" rm alpha >/dev/null 2>&1; RC=$?
check "rm of an ambiguous name removes nothing" \
	bash -c "[ $RC = 2 ] && [ -d '$STATE/jobs/$A' ] && [ -d '$STATE/jobs/$B' ]"

"$CTL" list -q >"$T/ids"
check "list -q: the ids alone, one a line" \
	bash -c "printf '%s\n' $A $B | cmp - '$T/ids'"
check "--no-header: no header row in the table or the CSV" \
	bash -c "[ \$('$CTL' list --no-header | wc -l) = 2 ] && ! '$CTL' list --no-header | grep -q '^ID' &&
		[ \$('$CTL' list --csv --no-header | wc -l) = 2 ] && '$CTL' list --csv --no-header | grep -q '^$A,alpha,'"

# logs -f: the events as they come, until the job ends
L=$("$CTL" submit -q --epochs 300 --width 16 --name follow-me "$T/a.png")
timeout 120 "$CTL" logs -f follow-me >"$T/follow"; RC=$?
check "logs -f follows until the job ends, then exits 0" \
	bash -c "[ $RC = 0 ] && grep -q 'submitted by' '$T/follow' && grep -q 'starting on' '$T/follow' &&
		tail -1 '$T/follow' | grep -q 'done at epoch 300' && [ \$(grep -c 'starting on' '$T/follow') = 1 ]"
check "logs -f --json: one object a line, with the job" \
	bash -c "timeout 60 '$CTL' --json logs -f $L | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
assert len(lines) >= 3 and all(l[\"job\"] == \"$L\" and \"time\" in l for l in lines), lines
assert lines[-1][\"text\"] == \"done at epoch 300\", lines'"

# rm of a running job: refused with a hint; rm -f cancels and removes
R=$("$CTL" submit -q --epochs 100000 --width 16 --name runner "$T/a.png")
for _ in $(seq 600); do "$CTL" --json show "$R" | grep -q '"state":"running"' && break; sleep 0.05; done
"$CTL" rm runner >"$T/out" 2>"$T/err"; RC=$?
check "rm of a running job is refused (3) with a hint to -f" \
	bash -c "[ $RC = 3 ] && grep -q 'rm -f cancels and removes' '$T/err' && [ -d '$STATE/jobs/$R' ]"
"$CTL" rm -f runner >"$T/out" 2>"$T/err"; RC=$?
check "rm -f cancels and removes it" \
	bash -c "[ $RC = 0 ] && grep -q 'job $R removed' '$T/out' && [ ! -e '$STATE/jobs/$R' ] && ! '$CTL' list -q | grep -qx '$R'"
stop_daemon
tap_done
