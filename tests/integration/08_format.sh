#!/bin/bash
# 08_format.sh - every C file of the tree is as .clang-format lays it out
# (clang-format --dry-run --Werror), so one style holds without a review
# having to say so; it names the files that differ and shows the first
# difference of each. `clang-format -i FILE` fixes one. Skipped where
# clang-format is not installed (Debian's clang-format; CI installs it).
. "$(dirname "$0")/lib.bash"
tap_plan 2

if ! command -v clang-format >/dev/null; then
	skip "clang-format is not installed"
	skip "clang-format is not installed"
	tap_done
fi

cd "$ROOT" || exit 1
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find daemon client proto util tests -name '*.[ch]')

# the style file is found and read: a file it would change is refused
check "clang-format reads .clang-format" bash -c '
	printf "int  f( void ){return 0;}\n" > "'"$T"'/bad.c" &&
	! clang-format --style=file:.clang-format --dry-run --Werror "'"$T"'/bad.c" 2>/dev/null'

differs() {
	local bad=0 f
	for f in $files; do
		if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
			echo "$f differs from .clang-format:"
			clang-format "$f" | diff "$f" - | head -8
			bad=1
		fi
	done
	return $bad
}
check "every C file as .clang-format lays it out" differs
tap_done
