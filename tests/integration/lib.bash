# lib.bash - shared by the integration tests: a private socket and state
# folder, the real build/vkinrd started and stopped, TAP helpers.
#
# Usage in a test:  . "$(dirname "$0")/lib.bash"; tap_plan N; need_device
# The build folder is $1, else $VKINR_BUILD (tests/run.sh), else $B, else build (relative to the repo root).

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-${VKINR_BUILD:-${B:-build}}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
VKINRD=$BUILD/vkinrd
MKSAMPLE=$BUILD/tools/mksample
T=$(mktemp -d /tmp/vkinrd-test.XXXXXX)
SOCK=$T/sock
STATE=$T/state
DPID=
TAP_N=0
TAP_FAILED=0
export PYTHONPATH=$HERE${PYTHONPATH:+:$PYTHONPATH}

cleanup() {
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
	if [ "$TAP_FAILED" != 0 ] && [ -f "$T/daemon.log" ]; then
		echo "# daemon log:"; sed 's/^/#   /' "$T/daemon.log" | tail -40
	fi
	rm -rf "$T"
}
trap cleanup EXIT

tap_plan() { TAP_PLAN=$1; echo "1..$1"; }

# start_dashboard: `$CTL dashboard --port 0` in the background (its pid in
# DASH), then, once it has printed its address: URL (with the token),
# BASE (without it) and TOKEN
start_dashboard() {
	"$CTL" dashboard --port 0 >"$T/dash.out" 2>"$T/dash.err" &
	DASH=$!
	for _ in $(seq 300); do grep -q token= "$T/dash.out" 2>/dev/null && break; sleep 0.1; done
	URL=$(grep -o 'http://127.0.0.1:[0-9]*/?token=[0-9a-f]*' "$T/dash.out")
	TOKEN=${URL##*token=}
	BASE=${URL%/\?token=*}
}

# Skips every planned test when there is no Vulkan device.
need_device() {
	if [ ! -x "$VKINRD" ] || ! "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
		for i in $(seq 1 "$TAP_PLAN"); do echo "ok $i # SKIP no Vulkan device"; done
		trap - EXIT; rm -rf "$T"; exit 0
	fi
}

# Extra arguments go to vkinrd (e.g. --device 0 --device 0).
# The tests of the queue's order, states and workers run one job at a time
# a worker (--pack 1) unless PACK says otherwise; 76_packs.sh tests packs.
# A socket left by a daemon killed with -9 exists before the new daemon
# replaces it: then the wait is for a connection, not for the file.
start_daemon() {
	local stale=
	[ -S "$SOCK" ] && stale=1
	"$VKINRD" --socket "$SOCK" --state-dir "$STATE" --pack "${PACK:-1}" -v "$@" \
		>>"$T/daemon.log" 2>&1 &
	DPID=$!
	# 30 s: a sanitizer build on a loaded machine starts slowly
	for _ in $(seq 1 300); do
		if [ -S "$SOCK" ]; then
			[ -z "$stale" ] && return 0
			socket_answers "$SOCK" && return 0
		fi
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "# the daemon did not create its socket"
	return 1
}

# Whether something accepts a connection on the Unix socket $1.
socket_answers() {
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])' "$1" 2>/dev/null
}

stop_daemon() {
	[ -z "$DPID" ] && return 0
	kill -TERM "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
}

# need_pil: the test's python needs PIL (python3-pil, tests/deps.sh). The
# python3 first on PATH may be another than Debian's, which has it: then
# Debian's is put first. Without any, every check is reported skipped.
need_pil() {
	python3 -c 'import PIL' 2>/dev/null && return 0
	if /usr/bin/python3 -c 'import PIL' 2>/dev/null; then
		PATH=/usr/bin:$PATH
		return 0
	fi
	for i in $(seq 1 "$TAP_PLAN"); do
		echo "ok $i # SKIP python3-pil is not installed (tests/deps.sh)"
	done
	trap - EXIT
	rm -rf "$T"
	exit 0
}

# Runs the python part of a test; it prints TAP lines itself ("ok N - ..."),
# numbered from $TAP_N + 1. Its exit status counts failures.
run_py() {
	SOCK=$SOCK STATE=$STATE T=$T VKINRD=$VKINRD MKSAMPLE=$MKSAMPLE \
		DPID=$DPID TAP_START=$TAP_N python3 - "$@"
	local rc=$?
	[ $rc != 0 ] && TAP_FAILED=$((TAP_FAILED + rc))
	return 0
}

# check NAME COMMAND...: one TAP line, passing when COMMAND succeeds; what
# it printed is shown (the last lines) when it fails.
check() {
	local name=$1
	shift
	TAP_N=$((TAP_N + 1))
	if "$@" >>"$T/check.log" 2>&1; then
		echo "ok $TAP_N - $name"
	else
		echo "not ok $TAP_N - $name"
		TAP_FAILED=$((TAP_FAILED + 1))
		sed 's/^/#   /' "$T/check.log" | tail -20
	fi
	: >"$T/check.log"
}

# skip WHY: one TAP line for a test that cannot run here.
skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N # SKIP $1"
}

tap_done() {
	[ "$TAP_FAILED" = 0 ] && exit 0
	exit 1
}
