#!/bin/bash
# 36_crop_render_size.sh - a --crop outside the render is refused with the
# render's size (found on the walk through the README: `infer MODEL
# --scale 8 --crop ...` past the edge said "(the model is 48x30)", where
# the render at --scale 8 is 384x240, so the numbers to correct the crop
# by were not there). A 16x10 model at --scale 8 renders 128x80: a crop
# of 20x10 at 120,0 runs past its right edge, and the sentence names
# 128x80; one inside it is rendered.
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
CTL=$BUILD/vkinrctl
"$MKSAMPLE" "$T/img.png" 16 10 4 >/dev/null
"$VKINRD" --fit "$T/img.png" --width 16 --epochs 2 -q \
	--model "$T/m.safetensors" --recon "$T/r.png" >/dev/null 2>&1 ||
	{ echo "not ok 1 - the fit"; exit 1; }
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
"$CTL" infer "$T/m.safetensors" -o "$T/out.png" --scale 8 \
	--crop 20x10+120+0 >"$T/o1" 2>"$T/e1"
rc=$?
check "outside the 128x80 render: refused, naming the render's size" \
	eval "sed 's/^/# /' '$T/e1'; [ $rc != 0 ] && grep -q 'within the render, 128x80' '$T/e1' && [ ! -e '$T/out.png' ]"
check "a crop inside it is rendered" \
	"$CTL" infer "$T/m.safetensors" -o "$T/in.png" --scale 8 --crop 20x10+100+70
stop_daemon
tap_done
