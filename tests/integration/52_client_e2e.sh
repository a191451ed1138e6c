#!/usr/bin/env bash
# 52_client_e2e.sh - vkinrctl with the real vkinrd on a private socket and
# state folder: a tiny job (width 16, a 32x32 image, 50 epochs) through
# submit --watch, list, show, export, infer, and the exit codes of a daemon
# error, a cancelled job and a stopped daemon. Prints TAP; skips when the
# daemon finds no Vulkan device.
#
#   tests/integration/52_client_e2e.sh [BUILD_DIR]   (default: build)
set -u
B=${1:-${VKINR_BUILD:-${B:-build}}}
CTL=${VKINRCTL:-$B/vkinrctl}
case $CTL in /*) ;; *) CTL=$PWD/$CTL ;; esac
DAEMON=$B/vkinrd
MKSAMPLE=$B/tools/mksample
T=$(mktemp -d)
DPID=
trap '[ -n "$DPID" ] && kill $DPID 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

. "$(dirname "$0")/client_tap.bash"

TOTAL=24
echo "1..$TOTAL"
skip_all() { for i in $(seq $TOTAL); do echo "ok $i # SKIP $1"; done; exit 0; }
for f in "$CTL" "$DAEMON" "$MKSAMPLE"; do [ -x "$f" ] || skip_all "$f not built"; done
"$DAEMON" --devices >/dev/null 2>&1 || skip_all "no Vulkan device"

export VKINR_SOCKET=$T/vkinrd.sock
"$MKSAMPLE" "$T/img.png" 32 32 >/dev/null
"$DAEMON" --socket "$VKINR_SOCKET" --state-dir "$T/state" >"$T/daemon.log" 2>&1 &
DPID=$!
# until it answers (the socket file appears before the daemon listens; a
# sanitizer build on a loaded machine starts slowly): 60 s at most
for _ in $(seq 600); do "$CTL" status >/dev/null 2>&1 && break; sleep 0.1; done

check "status: exit 0" rc_is 0 "$CTL" status
rc_is 0 "$CTL" --json status
check "--json status: one JSON object" python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert "hello" in j and "status" in j' "$T/out"
check "submit --watch of a tiny job: exit 0" rc_is 0 "$CTL" submit --watch --epochs 50 --width 16 --seed 1 "$T/img.png"
check "the watch ended done at epoch 50/50" grep -q "done at epoch 50/50" "$T/out"
ID=$(sed -n 's/^job \([^ ]*\) submitted.*/\1/p' "$T/out")
check "submit named the job id" [ -n "$ID" ]
check "list shows it done" bash -c '"$1" list | grep -q "^$2 .*done"' _ "$CTL" "$ID"
check "--json list: the job with its fields" bash -c '"$1" --json list | python3 -c "
import json, sys
j = [x for x in json.load(sys.stdin)[\"jobs\"] if x[\"id\"] == sys.argv[1]][0]
assert j[\"state\"] == \"done\" and j[\"epoch\"] == 50 and j[\"epochs\"] == 50 and j[\"width\"] == 16
assert j[\"image\"] == {\"width\": 32, \"height\": 32} and j[\"best_psnr\"] >= j[\"psnr\"] - 1e-9
" "$2"' _ "$CTL" "$ID"
check "show: exit 0" rc_is 0 "$CTL" show "$ID"
check "show has the state and the epochs" bash -c 'grep -q "state *done" "$1" && grep -q "epoch *50 of 50" "$1"' _ "$T/out"
check "show: dates, rounded numbers, - for none" bash -c 'grep -Eq "^  created +20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{8} \(.* ago\)$" "$1" && grep -q "^  target_psnr  -$" "$1" && ! grep -Eq "[0-9]\.[0-9]{6}" "$1" && ! grep -q null "$1"' _ "$T/out"
check "list: a PRIO column, the device's short name, within 80 columns" bash -c '"$1" list >"$2/l" && head -1 "$2/l" | grep -q " PRIO " && ! grep -q "(LLVM" "$2/l" && [ "$(awk "{ if (length > m) m = length } END { print m }" "$2/l")" -le 80 ]' _ "$CTL" "$T"
check "list --format picks the columns" bash -c '"$1" list --format id,state,age | grep -Eq "^$2 +done +[0-9]+[smhd]$"' _ "$CTL" "$ID"
check "list --format bogus: exit 2" rc_is 2 "$CTL" list --format id,bogus
check "export: exit 0" bash -c 'cd "$1" && "$2" export "$3" >/dev/null' _ "$T" "$CTL" "$ID"
check "export wrote img.safetensors and img.recon.png" bash -c '[ -s "$1/img.safetensors" ] && head -c 8 "$1/img.recon.png" | grep -q PNG' _ "$T"
check "export --model --recon: the named files" bash -c '"$1" export "$2" --model "$3/m.safetensors" --recon "$3/r.png" >/dev/null && cmp -s "$3/m.safetensors" "$3/img.safetensors"' _ "$CTL" "$ID" "$T"
check "infer --target: a PNG and a PSNR" bash -c '"$1" --json infer "$2/m.safetensors" -o "$2/inf.png" --target "$2/img.png" | python3 -c "import json,sys; j=json.load(sys.stdin); assert j[\"psnr\"] > 5" && [ -s "$2/inf.png" ]' _ "$CTL" "$T"
check "watch of the done job: exit 0" rc_is 0 "$CTL" watch "$ID"
check "wait of the done job: exit 0" rc_is 0 "$CTL" wait "$ID"
check "show of a job that does not exist: exit 3" rc_is 3 "$CTL" show 999999
L=$("$CTL" submit -q --epochs 1000000 --width 16 "$T/img.png")
check "cancel: exit 0" rc_is 0 "$CTL" cancel "$L"
check "watch of the cancelled job: exit 1" rc_is 1 "$CTL" watch "$L"
check "rm: exit 0" rc_is 0 "$CTL" rm "$L"
kill "$DPID"; wait "$DPID" 2>/dev/null; DPID=
check "the daemon stopped: exit 69" rc_is 69 "$CTL" list

[ "$n" -eq "$TOTAL" ] || { echo "# ran $n checks, planned $TOTAL"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ]
