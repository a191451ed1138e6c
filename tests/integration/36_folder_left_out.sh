#!/bin/bash
# 36_folder_left_out.sh - a folder exported into is submitted again with
# one line for what it left out, not one a file (found on the walk through
# the README: `export BATCH --dir photos/` then `submit photos/` said
# "left out photos/X.safetensors: ..." once for every photo, a screenful
# for a real folder). Five photos fitted and exported into their folder:
# the next submit of it says the five .safetensors on one line (the count,
# the first two, that -v names each) and the five .recon.png on another,
# and submits the five photos; with -v each is named on its own line, as
# `submit --slurm -v` does too. Two of a reason are still named each.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
CTL=$BUILD/vkinrctl
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
mkdir -p "$T/photos" "$T/two"
for i in 1 2 3 4 5; do "$MKSAMPLE" "$T/photos/p$i.png" 8 8 "$i" >/dev/null; done
B=$("$CTL" submit -q --epochs 1 --width 16 "$T/photos" | sed -n 's/^batch //p')
"$CTL" wait "$B" >/dev/null 2>&1
"$CTL" export "$B" --dir "$T/photos" >/dev/null 2>&1
"$CTL" submit --epochs 1 --width 16 "$T/photos" >"$T/out" 2>"$T/err"
rc=$?
sed 's/^/# stderr: /' "$T/err"
check "after export --dir: one line for the five .safetensors, with the count and -v" \
	eval "[ \$(grep -c 'safetensors' '$T/err') = 1 ] &&
		grep -q 'left out 5 entries of $T/photos, not named .png.*: p1.safetensors, p2.safetensors and 3 more (-v names each)' '$T/err'"
check "... one for the five reconstructions, and the five photos submitted (exit 0)" \
	eval "[ $rc = 0 ] && [ \$(grep -c 'recon.png' '$T/err') = 1 ] &&
		grep -q 'left out 5 entries.*reconstruction' '$T/err' &&
		grep -q '5 jobs submitted' '$T/out'"
"$CTL" submit -v -q --epochs 1 --width 16 "$T/photos" >/dev/null 2>"$T/err.v"
check "with -v each entry left out is named on its own line" \
	eval "[ \$(grep -c '^vkinrctl: left out $T/photos/p[1-5].safetensors: not named' '$T/err.v') = 5 ] &&
		[ \$(grep -c 'recon.png: an export' '$T/err.v') = 5 ]"
"$CTL" submit --slurm --out "$T/dry" "$T/photos" --dry-run -v >/dev/null 2>"$T/err.s"
check "submit --slurm -v names each too" \
	eval "[ \$(grep -c 'p[1-5].safetensors: not named' '$T/err.s') = 5 ]"
"$MKSAMPLE" "$T/two/a.png" 8 8 1 >/dev/null
: >"$T/two/a.txt"; : >"$T/two/b.txt"
"$CTL" submit -q --epochs 1 --width 16 "$T/two" >/dev/null 2>"$T/err.2"
check "two of one reason are named each, no count" \
	eval "grep -q 'left out $T/two/a.txt: not named' '$T/err.2' &&
		grep -q 'left out $T/two/b.txt: not named' '$T/err.2' && ! grep -q entries '$T/err.2'"
stop_daemon
tap_done
