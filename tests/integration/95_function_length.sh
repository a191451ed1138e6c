#!/bin/bash
# 95_function_length.sh - no function of daemon/ and client/ is longer
# than 120 lines, so a newcomer can read one whole before changing it.
#
# A function's length runs from the first line of its signature to its
# closing brace, both counted. The C files are as .clang-format lays them
# out (08_format.sh): a function's body opens with a "{" alone in column
# 0 and closes with the first "}" in column 0 after it; its signature is
# the run of code lines just above that "{" (a multi-line signature, a
# return type on a line of its own, "static" or a struct's included).
# Comments, blank lines and preprocessor directives (a multi-line #define
# with its backslashes) end a signature and never open a body; "struct x
# {", "... = {" and one-line functions do not open a body either. Each
# function longer than MAX is printed as FILE:LINE NAME LENGTH, longest
# first, and fails the test. The longest few are shown as comments.
#
# 1. The finder reads a sample file with each of those shapes right.
# 2. No function of daemon/**/*.c and client/**/*.c is over 120 lines.
. "$(dirname "$0")/lib.bash"
tap_plan 2
MAX=120

# functions FILE...: "FILE:LINE NAME LENGTH" for every function defined
# in the files (a function on one line is left out: it is 1 line long)
functions() {
	awk '
	FNR == 1 { start = 0; inpp = 0; incomment = 0; body = 0 }
	{
		line = $0
		# a preprocessor directive and its continuation lines
		if (inpp || line ~ /^[ \t]*#/) {
			inpp = (line ~ /\\$/)
			if (!body)
				start = 0
			next
		}
		# the line without its comments
		code = ""
		while (line != "") {
			if (incomment) {
				i = index(line, "*/")
				if (!i)
					break
				line = substr(line, i + 2)
				incomment = 0
				continue
			}
			i = index(line, "/*")
			j = index(line, "//")
			if (j && (!i || j < i)) {
				code = code substr(line, 1, j - 1)
				break
			}
			if (!i) {
				code = code line
				break
			}
			code = code substr(line, 1, i - 1) " "
			line = substr(line, i + 2)
			incomment = 1
		}
		if (body) {
			if ($0 ~ /^}/) {
				print FILENAME ":" start, name, FNR - start + 1
				body = 0
				start = 0
			}
			next
		}
		if (code ~ /^[ \t]*$/) {
			start = 0
			next
		}
		if ($0 ~ /^\{[ \t]*$/) {
			if (start && sig ~ /\(/ && sig !~ /=/) {
				# the name: the last word before the first "("
				s = sig
				sub(/\(.*/, "", s)
				n = split(s, w, /[^A-Za-z0-9_]+/)
				name = w[n] != "" ? w[n] : w[n - 1]
				body = 1
			}
			next
		}
		if (!start && code ~ /^[A-Za-z_]/) {
			start = FNR
			sig = ""
		}
		if (start)
			sig = sig " " code
		if (code ~ /[;}][ \t]*$/)
			start = 0
	}' "$@"
}

# the sample: each shape the finder must read, with the lengths it must find
finder_reads_shapes() {
	local f=$T/shapes.c
	{
		printf '%s\n' '/* a file comment { with a brace' ' * } and another */' \
			'#include <stdio.h>' \
			'#define BLOCK(x)   \' '	{               \' '		(x)++;  \' '	}' \
			'#define TWICE(x) ((x) * 2)' \
			'struct pair {' '	int a, b;' '};' \
			'static const int table[] = {' '	1, 2,' '};' \
			'static int one_line(int x) { return x; }' \
			'' '/* above a function */' \
			'static int' 'multi(int a,' '      int b)' '{'
		for _ in $(seq 1 200); do echo "	a += b; /* } not the end */"; done
		printf '%s\n' '#if 1' '	a++;' '#endif' '	return a;' '}' \
			'DECLARE_THING(one);' \
			'int plain(void) // a trailing comment' '{' \
			'	if (1) {' '		return 1;' '	}' '	return 0;' '}' \
			'static const char *' 'name_of(int (*fn)(void))' '{' \
			'	return "{";' '}' \
			'struct pair *' 'pair_new(void)' '{' '	return NULL;' '}'
	} >"$f"
	functions "$f" | sed "s|^$T/||" >"$T/shapes.found"
	printf '%s\n' 'shapes.c:18 multi 209' 'shapes.c:228 plain 7' \
		'shapes.c:235 name_of 5' 'shapes.c:240 pair_new 5' >"$T/shapes.want"
	diff "$T/shapes.want" "$T/shapes.found"
}
check "the finder reads static, multi-line and macro shapes right" \
	finder_reads_shapes

cd "$ROOT" || exit 1
mapfile -t files < <(find daemon client -name '*.c' | sort)
functions "${files[@]}" | sort -k3,3nr >"$T/lengths"
echo "# $(wc -l <"$T/lengths") functions in ${#files[@]} files; the longest:"
head -8 "$T/lengths" | sed 's/^/#   /'
none_too_long() {
	local long
	long=$(awk -v max=$MAX '$3 > max' "$T/lengths")
	[ -z "$long" ] && return 0
	echo "functions over $MAX lines (FILE:LINE NAME LENGTH):"
	echo "$long"
	return 1
}
check "no function of daemon/ and client/ over $MAX lines" none_too_long
tap_done
