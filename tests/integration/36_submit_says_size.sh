#!/bin/bash
# 36_submit_says_size.sh - `vkinrctl submit --max-side N` (and --resize)
# says at submission the size each photo is fitted at (found on the walk
# through the README: only `logs` showed it). A 200x150 photo with
# --max-side 64: its line ends "fitted at 64x48"; with --json each of
# jobs[] has its width and height (job.submit's answer now carries the
# kept size as "image"); -q prints the id alone; without a resize the line is
# as before.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
CTL=$BUILD/vkinrctl
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
"$MKSAMPLE" "$T/photo.png" 200 150 3 >/dev/null
"$MKSAMPLE" "$T/small.png" 20 10 3 >/dev/null
"$CTL" submit --max-side 64 --epochs 1 --width 16 "$T/photo.png" >"$T/o1" 2>&1
check "--max-side 64: the job's line says 'fitted at 64x48'" \
	eval "cat '$T/o1'; grep -q '^job [0-9]* submitted: $T/photo.png (name photo), fitted at 64x48\$' '$T/o1'"
"$CTL" --json submit --resize 40x30 --epochs 1 --width 16 "$T/photo.png" >"$T/o2" 2>&1
check "--json --resize 40x30: jobs[] has width 40, height 30" \
	python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))
j = o["jobs"][0]
assert (j["width"], j["height"]) == (40, 30), o' "$T/o2"
"$CTL" submit -q --max-side 64 --epochs 1 --width 16 "$T/photo.png" >"$T/o3" 2>"$T/e3"
check "-q: the id alone on stdout, nothing on stderr" \
	eval "cat '$T/o3' '$T/e3'; grep -qx '[0-9][0-9]*' '$T/o3' && [ \$(wc -l <'$T/o3') = 1 ] && [ ! -s '$T/e3' ]"
"$CTL" submit --epochs 1 --width 16 "$T/small.png" >"$T/o4" 2>&1
check "without a resize the line is as before" \
	eval "cat '$T/o4'; grep -q '^job [0-9]* submitted: $T/small.png (name small)\$' '$T/o4'"
stop_daemon
tap_done
