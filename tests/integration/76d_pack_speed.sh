#!/bin/bash
# 76d_pack_speed.sh - what a pack is for (issue 30): 16 jobs of 32x32 at
# width 16 (`vkinrd --fit DIR`) packed into one program against one at a
# time (--pack 1): the same models byte for byte, and the packed run's
# time beside the other's. The issue's target is twice as fast, which
# lavapipe does not reach yet: a packed pass reads its buffers through
# buffer references, and there each access costs more than a descriptor's
# (the packed run spends about 1.7x the CPU seconds of the other). On a
# 2-core machine shared with the other tests the ratio also moves with the
# load (0.8x to 1.3x), so the test prints it, with the CPU seconds of each
# run, and asserts the models alone.
# The sanitizer build (VKINR_SANITIZED) trains 10 epochs, not 40: the
# same pack of 16 with its memory checked, the ratio being the normal
# build's to print.
# run.sh: long
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device

EPOCHS=40
[ -n "${VKINR_SANITIZED:-}" ] && EPOCHS=10
mkdir "$T/in"
for i in $(seq 1 16); do "$MKSAMPLE" "$T/in/$i.png" 32 32 "$i" >/dev/null; done
fit() { # pack, out: the run's wall and CPU seconds on stdout
	local start end
	start=$(date +%s.%N)
	/usr/bin/time -f '%U %S' -o "$T/cpu.$1" "$VKINRD" --fit "$T/in" \
		--out "$T/$2" --width 16 --epochs "$EPOCHS" --pack "$1" -q >/dev/null
	end=$(date +%s.%N)
	echo "$start $end $(cat "$T/cpu.$1")"
}
alone=$(fit 1 alone)
packed=$(fit 16 packed)

EPOCHS=$EPOCHS run_py "$T" "$alone" "$packed" <<'EOF_PY'
import os, sys
from rpc import Tap
tap = Tap()
t = sys.argv[1]
def times(s):
    start, end, user, system = map(float, s.split())
    return end - start, user + system
alone, packed = times(sys.argv[2]), times(sys.argv[3])
names = sorted(f for f in os.listdir(os.path.join(t, "alone")) if f.endswith(".safetensors"))
same = [f for f in names
        if open(os.path.join(t, "alone", f), "rb").read() ==
        open(os.path.join(t, "packed", f), "rb").read()]
tap.ok(len(names) == 16, "16 models each way", names)
tap.ok(same == names, "packed, the same models byte for byte as one at a time",
       sorted(set(names) - set(same)))
ratio = alone[0] / packed[0]
print("# 16 jobs of 32x32, width 16, %s epochs: one at a time %.2f s (%.2f CPU s), "
      "packed %.2f s (%.2f CPU s): packed %.2fx as fast (the target: 2x)" %
      ((os.environ.get("EPOCHS", "40"),) + alone + packed + (ratio,)))
EOF_PY
