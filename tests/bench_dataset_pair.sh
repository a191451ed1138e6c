#!/bin/bash
# bench_dataset_pair.sh NEW BASE DATA32 DATA256 - the dataset figures of
# one run on a GPU, a build beside an earlier one (each folder holds
# vkinrd and vkinrctl), for tests/bench-h200/:
#   1. 1000 of 32x32 at width 32, 300 epochs, `vkinrd --fit DIR`: NEW,
#      BASE (tests/bench_dataset.sh, mode engine)
#   2. the same through the daemon (mode daemon): NEW, then BASE
#   3. fp16 throughout against auto (an fp32 finish) at 300 and 2000
#      epochs: 64 of 32x32 at width 32, 4 of 256x256 at width 128
#   4. the PyTorch peer, 256 at once (PEER, when set)
#   5. 64 of 256x256 at width 128, 300 epochs, NEW: --fit DIR and daemon
#   6. one 512x512 job at width 512 alone (the first of DATA512, when
#      set), 300 epochs: NEW, BASE, their median and mean epoch
# PARTS picks them (default "1 2 3 4"). Each part has its own time limit,
# so that one slow part leaves the rest.
set -u
new=$(cd "$1" && pwd) base=$(cd "$2" && pwd) d32=$3 d256=$4
here=$(cd "$(dirname "$0")" && pwd)
limit=${LIMIT:-170}
parts=" ${PARTS:-1 2 3 4} "
part() { [[ $parts == *" $1 "* ]]; }
bench() { timeout "$limit" "$here/bench_dataset.sh" "$@" || echo "(ended: $?)"; }

# a warm-up of each build, so that the driver's pipeline cache holds what
# each will compile: a fresh machine's first run pays for that otherwise
# (calls 42 and 43, tests/bench-h200/2026-12-02-third.md)
wt=$(mktemp -d)
files=("$d32"/*.png)
mkdir -p "$wt/in"
for f in "${files[@]:0:16}"; do ln -s "$(readlink -f "$f")" "$wt/in/"; done
for b in "$new" "$base"; do
	timeout "$limit" "$b/vkinrd" --fit "$wt/in" --out "$wt/out-$RANDOM" \
		--width 32 --epochs 30 -q >/dev/null 2>&1
done
rm -rf "$wt"
part 1 && echo "== 1. 1000 of 32x32, width 32, 300 epochs, vkinrd --fit"
part 1 && for b in "$new" "$base"; do
	echo "-- $b"
	DATA=$d32 N=${N32:-1000} SIZE=32 WIDTH=32 EPOCHS=300 MODES=engine bench "$b"
done
part 2 && echo "== 2. the same through the daemon"
part 2 && for b in "$new" "$base"; do
	echo "-- $b"
	DATA=$d32 N=${N32:-1000} SIZE=32 WIDTH=32 EPOCHS=300 MODES=daemon bench "$b"
done

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/s32" "$t/s256"
files=("$d32"/*.png)
for f in "${files[@]:0:64}"; do ln -s "$(readlink -f "$f")" "$t/s32/"; done
files=("$d256"/*.png)
for f in "${files[@]:0:4}"; do ln -s "$(readlink -f "$f")" "$t/s256/"; done
quality() { # folder width epochs precision
	timeout "$limit" "$new/vkinrd" --fit "$1" --out "$t/q-$2-$3-$4" \
		--width "$2" --epochs "$3" --precision "$4" --json -q |
		python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin if "\"images_per_s\"" in l][-1]
print("width %4s %5s epochs %-5s mean %.3f dB worst %.3f  %.1f s (precision change %.2f s)" % (
    sys.argv[1], sys.argv[2], sys.argv[3], r["mean_psnr"], r["worst_psnr"],
    r["seconds"], r.get("switch_s", 0)))' "$2" "$3" "$4"
}
part 3 && echo "== 3. fp16 throughout against auto"
part 3 && for e in 300 2000; do
	for p in fp16 auto; do quality "$t/s32" 32 $e $p; done
	for p in fp16 auto; do quality "$t/s256" 128 $e $p; done
done
if part 4 && [ -n "${PEER:-}" ]; then
	echo "== 4. the PyTorch peer, 256 at once"
	DATA=$d32 N=${N32:-1000} SIZE=32 WIDTH=32 EPOCHS=300 MODES=peer PEER_N=256 \
		bench "$new"
fi
if part 5; then
	echo "== 5. 64 of 256x256, width 128, 300 epochs"
	DATA=$d256 N=64 SIZE=256 WIDTH=128 EPOCHS=300 MODES="engine daemon" \
		bench "$new"
fi
if part 6 && [ -n "${DATA512:-}" ]; then
	echo "== 6. one 512x512 job, width 512, 300 epochs, alone"
	img=$(ls "$DATA512"/*.png | head -1)
	for b in "$new" "$base" "$new"; do
		timeout "$limit" "$b/vkinrd" --fit "$img" --epochs 300 --json |
			python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin]
ms = [r["ms"] for r in rows if "epoch" in r and "ms" in r]
end = rows[-1]
print("%-40s median %.2f ms  mean %.2f ms  PSNR %.2f" % (sys.argv[1],
      statistics.median(ms), sum(ms) / len(ms), end.get("psnr", 0)))' "$b"
	done
fi
