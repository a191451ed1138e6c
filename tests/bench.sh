#!/bin/bash
# bench.sh BUILD - the benchmark behind `make bench`: fits the standard
# cases and prints, per case, vkinrd's median and mean ms per epoch, per-pass GPU
# time, achieved TFLOP/s, device memory and PSNR, next to the PyTorch peer
# on the same device when the peer can run (side by side, in one run).
#
#   CASES   which cases (default: "small" on a CPU device, "512 1080p" on
#           a GPU): small = 128x128 at width 64; 512 = 512x512 at width
#           512; 1080p = 1920x1080 at width 512 under a 4 GiB budget
#   EPOCHS  epochs per case (default 300 on a GPU, 100 on a CPU)
#   PEER    path of torch_convsiren.py (default ../shared/peer/...);
#           PEER_PYTHON the interpreter with torch (default python3)
#   PEER_MODES  peer modes to run (default "fp32 tf32" on CUDA, "fp32")
#   IMAGE   a PNG to fit in the 512 case instead of the generated sample
#           (a real photo, cropped to 512x512); IMAGE_1080P likewise
#   PRECISIONS  vkinrd's --precision values to run (default "auto"; on a
#           GPU with tensor cores "fp32 fp16" compares both)
#   VKINR_GEMM=NAME  forces a GEMM family (daemon/nn/gemm.c),
#           VKINR_PASSES=cpu|gpu the family of passes (daemon/nn/variants.c)
#
# Output: one JSON object a line ({"case",...,"impl":"vkinrd"|"pytorch"}),
# then a table. Both programs report the median of the epoch times after
# the first ten, and the mean: the training's wall time over its epochs.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
vkinrd=$build/vkinrd
mksample=$build/tools/mksample
peer=${PEER:-$root/../shared/peer/torch_convsiren.py}
python=${PEER_PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

is_cpu=$("$vkinrd" --devices --json | head -1 | grep -c '"type":"cpu"' || true)
if [ "$is_cpu" = 1 ]; then
	cases=${CASES:-small}
	epochs=${EPOCHS:-100}
	peer_device=cpu
else
	cases=${CASES:-512 1080p}
	epochs=${EPOCHS:-300}
	peer_device=cuda
fi
have_peer=0
if [ -f "$peer" ] && "$python" -c 'import torch, PIL, numpy' 2>/dev/null; then
	have_peer=1
	if [ "$peer_device" = cuda ] && ! "$python" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
		peer_device=cpu
	fi
fi
modes=${PEER_MODES:-$([ "$peer_device" = cuda ] && echo "fp32 tf32" || echo fp32)}

results=$work/results
: > "$results"
for c in $cases; do
	budget=()
	case $c in
	small) w=128 h=128 nf=64 ;;
	512) w=512 h=512 nf=512 ;;
	1080p) w=1920 h=1080 nf=512 budget=(--mem-budget 4096) ;;
	*) echo "bench: unknown case $c" >&2; exit 2 ;;
	esac
	img=$work/$c.png
	case $c in
	512) given=${IMAGE:-} ;;
	1080p) given=${IMAGE_1080P:-} ;;
	*) given= ;;
	esac
	if [ -n "$given" ]; then cp "$given" "$img"; else "$mksample" "$img" $w $h 1; fi
	for p in ${PRECISIONS:-auto}; do
		line=$("$vkinrd" --fit "$img" --yes --epochs "$epochs" --width $nf --schedule constant \
			--precision "$p" --json --timings -q "${budget[@]}" | tail -1)
		echo "{\"case\":\"$c\",\"impl\":\"vkinrd\",${line#\{}" | tee -a "$results"
	done
	if [ $have_peer = 1 ]; then
		for m in $modes; do
			# on the CPU the peer gets every core, as a user would run it
			threads=()
			[ "$peer_device" = cpu ] && threads=(--threads "$(nproc)")
			r=$("$python" "$peer" --image "$img" --nf $nf --epochs "$epochs" \
				--mode "$m" --device "$peer_device" --log-every "$epochs" \
				"${threads[@]}" |
				sed -n 's/^RESULT //p')
			echo "{\"case\":\"$c\",${r#\{}" | tee -a "$results"
		done
	fi
done

python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print()
# the mean: the training's wall time over its epochs (vkinrd), the whole
# run's over its epochs (the peer: its total_s); what a user waits for
def mean_ms(r):
    if r["impl"] == "vkinrd":
        return r.get("ms_per_epoch_mean", 0)
    return 1e3 * r.get("total_s", 0) / max(r.get("epochs", 1), 1)
print(f"{'case':7} {'impl':16} {'median ms':>9} {'mean ms':>8} {'PSNR':>7} {'mem MiB':>8} {'TFLOP/s':>8}")
for r in rows:
    if r["impl"] == "vkinrd":
        name, ms, psnr = "vkinrd " + r["precision"], r["ms_per_epoch_median"], r["psnr"]
        mem, tf = r["peak_device_bytes"] / 2**20, r["tflops"]
        base = ms
    else:
        name, ms, psnr = "pytorch " + r["mode"], r["ms_per_epoch_median"], r["final_psnr"]
        mem, tf = r.get("peak_mem_mb") or 0, 0
    print(f"{r['case']:7} {name:16} {ms:9.2f} {mean_ms(r):8.2f} {psnr:7.2f} {mem:8.0f} {tf:8.2f}")
vks = [r for r in rows if r["impl"] == "vkinrd"]
for r in rows:
    if r["impl"] == "pytorch":
        for v in vks:
            if v["case"] == r["case"]:
                print(f"{r['case']}: pytorch {r['mode']} / vkinrd {v['precision']} time ratio "
                      f"{r['ms_per_epoch_median'] / v['ms_per_epoch_median']:.2f}x (medians), "
                      f"{mean_ms(r) / max(mean_ms(v), 1e-9):.2f}x (means)")
for v in vks:
    if "pass_ms" in v:
        print(f"{v['case']} {v['precision']}: {v['tiles']} tile(s), halo {100 * v['halo_overhead']:.1f}%, "
              "per-pass GPU ms: " + ", ".join(f"{k} {x:.2f}" for k, x in v["pass_ms"].items()))
        print(f"  GB/s of the passes that are not GEMMs (the fewest bytes each must move): " +
              ", ".join(f"{k} {x:.0f}" for k, x in v.get("pass_gbps", {}).items()))
PY
