#!/bin/bash
# 31_task_below.sh - `vkinrd --fit-task MANIFEST --out OUT` checks the
# folders above OUT as the other front ends check theirs (issue 31, item
# 2; 31_write_below.sh checks --fit and --log). As root, with the user
# nobody (skipped otherwise):
#   - OUT of root's own inside a folder that nobody owns (who could swap
#     it for a link to any of root's folders): refused, exit 1, naming
#     the folder above, nothing written;
#   - a relative OUT from a working folder inside nobody's, and OUT
#     reached through a link of nobody's: refused;
#   - OUT of one's own below a sticky folder (/tmp-like) is fine.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	for i in $(seq 1 4); do echo "ok $i # SKIP another user's folders need root (setpriv --reuid=nobody)"; done
	trap - EXIT; rm -rf "$T"; exit 0
fi
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
cd "$T" || exit 1
chmod 0711 "$T"
mkdir in mine && "$MKSAMPLE" in/a.png 16 16 3 >/dev/null
printf 'a\t%s\n' "$T/in/a.png" >manifest.tsv
mkdir -p theirs && chown nobody theirs && mkdir theirs/out
mkdir -p open && chmod 0777 open && "${AS_NOBODY[@]}" ln -s "$T/mine" open/l

# task_refused OUT WHAT: exit 1, stderr saying WHAT, nothing in OUT
task_refused() {
	"$VKINRD" --fit-task manifest.tsv --out "$1" --width 16 --epochs 2 --allow-cpu -q 2>err
	local rc=$?
	cat err
	[ $rc = 1 ] && grep -q -- "--out $1: refusing to write in .*$2" err && [ -z "$(ls "$1"/)" ]
}
check "OUT of one's own inside another user's folder: refused, naming it" \
	task_refused theirs/out "$T/theirs above it belongs to another user"
check "a relative OUT from a working folder inside another user's: refused" bash -c '
	cd theirs/out && "'$VKINRD'" --fit-task "'$T'/manifest.tsv" --out . --width 16 --epochs 2 \
		--allow-cpu -q 2>"'$T'/err"
	rc=$?; cat "'$T'/err"
	[ $rc = 1 ] && grep -q "'$T'/theirs above it belongs to another user" "'$T'/err" && [ -z "$(ls)" ]'
check "OUT through a link of another user's: refused, never followed" bash -c '
	"'$VKINRD'" --fit-task manifest.tsv --out open/l --width 16 --epochs 2 --allow-cpu -q 2>err
	rc=$?; cat err
	[ $rc = 1 ] && grep -q "the link '$T'/open/l belongs to another user" err && [ -z "$(ls mine)" ]'
check "OUT of one's own below a sticky folder is fine" bash -c '
	mkdir -p drop && chmod 1777 drop &&
	"'$VKINRD'" --fit-task manifest.tsv --out drop/me --width 16 --epochs 2 --allow-cpu -q &&
	grep -q "\"state\":\"done\"" drop/me/a/result.json'
tap_done
