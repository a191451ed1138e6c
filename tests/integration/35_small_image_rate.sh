#!/bin/bash
# 35_small_image_rate.sh - a tiny image does not stall, and a longer job
# ends at least as high as a shorter one. Debian's Path wallpaper scaled
# to 24x15 at width 32: with the width's rate alone (6e-3) the live PSNR
# reached about 27 dB by epoch 13 and then stayed at 21-35 dB, so the fit
# ended at 34.9 dB after 300 epochs and 30.5 after 1000 (the average of
# epoch 20); with the rate scaled to the image's size (nn_lr_pixel_scale)
# the same fits end at 57.3 and 70.4 dB on lavapipe. The sanitizer build
# (VKINR_SANITIZED) fits the 300 epochs alone: the figures are the normal
# build's, and what it adds is the memory checks of the same path.
# run.sh: long
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
PATH_JPG=/usr/share/wallpapers/Path/contents/images/2560x1600.jpg
if [ ! -f "$PATH_JPG" ]; then
	skip "no plasma-workspace-wallpapers (make deps installs it)"
	skip "no plasma-workspace-wallpapers"
	exit 0
fi

fit() { # EPOCHS: the summary's PSNR
	"$VKINRD" --fit "$PATH_JPG" --max-side 24 --width 32 --epochs "$1" \
		--json -q -y 2>/dev/null |
		python3 -c 'import json, sys
print([r for r in map(json.loads, sys.stdin) if r.get("done")][0]["psnr"])'
}
short=$(fit 300)
check "a 24x15 photo reaches 45 dB in 300 epochs ($short dB)" \
	python3 -c "import sys; sys.exit(not float('$short') >= 45)"
if [ -n "${VKINR_SANITIZED:-}" ]; then
	skip "the 1000 epochs: in the normal build"
	tap_done
	exit 0
fi
long=$(fit 1000)
echo "# 300 epochs: $short dB, 1000 epochs: $long dB"
check "1000 epochs end at least as high as 300 ($long >= $short dB)" \
	python3 -c "import sys; sys.exit(not float('$long') >= float('$short'))"
tap_done
