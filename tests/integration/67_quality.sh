#!/bin/bash
# 67_quality.sh - the default recipe earns its place: on a real photograph
# (Debian's plasma-workspace-wallpapers, 64x64) at width 32, after 300
# epochs, it must be at least 1 dB above Adam at a constant rate (1e-3,
# the best constant rate measured; 1e-4 is ~10 dB lower still). Runs the
# two fits through tests/bench_quality.py, side by side. The sanitizer
# build skips it (the same arithmetic, ten times slower).
# make check-slow runs it, not make check: two 300-epoch fits of a photograph.
# run.sh: slow
. "$(dirname "$0")/lib.bash"
tap_plan 1
need_device
if [ -n "${VKINR_SANITIZED:-}" ]; then
	echo "ok 1 # SKIP the quality comparison runs on the normal build"
	exit 0
fi
if [ ! -d /usr/share/wallpapers/FallenLeaf ]; then
	echo "ok 1 # SKIP no plasma-workspace-wallpapers (make deps installs it)"
	exit 0
fi
python3 "$ROOT/tests/bench_quality.py" --vkinrd "$VKINRD" --widths 32 \
	--epochs 300 --size 64 --images FallenLeaf \
	--recipes default,adam-const-1e-3 --jobs 2 --json "$T/runs.json" \
	>"$T/table.txt" 2>&1
python3 - "$T/runs.json" "$T/table.txt" <<'PY'
import json, sys
runs = {r["recipe"]: r["curve"] for r in map(json.loads, open(sys.argv[1]))}
def final(name):
    return runs[name][-1][2] if name in runs else float("nan")
d, a = final("default"), final("adam-const-1e-3")
ok = d >= a + 1.0
print(("ok" if ok else "not ok") + " 1 - default recipe %.2f dB, Adam at a "
      "constant 1e-3 %.2f dB: %+.2f dB (at least +1)" % (d, a, d - a))
if not ok:
    print("".join("#   " + l for l in open(sys.argv[2])))
sys.exit(0 if ok else 1)
PY
