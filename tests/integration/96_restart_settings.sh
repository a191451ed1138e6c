#!/bin/bash
# 96_restart_settings.sh - a job's settings survive every restart: jobs
# submitted without --width (so that the width, rate and warmup are left
# to the daemon) queued, paused before their first epoch, running and done
# keep what `vkinrctl show` says of them across a SIGTERM and a kill -9
# of the daemon, and the ones restarted before or while they ran end with
# the same weights, byte for byte, as an uninterrupted run. A saved recipe
# that cannot be read fails its job with the reason; it never becomes
# another recipe. A job not started yet shows the width, rate and warmup
# it will use, marked "(default)" when left to the daemon, in show and
# in logs.
. "$(dirname "$0")/lib.bash"
tap_plan 11
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
export VKINR_SOCKET=$SOCK
CTL=$BUILD/vkinrctl
"$MKSAMPLE" "$T/s.png" 16 16

# what a job trains with, as `show --json` reports it, one key a line
settings() {
	"$CTL" --json show "$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)
for k in ("width", "lr", "seed", "epochs", "optimizer", "schedule", "warmup",
          "plateau", "lr_min", "half_life", "early_cycle", "decay", "average",
          "ema_decay", "ssim", "grad", "chroma", "precision", "dilations"):
    print(k, json.dumps(j.get(k)))'
}
field() {
	"$CTL" --json show "$1" | python3 -c \
		'import json, sys; print(json.load(sys.stdin).get(sys.argv[1]))' "$2"
}
wait_epoch() { # ID EPOCH
	for _ in $(seq 1 600); do
		[ "$(field "$1" epoch)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
restart() { # TERM or KILL
	kill -"$1" "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	rm -f "$SOCK" # left by a kill -9: start_daemon waits for a new one
	start_daemon
}
# every job's settings now, against what was recorded before
same_settings() {
	for id in "$@"; do
		settings "$id" | diff "$T/settings.$id" - || return 1
	done
}
record() { for id in "$@"; do settings "$id" >"$T/settings.$id"; done; }
same_model() { # ID: exports and compares with the uninterrupted run's
	rm -f "$T/m.safetensors" "$T/m.recon.png"
	"$CTL" export "$1" --model "$T/m.safetensors" --recon "$T/m.recon.png" &&
		cmp "$T/ref.safetensors" "$T/m.safetensors"
}

start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
fit=(--epochs 30 --seed 7 "$T/s.png")
ref=$("$CTL" submit -q --wait "${fit[@]}")
"$CTL" export "$ref" --model "$T/ref.safetensors" --recon "$T/ref.recon.png"
# a long job ahead of the others keeps them queued
block=$("$CTL" submit -q --epochs 1000000 --width 16 --priority 9 "$T/s.png")
queued=$("$CTL" submit -q "${fit[@]}")
paused=$("$CTL" submit -q "${fit[@]}")
"$CTL" pause "$paused" >/dev/null
record "$ref" "$queued" "$paused"

# not started yet, they show the values they will use, never a placeholder
shows_defaults() {
	"$CTL" show "$1" >"$T/show.txt" &&
	grep -Eq '^  width +[0-9]+ \(default\)$' "$T/show.txt" &&
	grep -Eq '^  lr +[0-9.e-]+ \(default\)$' "$T/show.txt" &&
	grep -Eq '^  warmup +[0-9]+ \(default\)$' "$T/show.txt" &&
	"$CTL" logs "$1" >"$T/logs.txt" &&
	grep -Eq 'width [0-9]+ \(default\), lr [0-9.e-]+ \(default\), warmup [0-9]+ \(default\)' "$T/logs.txt" &&
	! grep -Eq 'width 0|lr 0[ ,]|warmup -1' "$T/show.txt" "$T/logs.txt"
}
check "show and logs of a queued job: the values it will use, marked (default)" \
	shows_defaults "$queued"
check "a queued and a paused job show the settings the done run used" \
	bash -c "diff '$T/settings.$ref' '$T/settings.$queued' &&
		 diff '$T/settings.$ref' '$T/settings.$paused'"

restart TERM
check "SIGTERM: done, queued and paused jobs keep their settings" \
	same_settings "$ref" "$queued" "$paused"
restart KILL
check "kill -9: done, queued and paused jobs keep their settings" \
	same_settings "$ref" "$queued" "$paused"
check "the saved recipes were read back (no fallback to other defaults)" \
	bash -c "! grep -i 'recipe is not readable\|using the defaults' '$T/daemon.log'"

# the queued job runs, killed between two checkpoints; the paused one
# runs and is stopped by SIGTERM
"$CTL" cancel "$block" >/dev/null
wait_epoch "$queued" 7
restart KILL
"$CTL" resume "$paused" >/dev/null
"$CTL" wait "$queued" >/dev/null
wait_epoch "$paused" 12
restart TERM
"$CTL" wait "$paused" >/dev/null
check "a job queued across restarts, then killed mid-run, ends with the uninterrupted run's weights" \
	same_model "$queued"
check "a job paused across restarts, then stopped by SIGTERM mid-run, ends with the uninterrupted run's weights" \
	same_model "$paused"
cp "$T/settings.$ref" "$T/settings.$queued"
cp "$T/settings.$ref" "$T/settings.$paused"
check "once run, they show the uninterrupted run's settings" \
	same_settings "$queued" "$paused"

# the settings chosen when a job ran survive a restart of a done job
restart KILL
check "kill -9 after they ran: every job keeps its settings" \
	same_settings "$ref" "$queued" "$paused"

# a recipe that cannot be read: the job fails, with the reason
block=$("$CTL" submit -q --epochs 1000000 --width 16 --priority 9 "$T/s.png")
bad=$("$CTL" submit -q "${fit[@]}")
stop_daemon
sed -i 's/"optimizer":[^,]*/"optimizer": "sgd"/' "$STATE/jobs/$bad/request.json"
start_daemon
check "an unreadable saved recipe fails its job" \
	test "$(field "$bad" state)" = failed
check "... and says why" \
	bash -c "'$CTL' show '$bad' | grep -q 'recipe is not readable.*optimizer'"
"$CTL" cancel "$block" >/dev/null
stop_daemon
tap_done
