#!/bin/bash
# 31_write_below.sh - what the daemon's --log and `vkinrd --fit ... --out`
# write is not placed by another user through a folder above the one
# named (issue 31, item 2). As root, with the user nobody (skipped
# otherwise): a folder of root's own inside a folder that nobody owns
# could be swapped by nobody for a link to any of root's folders
# (/etc/cron.d...), so it is refused, naming the folder above:
#   - --log THEIRS/logs/d.log and --fit --out THEIRS/out, with logs and
#     out root's own: refused, nothing written, no socket made;
#   - the same through a link of root's own that points into THEIRS;
#   - a link of nobody's in the path (in a folder of root's own that
#     others can write to) is refused for that link, never followed;
#   - a relative path from a working folder inside THEIRS is refused too;
#   - what stays fine: a link of root's own to a folder of root's, a
#     folder of one's own below a sticky one (/tmp-like), and for nobody
#     a folder of its own below one it may only search (mode 0711: the
#     walk needs no read permission on the folders above).
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	for i in $(seq 1 8); do echo "ok $i # SKIP another user's folders need root (setpriv --reuid=nobody)"; done
	trap - EXIT; rm -rf "$T"; exit 0
fi
# nobody cannot write root's shader cache (HOME stays /root), so lavapipe
# would compile every pipeline again for each of its fits: 5 s a fit, 16
# under ASan. It gets a copy of root's cache, its own to write in.
NCACHE=$T/nobody-cache
ROOT_CACHE=${MESA_SHADER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}}/mesa_shader_cache
mkdir -p "$NCACHE/mesa_shader_cache"
[ -d "$ROOT_CACHE" ] && cp -r "$ROOT_CACHE/." "$NCACHE/mesa_shader_cache/" 2>/dev/null
chown -R nobody "$NCACHE"
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups
	env -u MESA_SHADER_CACHE_DIR XDG_CACHE_HOME="$NCACHE")
cd "$T" || exit 1
chmod 0711 "$T"
mkdir in && "$MKSAMPLE" in/a.png 16 16 3 >/dev/null
mkdir -p theirs && chown nobody theirs && mkdir theirs/logs theirs/out
mkdir mine && ln -s "$T/theirs/logs" rootlink && ln -s "$T/mine" minelink

# a daemon started with --log $1: refused (exit 1) naming $2, no socket
log_refused() {
	timeout 30 "$VKINRD" --socket "$T/lsock" --state-dir "$T/lstate" --log "$1" 2>err
	local rc=$?
	cat err
	[ $rc = 1 ] && grep -q "cannot open the log file: .*$2" err && [ ! -e "$T/lsock" ] &&
		[ -z "$(ls theirs/logs)" ]
}
check "--log in a folder of one's own inside another user's: refused, naming it" \
	log_refused "$T/theirs/logs/d.log" "$T/theirs above it belongs to another user"
check "--log through a link of one's own into another user's folder: refused" \
	log_refused "$T/rootlink/d.log" "$T/theirs above it belongs to another user"

fit_refused() {
	"$VKINRD" --fit in/a.png --out "$1" --width 16 --epochs 3 -q 2>err
	local rc=$?
	cat err
	[ $rc = 3 ] && grep -q "refusing to write in .*$2" err && [ -z "$(ls theirs/out)" ]
}
check "--fit --out inside another user's folder: refused (exit 3), nothing written" \
	fit_refused theirs/out "theirs above it belongs to another user"

link_of_theirs() {
	mkdir -p open && chmod 0777 open && "${AS_NOBODY[@]}" ln -s "$T/mine" open/l &&
		fit_refused open/l "the link $T/open/l belongs to another user" && [ -z "$(ls mine)" ]
}
check "a link of another user's along the path is refused, never followed" link_of_theirs

from_inside() {
	(cd theirs/out && "$VKINRD" --fit "$T/in/a.png" --out . --width 16 --epochs 3 -q 2>"$T/err")
	local rc=$?
	cat err
	[ $rc = 3 ] && grep -q "$T/theirs above it belongs to another user" err && [ -z "$(ls theirs/out)" ]
}
check "a relative --out from a working folder inside another user's: refused" from_inside

check "a link of one's own to a folder of one's own is fine" bash -c '
	"'$VKINRD'" --fit in/a.png --out minelink --width 16 --epochs 3 -q && [ -s mine/a.png ] &&
	[ -s mine/a.safetensors ]'
check "a folder of one's own below a sticky one (/tmp-like) is fine, --log too" bash -c '
	mkdir -p drop/me && chmod 1777 drop &&
	"'$VKINRD'" --fit in/a.png --out drop/me --width 16 --epochs 3 -q && [ -s drop/me/a.png ] &&
	{ timeout 20 "'$VKINRD'" --socket "'$T'/dsock" --state-dir "'$T'/dstate" --log drop/me/d.log & p=$!; } &&
	for _ in $(seq 200); do grep -q "ready on" drop/me/d.log 2>/dev/null && break; sleep 0.1; done
	kill $p; wait $p; grep -q "ready on" drop/me/d.log'
check "nobody writes in a folder of its own below one it may only search (0711)" bash -c '
	mkdir nob && chown nobody nob && cd nob &&
	'"${AS_NOBODY[*]}"' "'$VKINRD'" --fit "'$T'/in/a.png" --out "'$T'/nob/out" --width 16 --epochs 3 -q &&
	'"${AS_NOBODY[*]}"' "'$VKINRD'" --fit "'$T'/in/a.png" --out rel --width 16 --epochs 3 -q &&
	[ -s out/a.png ] && [ -s rel/a.safetensors ]'
tap_done
