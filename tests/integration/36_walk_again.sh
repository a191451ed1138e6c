#!/bin/bash
# 36_walk_again.sh - what the last walk through the README on a fresh
# clone hit (issue 36, "how to know it is done"), each as the user typed it:
#   - `make demo` a second time was refused (exit 3: out/sample.safetensors
#     exists): the demo now replaces its own folder's files, and runs twice;
#   - the README's `vkinrd --fit -r photos/ --out fitted/` took -r for the
#     image ("cannot read -r") and fitted the top folder alone: a flag
#     typed right after --fit is now taken as the flag, so the line, read
#     from README.md, leaves fitted/2024/beach.png; another option there is
#     refused with a sentence, not taken for a file;
#   - after `export BATCH --dir photos/` (which the README calls safe),
#     `submit photos/` again fitted the NAME.recon.png reconstructions as
#     new images: a folder's .recon.png files are now left out, each named
#     with the reason, by submit and by vkinrd --fit DIR alike (a file
#     named alone is still taken);
#   - python/vkinr.py -o photo.jpg replaced the photo: it now refuses a
#     file that exists (exit 3, untouched) unless --force, and its PNG,
#     written without PIL, is vkinrctl infer's within a step of 255;
#   - man/vkinrctl.1 used a glyph groff does not know (the ellipsis of
#     watch's example, now in vkinrctl-jobs.1): every page in man/
#     renders without such warnings;
#   - ^C of `vkinrd --fit photo --max-side N` said "continue with
#     --resume CKPT", which, typed with the photo, was refused (the
#     checkpoint is for the scaled size): the hint is now the whole
#     command, the scaling included, and it runs as printed;
#   - vkinrd --fit wrote its model package 0600 beside a 0644 PNG, where
#     vkinrctl export and --fit-task write 0644: now as they do;
#   - the CPU estimate's --max-side hint said "about 2 s an epoch" for a
#     run of 3000 epochs, 1.5 h, without saying so: it gives the run's
#     time at that size too.
. "$(dirname "$0")/lib.bash"
tap_plan 11
need_device
CTL=$BUILD/vkinrctl

# the demo twice, small and short
for run in 1 2; do
	DEMO_SIZE=16 DEMO_EPOCHS=2 DEMO_OUT=$T/demo "$ROOT/tests/demo.sh" "$BUILD" \
		>"$T/demo$run.out" 2>&1
	echo "rc=$?" >>"$T/demo$run.out"
done
check "make demo runs a second time over its own folder (exit 0 twice)" \
	bash -c "grep -q '^rc=0$' '$T/demo1.out' && grep -q '^rc=0$' '$T/demo2.out' &&
		[ -s '$T/demo/sample.safetensors' ]"

# the README's -r line, as written (fewer epochs, a small width)
mkdir -p "$T/walk/photos/2024"
"$MKSAMPLE" "$T/walk/photos/top.png" 12 12 1 >/dev/null
"$MKSAMPLE" "$T/walk/photos/2024/beach.png" 12 12 2 >/dev/null
LINE=$(grep -E '^    build/vkinrd --fit -r ' "$ROOT/README.md" | sed -e 's/^    //' -e 's/ *#.*//' \
	-e "s|^build/|$BUILD/|")
(cd "$T/walk" && $LINE --epochs 2 --width 16 -q) >"$T/r.out" 2>&1
echo "rc=$?" >>"$T/r.out"
check "the README's 'vkinrd --fit -r photos/ --out fitted/' descends (fitted/2024/beach.png)" \
	bash -c "[ -n '$LINE' ] && grep -q '^rc=0$' '$T/r.out' && [ -s '$T/walk/fitted/2024/beach.png' ] &&
		[ -s '$T/walk/fitted/top.png' ] && ! grep -q 'cannot read' '$T/r.out'"
"$VKINRD" --fit --epochs 2 "$T/walk/photos/top.png" >"$T/e.out" 2>&1
echo "rc=$?" >>"$T/e.out"
check "an option with a value right after --fit is refused with a sentence (exit 2)" \
	bash -c "grep -q '^rc=2$' '$T/e.out' && grep -q 'takes the image or folder first, not --epochs' '$T/e.out'"

(cd "$T/walk" && umask 022 && "$VKINRD" --fit photos/top.png --epochs 1 --width 16 -q \
	--model m.safetensors --recon m.png)
check "vkinrd --fit's model package is 0644 under umask 022, as its PNG and export's" \
	bash -c "[ \$(stat -c %a '$T/walk/m.safetensors') = 644 ] && [ \$(stat -c %a '$T/walk/m.png') = 644 ]"

if "$VKINRD" --devices --json | head -1 | grep -q '"type":"cpu"'; then
	"$MKSAMPLE" "$T/walk/huge.png" 1600 1200 4 >/dev/null
	"$VKINRD" --fit "$T/walk/huge.png" --epochs 3000 >"$T/cost.out" 2>&1
else
	echo "no CPU device: the estimate is not made" >"$T/cost.out"
fi
grep -q "no CPU device" "$T/cost.out" && skip "a GPU device: no CPU estimate" ||
check "the CPU estimate's --max-side hint gives the run's time at that size" \
	python3 -c 'import re, sys
