#!/bin/bash
# 36_install_python.sh - `make install` puts python/vkinr.py, the loader
# the README names, in PREFIX/share/vkinrd/python (found on the walk: it
# installed the programs, the man pages, completions and units, but not
# the Python module, so an installed vkinrd had no loader outside a
# clone). The file lands there, the same bytes and executable; from that
# folder alone (a scratch copy of nothing else) it imports and renders a
# package as vkinrctl infer does, by PYTHONPATH and as a command.
. "$(dirname "$0")/lib.bash"
tap_plan 3
export PATH=/usr/bin:$PATH
P=$T/inst/opt/vk/share/vkinrd/python
make -s -C "$ROOT" install B="$BUILD" PREFIX=/opt/vk DESTDIR="$T/inst" \
	-o "$BUILD/vkinrd" -o "$BUILD/vkinrctl" >"$T/install.log" 2>&1
check "make install DESTDIR=...: PREFIX/share/vkinrd/python/vkinr.py, the same bytes, executable" \
	eval "cat '$T/install.log'; cmp '$ROOT/python/vkinr.py' '$P/vkinr.py' && [ -x '$P/vkinr.py' ]"
if ! python3 -c 'import numpy' 2>/dev/null || [ ! -x "$VKINRD" ] ||
	! "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
	skip "needs numpy and a Vulkan device"
	skip "needs numpy and a Vulkan device"
	tap_done
fi
"$MKSAMPLE" "$T/img.png" 12 8 2 >/dev/null
"$VKINRD" --fit "$T/img.png" --width 16 --epochs 2 -q \
	--model "$T/m.safetensors" --recon "$T/r.png" >/dev/null 2>&1
cd "$T" || exit 1
check "the installed module imports from its folder (PYTHONPATH) and loads a package" \
	env PYTHONPATH="$P" python3 -c 'import vkinr, sys
pkg = vkinr.load(sys.argv[1])
img = vkinr.render(pkg)
assert img.shape[:2] == (8, 12), img.shape' "$T/m.safetensors"
check "... and renders as a command" \
	eval "'$P/vkinr.py' '$T/m.safetensors' -o '$T/x2.png' --scale 2 && [ -s '$T/x2.png' ]"
tap_done
