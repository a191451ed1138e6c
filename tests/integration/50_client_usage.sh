#!/usr/bin/env bash
# 50_client_usage.sh - vkinrctl without a daemon: help, version, usage
# errors (exit 2), an unreachable socket (exit 69, with a sentence naming the
# socket), the socket path's resolution, and files refused before anything
# is sent (exit 3). Prints TAP.
#
#   tests/integration/50_client_usage.sh [BUILD_DIR]   (default: build)
#   VKINRCTL=/path/to/vkinrctl overrides the binary.
set -u
B=${1:-${VKINR_BUILD:-${B:-build}}}
CTL=${VKINRCTL:-$B/vkinrctl}
case $CTL in /*) ;; *) CTL=$PWD/$CTL ;; esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

. "$(dirname "$0")/client_tap.bash"

echo "1..34"
if [ ! -x "$CTL" ]; then
	for i in $(seq 34); do echo "ok $i # SKIP $CTL not built"; done
	exit 0
fi

# No daemon anywhere: every socket below is in an empty folder.
unset VKINR_SOCKET
export XDG_RUNTIME_DIR=$T/run
mkdir -p "$XDG_RUNTIME_DIR"

check "--help exits 0 and lists the commands" rc_is 0 "$CTL" --help
check "--help names every command" bash -c 'for c in submit list show watch wait pause resume cancel rm export infer status metrics plot preview help completion; do grep -q "^  $c " "$0" || exit 1; done' "$T/out"
check "--version exits 0" rc_is 0 "$CTL" --version
check "--version prints the version" grep -q '^vkinrctl [0-9]' "$T/out"
helps=ok
for c in submit list show watch wait pause resume cancel rm export infer status; do
	rc_is 0 "$CTL" "$c" --help && grep -q "usage: vkinrctl" "$T/out" || { echo "# $c --help"; helps=bad; }
done
check "every command has --help (exit 0, a usage line)" [ $helps = ok ]
check "help CMD: the command's help, exit 0" bash -c '"$1" help export | grep -q "^usage: vkinrctl .* export"' _ "$CTL"
check "help of no such command: exit 2" rc_is 2 "$CTL" help frobnicate
check "completion bash: a script that completes commands" bash -c 'source <("$1" completion bash) && COMP_WORDS=(vkinrctl pre) COMP_CWORD=1 && _vkinrctl && [ "${COMPREPLY[*]}" = preview ]' _ "$CTL"
# (-o: the programs as built; a make without the build's own flags would
# relink them, and a failed relink deletes them under the other tests)
check "make install puts the three completions in place" bash -c 'cd "$1" && make -s install B="$2" DESTDIR="$3/inst" PREFIX=/usr -o "$2/vkinrd" -o "$2/vkinrctl" >/dev/null 2>&1 && grep -q "complete -F _vkinrctl vkinrctl" "$3/inst/usr/share/bash-completion/completions/vkinrctl" && head -1 "$3/inst/usr/share/zsh/site-functions/_vkinrctl" | grep -q "^#compdef vkinrctl" && grep -q "^complete -c vkinrctl" "$3/inst/usr/share/fish/vendor_completions.d/vkinrctl.fish"' _ "$(cd "$(dirname "$0")/../.." && pwd)" "$(cd "$(dirname "$CTL")" && pwd)" "$T"
check "no command: exit 2" rc_is 2 "$CTL"
check "unknown command: exit 2" rc_is 2 "$CTL" frobnicate
check "unknown command is named" grep -q "frobnicate" "$T/err"
check "unknown global option: exit 2" rc_is 2 "$CTL" --bogus list
check "unknown command option: exit 2" rc_is 2 "$CTL" list --bogus
check "submit without files: exit 2" rc_is 2 "$CTL" submit
check "submit --epochs abc: exit 2" rc_is 2 "$CTL" submit --epochs abc x.png
check "the bad value is named" grep -q "abc" "$T/err"
check "submit --watch --wait: exit 2" rc_is 2 "$CTL" submit --watch --wait x.png
check "watch without an id: exit 2" rc_is 2 "$CTL" watch
check "infer without -o: exit 2" rc_is 2 "$CTL" infer m.safetensors

check "no daemon: exit 69" rc_is 69 "$CTL" list
check "69 names \$XDG_RUNTIME_DIR/vkinrd.sock" grep -q "$XDG_RUNTIME_DIR/vkinrd.sock" "$T/err"
check "69 says how to start the daemon" grep -q "vkinrd &" "$T/err"
check "VKINR_SOCKET is used" bash -c 'VKINR_SOCKET=$1/env.sock "$2" list 2>&1 | grep -q "$1/env.sock"' _ "$T" "$CTL"
check "--socket wins over VKINR_SOCKET" bash -c 'VKINR_SOCKET=$1/env.sock "$2" --socket $1/flag.sock status 2>&1 | grep -q "$1/flag.sock"' _ "$T" "$CTL"
check "--socket after the command works too" bash -c '"$2" status --socket $1/late.sock 2>&1 | grep -q "$1/late.sock"' _ "$T" "$CTL"
check "without XDG_RUNTIME_DIR: /run/vkinrd/vkinrd.sock" bash -c 'env -u XDG_RUNTIME_DIR -u VKINR_SOCKET "$1" status 2>&1 | grep -q "/run/vkinrd/vkinrd.sock"' _ "$CTL"

# Files are checked here before anything is sent: no daemon needed.
echo "not an image" >"$T/bad.png"
check "submit of a missing file: exit 3" rc_is 3 "$CTL" submit "$T/missing.png"
check "the missing file is named" grep -q "missing.png" "$T/err"
check "submit of a file neither PNG, JPEG nor WebP: exit 3, said so" bash -c '"$1" submit "$2/bad.png" >/dev/null 2>&1; [ $? -eq 3 ] && "$1" submit "$2/bad.png" 2>&1 | grep -q "neither a PNG, a JPEG nor a WebP"' _ "$CTL" "$T"
check "a bad option is named with the program: vkinrctl show: ..." bash -c '"$1" show -1 2>&1 | grep -q "^vkinrctl show: invalid option"' _ "$CTL"
printf '\211PNG\r\n\032\n0123456789' >"$T/pic.png"
check "infer of a PNG: not a model package, exit 3" bash -c '"$1" infer "$2/pic.png" -o "$2/o.png" 2>"$2/e"; [ $? = 3 ] && grep -q "not a model package.*PNG image" "$2/e" && ! grep -q "header length" "$2/e"' _ "$CTL" "$T"
check "--timeout takes seconds" rc_is 2 "$CTL" wait --timeout soon 1
check "--json with an error prints nothing but JSON on stdout" bash -c '"$1" --json submit "$2/bad.png" 2>/dev/null | python3 -c "import sys,json; [json.loads(l) for l in sys.stdin]"' _ "$CTL" "$T"

[ "$fails" -eq 0 ]
