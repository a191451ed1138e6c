#!/bin/bash
# 95_file_length.sh - no text file of the repository is over 800 lines
# (issue 32), so that a newcomer can read any one whole: the sources and
# the tests, and the documents, man pages, benchmark logs and scripts as
# well. A log that grows goes on in a new file (tests/bench-h200/ keeps
# one a session); a page that grows is split by topic (man/).
#
# The files are those git tracks (git ls-files), else, outside a git
# checkout, every file below the root but the build folders and .git.
# Binary files (grep -I) are not counted. Each file over MAX is printed
# as FILE LINES, longest first; the longest few are shown as comments.
#
# 1. The counter counts a sample's lines, a last line without its newline
#    included, and leaves a binary file out.
# 2. No tracked text file is over 800 lines.
. "$(dirname "$0")/lib.bash"
tap_plan 2
MAX=800

# lengths FILE...: "LINES FILE" for each text file that has lines (grep
# -I counts a binary file as matching nothing: 0, left out as an empty
# one is; links and missing files are passed by)
lengths() {
	local f
	for f in "$@"; do
		[ -f "$f" ] && [ ! -L "$f" ] && printf '%s\0' "$f"
	done | xargs -0 -r grep -I -c -H '' -- 2>/dev/null |
		awk '{ i = match($0, /:[0-9]+$/); n = substr($0, i + 1); if (n > 0) print n, substr($0, 1, i - 1) }'
}

counter_counts() {
	mkdir -p "$T/sample"
	printf 'a\nb\nc' >"$T/sample/three.txt"
	seq 1 900 >"$T/sample/long.md"
	printf 'x\0y\n' >"$T/sample/binary.bin"
	: >"$T/sample/empty.txt"
	(cd "$T/sample" && lengths three.txt long.md binary.bin empty.txt) >"$T/sample.found"
	printf '%s\n' '3 three.txt' '900 long.md' | diff - "$T/sample.found"
}
check "the counter counts lines, a last one without newline too, not binaries" \
	counter_counts

cd "$ROOT" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -d '' files < <(git ls-files -z)
else
	mapfile -d '' files < <(find . -path ./.git -prune -o -path './build*' -prune \
		-o -type f -print0 | sed -z 's|^\./||')
fi
lengths "${files[@]}" | sort -k1,1nr >"$T/lengths"
echo "# $(wc -l <"$T/lengths") text files; the longest:"
head -5 "$T/lengths" | sed 's/^/#   /'
none_too_long() {
	local long
	long=$(awk -v max=$MAX '$1 > max' "$T/lengths")
	[ -z "$long" ] && return 0
	echo "files over $MAX lines (LINES FILE):"
	echo "$long"
	return 1
}
check "no tracked text file over $MAX lines (docs, man pages and logs included)" \
	none_too_long
tap_done