m = re.search(r"--max-side \d+ takes about (\d+) s an epoch \(([\d.]+) (s|min|h) for the 3000\)",
              open(sys.argv[1]).read())
unit = {"s": 1, "min": 60, "h": 3600}
sys.exit(not m or abs(float(m.group(2)) * unit[m.group(3)] / 3000 - float(m.group(1))) > 1)' "$T/cost.out"

# ^C of a scaled fit, then its hint typed as printed
"$MKSAMPLE" "$T/walk/big.png" 40 30 3 >/dev/null
(cd "$T/walk" && exec "$VKINRD" --fit big.png --max-side 16 --width 16 --epochs 100000 \
	--json >int.json 2>int.err) &
PID=$!
for _ in $(seq 1 300); do [ "$(wc -l <"$T/walk/int.json" 2>/dev/null)" -ge 5 ] && break; sleep 0.1; done
kill -INT $PID
wait $PID
HINT=$(sed -n 's/.*(continue with \(vkinrd --fit .*\))$/\1/p' "$T/walk/int.err")
LAST=$(tail -1 "$T/walk/int.json" | sed -n 's/^{"epoch":\([0-9]*\),.*/\1/p')
(cd "$T/walk" && ${HINT/#vkinrd/$VKINRD} --stop-after $((LAST + 2)) -q) >"$T/hint.out" 2>&1
echo "rc=$?" >>"$T/hint.out"
check "^C of a --max-side fit: the hint is the whole command, and it resumes as printed" \
	bash -c "[ '$HINT' = 'vkinrd --fit big.png --resume big.checkpoint.safetensors --max-side 16' ] &&
		grep -q '^rc=0$' '$T/hint.out'"

start_daemon || { echo "not ok 7 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
mkdir "$T/photos"
"$MKSAMPLE" "$T/photos/a.png" 16 16 1 >/dev/null
"$MKSAMPLE" "$T/photos/b.png" 16 16 2 >/dev/null
B=$("$CTL" submit -q --epochs 3 --width 16 "$T/photos" | sed -n 's/^batch //p')
"$CTL" wait "$B" >/dev/null 2>&1
"$CTL" export "$B" --dir "$T/photos" >/dev/null 2>&1
"$CTL" submit -q --epochs 3 --width 16 "$T/photos" >"$T/again.out" 2>"$T/again.err"
check "submit of a folder exported into leaves its NAME.recon.png out, named (2 jobs, not 4)" \
	bash -c "[ -s '$T/photos/a.recon.png' ] && [ \$(grep -cv '^batch' '$T/again.out') = 2 ] &&
		grep -q 'a.recon.png: an export.s reconstruction' '$T/again.err' &&
		grep -q 'b.recon.png: an export.s reconstruction' '$T/again.err'"
"$VKINRD" --fit "$T/photos" --out "$T/fg" --epochs 1 --width 16 -q >"$T/fg.out" 2>&1
check "vkinrd --fit DIR leaves them out too, and a .recon.png named alone is taken" \
	bash -c "[ \"\$(ls '$T/fg')\" = \"\$(printf 'a.png\na.safetensors\nb.png\nb.safetensors')\" ] &&
		grep -q 'a.recon.png: left out: an export.s reconstruction' '$T/fg.out' &&
		'$CTL' submit -q --epochs 1 --width 16 '$T/photos/a.recon.png' >/dev/null"

# vkinr.py: no clobber, and the same PNG as infer's
if /usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null; then
	PY=/usr/bin/python3
	M=$T/photos/a.safetensors
	"$CTL" infer "$M" -o "$T/infer.png" >/dev/null 2>&1
	cp "$T/photos/a.png" "$T/photo.png"
	$PY "$ROOT/python/vkinr.py" "$M" -o "$T/photo.png" >"$T/py.out" 2>&1
	echo "rc=$?" >>"$T/py.out"
	check "vkinr.py -o FILE that exists: refused (exit 3), the file untouched" \
		bash -c "grep -q '^rc=3$' '$T/py.out' && grep -q 'exists already; add --force' '$T/py.out' &&
			cmp -s '$T/photo.png' '$T/photos/a.png'"
	$PY "$ROOT/python/vkinr.py" "$M" -o "$T/photo.png" --force >/dev/null 2>&1
	check "vkinr.py --force replaces it with infer's picture, within a step of 255 (written without PIL)" \
		$PY -c 'import sys, numpy as np
from PIL import Image
a = np.asarray(Image.open(sys.argv[1]).convert("RGB")).astype(int)
b = np.asarray(Image.open(sys.argv[2]).convert("RGB")).astype(int)
sys.exit(not (a.shape == b.shape and np.abs(a - b).max() <= 1))' "$T/photo.png" "$T/infer.png"
else
	skip "python3-numpy and python3-pil (tests/deps.sh)"
	skip "python3-numpy and python3-pil (tests/deps.sh)"
fi
stop_daemon

if command -v man >/dev/null && command -v groff >/dev/null; then
	for m in "$ROOT"/man/*.[1-8]; do
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null |
			grep -v 'cannot adjust line\|cannot break line'
	done >"$T/man.err"
	check "the man pages render without unknown glyphs or other groff warnings" \
		bash -c "! [ -s '$T/man.err' ] || { cat '$T/man.err'; false; }"
else
	skip "man and groff are not installed"
fi
tap_done
