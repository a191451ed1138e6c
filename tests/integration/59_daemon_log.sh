#!/bin/bash
# 59_daemon_log.sh - a daemon an operator can follow: without -v it prints
# one line when ready (version, socket, devices, state) and one per job
# event (submitted, starting, done, removed) and when it stops, each
# stamped with the local time; under journald ($JOURNAL_STREAM) the stamp
# is left to journald.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
"$MKSAMPLE" "$T/l.png" 8 8 >/dev/null
"$VKINRD" --socket "$SOCK" --state-dir "$STATE" 2>"$T/plain.log" & DPID=$!
for _ in $(seq 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
J=$("$CTL" submit -q --wait --epochs 2 --width 16 "$T/l.png")
"$CTL" rm "$J" >/dev/null
stop_daemon
n=0
ok() { n=$((n + 1)); if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; TAP_FAILED=$((TAP_FAILED + 1)); sed 's/^/#   /' "$T/plain.log"; fi; }
TS='^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} vkinrd: '
ok "without -v: a ready line with the version, socket, devices and state" \
	'grep -Eq "${TS}notice: vkinrd [0-9.]+ ready on $SOCK: 1 of 1 devices up \(.+\); state $STATE" "$T/plain.log"'
ok "one line per job event: submitted, starting, done, removed; then stopped" \
	'for w in "job $J: submitted" "job $J: starting on" "job $J: done at epoch 2" "job $J removed" "notice: stopped"; do grep -Eq "${TS}.*$w" "$T/plain.log" || exit 1; done'
ok "every line is stamped, nothing else is printed" '! grep -Evq "$TS" "$T/plain.log"'
JOURNAL_STREAM=8:1234 "$VKINRD" --socket "$SOCK" --state-dir "$STATE" 2>"$T/journal.log" & DPID=$!
for _ in $(seq 300); do grep -q ready "$T/journal.log" && break; sleep 0.1; done
stop_daemon
ok "under journald: no stamp of its own" 'grep -q "^vkinrd: notice: vkinrd .* ready on" "$T/journal.log" && ! grep -Eq "^[0-9]{4}-" "$T/journal.log"'
tap_done
