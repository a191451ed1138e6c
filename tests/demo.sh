#!/bin/bash
# demo.sh BUILD - the README's first command: fits a generated sample image
# with vkinrd on the preferred Vulkan device (lavapipe, the CPU, when there
# is no GPU) and shows the target next to the reconstruction.
#   DEMO_SIZE (default 96 on a CPU device, 512 on a GPU), DEMO_EPOCHS
#   (default 800 on a CPU device: about two minutes on 2 cores; 2000 on a
#   GPU), DEMO_OUT (default out/).
# The demo's folder is its own: a second `make demo` replaces what the
# first left there (--force), where vkinrd would otherwise refuse it.
set -euo pipefail
build=${1:-build}
out=${DEMO_OUT:-out}
mkdir -p "$out"
"$build/vkinrd" --devices
if "$build/vkinrd" --devices --json | head -1 | grep -q '"type":"cpu"'; then
	size=${DEMO_SIZE:-96} epochs=${DEMO_EPOCHS:-800} width=(--width 32)
else
	size=${DEMO_SIZE:-512} epochs=${DEMO_EPOCHS:-2000} width=()
fi
"$build/tools/mksample" "$out/sample.png" "$size" "$size" 1
echo "fitting $out/sample.png (${size}x${size}), $epochs epochs"
"$build/vkinrd" --fit "$out/sample.png" --epochs "$epochs" --lr 1e-3 "${width[@]}" \
	--force --model "$out/sample.safetensors" --recon "$out/recon.png"
echo
echo "target (left) and vkinrd's reconstruction (right):"
"$build/tools/pngshow" -w 48 "$out/sample.png" "$out/recon.png"
echo "model package: $out/sample.safetensors   reconstruction: $out/recon.png"
