#!/bin/bash
# 31_activation_ready.sh - under socket activation the daemon's ready
# line names the socket it was passed (issue 31: it named the default
# /run/vkinrd/vkinrd.sock, where nothing listened). systemd-socket-activate
# holds a socket at a private path; the first client starts vkinrd (no
# --socket given), which logs "ready on PATH (from systemd)".
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
if ! command -v systemd-socket-activate >/dev/null; then
	for i in 1 2; do echo "ok $i # SKIP systemd-socket-activate is not installed (Debian package systemd)"; done
	trap - EXIT; rm -rf "$T"; exit 0
fi
env -u VKINR_SOCKET systemd-socket-activate -l "$SOCK" "$VKINRD" --state-dir "$STATE" -v \
	>>"$T/daemon.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
h = connect_retry().call("hello")
tap.ok(h.get("daemon") == "vkinrd", "the first client starts vkinrd and gets its hello", h)
tap.done()
EOF_PY
TAP_N=1
ready() {
	for _ in $(seq 300); do grep -q "ready on" "$T/daemon.log" && break; sleep 0.1; done
	grep "ready on" "$T/daemon.log"
	grep -q "ready on $SOCK (from systemd):" "$T/daemon.log"
}
check "the ready line names the socket systemd passed" ready
stop_daemon
tap_done
