#!/bin/bash
# 79b_user_socket.sh - a plain user without XDG_RUNTIME_DIR (an ssh
# session, an HPC node) starts the daemon with no option: it listens on
# /tmp/vkinrd-UID/vkinrd.sock, in a folder of its own (0700), and the
# client finds it there; a folder of that name made by another user is
# refused by both, naming it; a socket path whose folder the user may not
# create gets a hint, not a bare "permission denied". As root, through
# the user nobody (setpriv); skipped otherwise.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
CTL=$BUILD/vkinrctl
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	for _ in 1 2 3 4 5; do skip "needs root and the user nobody (setpriv)"; done
	tap_done
fi
NU=$(id -u nobody)
D=/tmp/vkinrd-$NU
if [ -e "$D" ]; then
	for _ in 1 2 3 4 5; do skip "$D exists already (another run?)"; done
	tap_done
fi
AS=(setpriv --reuid="$NU" --regid="$(id -g nobody)" --clear-groups
	env -u XDG_RUNTIME_DIR -u VKINR_SOCKET HOME="$T/home")
mkdir -p "$T/home" && chown nobody "$T/home" && chmod 755 "$T"
trap 'cleanup; rm -rf "$D"' EXIT

"${AS[@]}" "$VKINRD" --pack 1 >"$T/user.log" 2>&1 &
UPID=$!
for _ in $(seq 300); do [ -S "$D/vkinrd.sock" ] && break; sleep 0.1; done
check "without XDG_RUNTIME_DIR the daemon listens on /tmp/vkinrd-UID/vkinrd.sock, its folder 0700" \
	bash -c "[ -S '$D/vkinrd.sock' ] && [ \"\$(stat -c '%a %u' '$D')\" = '700 $NU' ]"
"${AS[@]}" "$CTL" --json status >"$T/st" 2>&1; RC=$?
check "the client finds it with no option" \
	bash -c "[ $RC = 0 ] && grep -q '\"daemon\":\"vkinrd\"' '$T/st'"
kill -TERM "$UPID"; wait "$UPID" 2>/dev/null

# a folder of that name that is not the user's: refused by both
rm -rf "$D"; mkdir -m 755 "$D"
"${AS[@]}" "$VKINRD" --pack 1 >"$T/planted.log" 2>&1 &
PPID2=$!
sleep 2
kill -0 "$PPID2" 2>/dev/null && { kill -9 "$PPID2"; echo "# the daemon started"; }
wait "$PPID2" 2>/dev/null
check "a planted folder: the daemon refuses to start, naming it" \
	bash -c "grep -q '$D, the folder of your socket, is another user.s' '$T/planted.log' && [ ! -e '$D/vkinrd.sock' ]"
"${AS[@]}" "$CTL" status >"$T/out" 2>"$T/err"; RC=$?
check "... and the client will not talk to it (69)" \
	bash -c "[ $RC = 69 ] && grep -q 'will not talk to $D/vkinrd.sock' '$T/err'"
rm -rf "$D"

"${AS[@]}" "$VKINRD" --socket /run/vkinrd-test-$$/vkinrd.sock >"$T/denied.log" 2>&1; RC=$?
check "a folder it may not create: the error says what a plain user can do" \
	bash -c "[ $RC != 0 ] && grep -q 'Permission denied; as a plain user, set XDG_RUNTIME_DIR or VKINR_SOCKET, or pass --socket PATH' '$T/denied.log'"
tap_done
