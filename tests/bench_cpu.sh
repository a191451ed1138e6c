#!/bin/bash
# bench_cpu.sh BUILD - the CPU device (lavapipe) against the PyTorch peer on
# the same cores, behind `make bench-cpu`. Both fit the same 128x128 image
# at width 64 with the peer's recipe (Adam at a constant rate, MSE alone,
# no averaged weights), one after the other, ROUNDS times alternating, so
# that both see the same load; each run reports the median epoch time after
# its first ten epochs, and the summary gives, per program, the median of
# those over the rounds and the ratio vkinrd / PyTorch of the medians (and
# the median of the per-round ratios). The cores are shared with whatever
# else runs: compare on a quiet machine, and read the per-round ratios.
#
#   ROUNDS  alternations (default 5)        EPOCHS  epochs a run (default 30)
#   WIDTH   network width (default 64)      SIZE    image side (default 128)
#   IMAGE   a PNG to fit instead of the generated sample (SIZE is then
#           the image's own)
#   GEMMS   vkinrd GEMM families to run side by side (VKINR_GEMM; default
#           "auto", the engine's choice; e.g. "small auto" adds the 64x64
#           tiles that CPU devices ran before the "cpu" family)
#   PEER    path of the PyTorch peer, torch_convsiren.py (without it,
#           vkinrd alone); PEER_PYTHON the interpreter with torch (default python3);
#           THREADS the peer's threads (default every core, as a user
#           would run it)
#   TIMINGS=1  also prints vkinrd's per-pass times of every run
set -euo pipefail
build=${1:-build}
vkinrd=$build/vkinrd
peer=${PEER:-}
python=${PEER_PYTHON:-python3}
rounds=${ROUNDS:-5}
epochs=${EPOCHS:-30}
width=${WIDTH:-64}
size=${SIZE:-128}
threads=${THREADS:-$(nproc)}
gemms=${GEMMS:-auto}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

img=$work/img.png
if [ -n "${IMAGE:-}" ]; then cp "$IMAGE" "$img"; else "$build/tools/mksample" "$img" "$size" "$size" 1; fi
have_peer=0
if [ -n "$peer" ] && [ -f "$peer" ] && "$python" -c 'import torch, PIL, numpy' 2>/dev/null; then
	have_peer=1
else
	echo "bench_cpu: no PyTorch peer (PEER=${peer:-unset} with $python): vkinrd alone" >&2
fi
lr=1e-4 # the peer's default, given to both
results=$work/results
: > "$results"
for r in $(seq 1 "$rounds"); do
	for gm in $gemms; do
		env=()
		[ "$gm" != auto ] && env=(VKINR_GEMM="$gm")
		line=$(env "${env[@]}" "$vkinrd" --fit "$img" --yes --epochs "$epochs" \
			--width "$width" --lr "$lr" --optimizer adam --schedule constant \
			--warmup 0 --average none --chroma 0 --json --timings -q | tail -1)
		echo "{\"round\":$r,\"impl\":\"vkinrd\",\"gemm\":\"$gm\",${line#\{}" >> "$results"
	done
	if [ $have_peer = 1 ]; then
		line=$("$python" "$peer" --image "$img" --nf "$width" \
			--epochs "$epochs" --lr "$lr" --device cpu --threads "$threads" \
			--log-every "$epochs" | sed -n 's/^RESULT //p')
		echo "{\"round\":$r,\"impl\":\"pytorch\",${line#\{}" >> "$results"
	fi
done

TIMINGS=${TIMINGS:-0} python3 - "$results" "$threads" <<'PY'
import json, os, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = st.median
def name(r):
    return "pytorch" if r["impl"] == "pytorch" else "vkinrd " + r["gemm"]
names = list(dict.fromkeys(name(r) for r in rows))
rounds = sorted({r["round"] for r in rows})
by = {(name(r), r["round"]): r for r in rows}
print(f"{'round':>5} " + " ".join(f"{n:>14}" for n in names) + "   (median ms/epoch)")
for k in rounds:
    print(f"{k:5} " + " ".join(f"{by[n, k]['ms_per_epoch_median']:14.1f}" if (n, k) in by
                               else f"{'-':>14}" for n in names))
meds = {n: med([by[n, k]["ms_per_epoch_median"] for k in rounds if (n, k) in by]) for n in names}
print("median " + " ".join(f"{meds[n]:13.1f}" for n in names))
if "pytorch" in meds:
    for n in names:
        if n == "pytorch":
            continue
        per = [by[n, k]["ms_per_epoch_median"] / by["pytorch", k]["ms_per_epoch_median"]
               for k in rounds if (n, k) in by and ("pytorch", k) in by]
        print(f"{n} / pytorch ({sys.argv[2]} threads): ratio of medians {meds[n] / meds['pytorch']:.2f}, "
              f"median of the rounds' ratios {med(per):.2f} "
              f"(rounds: {', '.join(f'{x:.2f}' for x in per)})")
for n in names:
    if n == "pytorch":
        continue
    passes = {}
    for k in rounds:
        for p, ms in by.get((n, k), {}).get("pass_ms", {}).items():
            passes.setdefault(p, []).append(ms)
    if passes:
        print(f"{n}: per-pass ms an epoch (median of the rounds): " +
              ", ".join(f"{p} {med(v):.1f}" for p, v in passes.items()))
    if os.environ.get("TIMINGS") == "1":
        for k in rounds:
            if (n, k) in by:
                print(f"  round {k}: " + json.dumps(by[n, k].get("pass_ms", {})))
PY
