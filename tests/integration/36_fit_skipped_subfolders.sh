#!/bin/bash
# 36_fit_skipped_subfolders.sh - `vkinrd --fit DIR` without -r fits the
# folder's own images and says on stderr which subfolders it passed by
# (how many, the first by name) and that -r descends into them; hidden
# folders are not counted, -r fits them and says nothing of the kind, and
# a folder whose images all sit in subfolders fails with both sentences.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
mkdir -p "$T/photos/2025" "$T/photos/2024" "$T/photos/2026" "$T/photos/2023" "$T/photos/2027" "$T/photos/.trash" "$T/only/a"
"$MKSAMPLE" "$T/photos/top.png" 16 16 1 >/dev/null
"$MKSAMPLE" "$T/photos/2024/beach.png" 16 16 2 >/dev/null
"$MKSAMPLE" "$T/photos/2025/snow.png" 16 16 3 >/dev/null
"$MKSAMPLE" "$T/only/a/x.png" 16 16 4 >/dev/null
FIT="--epochs 2 --width 16 -q"

"$VKINRD" --fit "$T/photos" --out "$T/o1" $FIT >"$T/out" 2>"$T/err"; RC=$?
check "without -r: the top's image fitted, the five subfolders counted, the first named, -r named" \
	bash -c "[ $RC = 0 ] && [ -s '$T/o1/top.png' ] && [ ! -e '$T/o1/2024' ] &&
		grep -qF '$T/photos: skipped 5 subfolders (2023, ...): -r descends into them' '$T/err' &&
		! grep -q trash '$T/err'"
"$VKINRD" --fit "$T/photos" -r --out "$T/o2" $FIT >"$T/out" 2>"$T/err"; RC=$?
check "with -r: every image, no such sentence" \
	bash -c "[ $RC = 0 ] && [ -s '$T/o2/2024/beach.png' ] && [ -s '$T/o2/2025/snow.png' ] && ! grep -q skipped '$T/err'"
"$VKINRD" --fit "$T/only" --out "$T/o3" $FIT >"$T/out" 2>"$T/err"; RC=$?
check "a folder with images in its subfolder only: refused, saying it skipped one and that -r searches" \
	bash -c "[ $RC = 1 ] && grep -qF 'skipped 1 subfolder (a): -r descends into them' '$T/err' &&
		grep -q 'no .png, .jpg, .jpeg or .webp image to fit (-r searches subfolders too)' '$T/err'"
tap_done
