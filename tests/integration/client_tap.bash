# client_tap.bash - TAP helpers of the client tests (50-52), which run
# vkinrctl against a fake or a real daemon without lib.bash's setup.
# Source it after setting T (a scratch folder); $n and $fails count.
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { # check DESC CMD...: passes when CMD succeeds
	local d=$1; shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
# rc_is EXPECTED_RC CMD...: runs the client, keeps $T/out and $T/err,
# compares the exit status
rc_is() {
	local want=$1; shift
	"$@" >"$T/out" 2>"$T/err"
	local got=$?
	[ "$got" -eq "$want" ] || { echo "# expected exit $want, got $got: $*"; sed 's/^/#   /' "$T/err" | head -5; return 1; }
}
# start_fake ARGS...: fake_daemon.py on $T/fake.sock (VKINR_SOCKET) with
# ARGS, its pid in FAKE_PID (the caller's trap kills it)
start_fake() {
	export VKINR_SOCKET=$T/fake.sock
	python3 "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.py" "$VKINR_SOCKET" "$@" >"$T/fake.out" 2>&1 &
	FAKE_PID=$!
	for _ in $(seq 100); do [ -S "$VKINR_SOCKET" ] && break; sleep 0.05; done
}
