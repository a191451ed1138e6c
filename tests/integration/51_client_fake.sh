#!/usr/bin/env bash
# 51_client_fake.sh - vkinrctl against tests/integration/fake_daemon.py, a
# stand-in that speaks vkinrd's protocol with canned jobs that "train" in a
# thread: submit (-q, --json, batches, folders, --from-file), list (table,
# --csv, --json, --batch), show, watch (plain lines, NDJSON, exit codes),
# wait, pause/resume/cancel/rm, export (a 40 MB answer), infer, and the
# daemon's errors (exit 3). Prints TAP.
#
#   tests/integration/51_client_fake.sh [BUILD_DIR]   (default: build)
#   VKINRCTL=/path/to/vkinrctl overrides the binary.
set -u
B=${1:-${VKINR_BUILD:-${B:-build}}}
CTL=${VKINRCTL:-$B/vkinrctl}
case $CTL in /*) ;; *) CTL=$PWD/$CTL ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
FAKE_PID=
trap '[ -n "$FAKE_PID" ] && kill $FAKE_PID 2>/dev/null; rm -rf "$T"' EXIT

. "$(dirname "$0")/client_tap.bash"
# every line of FILE is a JSON object (and there is at least one)
all_json() { python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines, "no output"
for l in lines:
    assert isinstance(json.loads(l), dict), l
' "$1"; }
# jq-like: py FILE EXPR, with j the parsed JSON of FILE's first line
py() { python3 -c "import json,sys; j=json.loads(open(sys.argv[1]).readline()); sys.exit(0 if ($2) else 1)" "$1"; }

TOTAL=49
echo "1..$TOTAL"
if [ ! -x "$CTL" ]; then
	for i in $(seq $TOTAL); do echo "ok $i # SKIP $CTL not built"; done
	exit 0
fi

start_fake --epoch-ms 10 --log "$T/requests" --export-mb 40

HERE=$HERE python3 -c '
import os, sys
sys.path.insert(0, os.environ["HERE"])
import fake_daemon as f
t = sys.argv[1]
os.makedirs(t + "/dir", exist_ok=True)
open(t + "/a.png", "wb").write(f.tiny_png(8, 8))
open(t + "/fail.png", "wb").write(f.tiny_png(8, 8))
for i, name in enumerate(["one", "two", "three"]):
    open("%s/dir/%s.png" % (t, name), "wb").write(f.tiny_png(4 + i, 4))
open(t + "/dir/notes.txt", "w").write("not an image\n")
hdr = b"{\"__metadata__\":{\"FAKE-SAFETENSORS\":\"1\"}}"
open(t + "/model.safetensors", "wb").write(len(hdr).to_bytes(8, "little") + hdr)
' "$T"
echo "GIF89a not a png" >"$T/bad.png"

# ---- submit ----
check "submit -q: exit 0" rc_is 0 "$CTL" submit -q --epochs 20 "$T/a.png"
check "submit -q prints only the id" grep -qx '[0-9]\+' "$T/out"
check "submit -q prints one line" [ "$(wc -l <"$T/out")" -eq 1 ]
A=$(cat "$T/out")
check "the image travelled as base64 PNG with the parameters" \
	python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if "job.submit" in l][-1]["params"]; assert r["image"]["png"].startswith("<") and r["epochs"]==20 and r["name"]=="a"' "$T/requests"
check "--json submit: exit 0" rc_is 0 "$CTL" --json submit --epochs 20 "$T/a.png"
check "--json submit prints only JSON" all_json "$T/out"
check "--json submit has the job id" py "$T/out" 'isinstance(j["job"], str) and j["jobs"][0]["file"].endswith("a.png")'
check "submit (people): names the job" bash -c '"$1" submit --epochs 5 "$2/a.png" | grep -q "^job [0-9]* submitted"' _ "$CTL" "$T"

# ---- watch ----
check "watch (not a tty) of a job that ends done: exit 0" rc_is 0 "$CTL" watch "$A"
check "watch lines: epoch N/T psnr live mse lr" grep -q "^job $A a: epoch [0-9]*/20 psnr [0-9.]* live [0-9.]* mse [0-9.e+-]* lr" "$T/out"
check "watch ends with the done line" bash -c 'tail -1 "$1" | grep -q "done at epoch 20/20"' _ "$T/out"
check "watch output is throttled (a fast job: few lines)" [ "$(wc -l <"$T/out")" -le 6 ]
check "watch --json: exit 0" rc_is 0 "$CTL" --json watch "$A"
check "watch --json is NDJSON only" all_json "$T/out"
check "watch --json replays every epoch" [ "$(grep -c '"event":"job.progress"' "$T/out")" -eq 20 ]
check "watch --json progress has epoch, mse, psnr, lr, ms" py "$T/out" 'all(k in j for k in ("job","epoch","mse","psnr","lr","ms"))'
F=$("$CTL" submit -q --epochs 20 "$T/fail.png")
check "watch of a job that fails: exit 1" rc_is 1 "$CTL" watch "$F"
check "the failure's reason is shown" grep -q "diverged" "$T/out"
check "wait of a failed job: exit 1" rc_is 1 "$CTL" wait "$F"
check "submit --wait: exit 0 when done" rc_is 0 "$CTL" submit --wait --epochs 10 "$T/a.png"
check "submit --wait prints a summary line" grep -q "done at epoch 10/10" "$T/out"
rc_is 0 "$CTL" submit -q --wait --epochs 10 "$T/a.png"
check "submit -q --wait prints only the id" grep -qx '[0-9]\+' "$T/out"
check "submit --watch of a failing job: exit 1" rc_is 1 "$CTL" submit --watch --epochs 10 "$T/fail.png"

# ---- pause, resume, cancel, rm ----
L=$("$CTL" submit -q --epochs 100000 "$T/a.png")
check "pause: exit 0" rc_is 0 "$CTL" pause "$L"
check "show says paused" bash -c '"$1" show "$2" | grep -q "state *paused"' _ "$CTL" "$L"
check "pause of a paused job: the daemon's error, exit 3" rc_is 3 "$CTL" pause "$L"
check "the daemon's message is printed" grep -q "paused" "$T/err"
check "resume: exit 0" rc_is 0 "$CTL" resume "$L"
( sleep 0.5; "$CTL" cancel "$L" >/dev/null 2>&1 ) &
CANCELLER=$!
check "watch of a job cancelled meanwhile: exit 1" rc_is 1 "$CTL" watch "$L"
wait $CANCELLER
check "rm: exit 0" rc_is 0 "$CTL" rm "$L"
check "show of a removed job: exit 3" rc_is 3 "$CTL" show "$L"
check "--json show of a missing job: an error object" bash -c '"$1" --json show 9999 2>/dev/null | python3 -c "import json,sys; assert json.load(sys.stdin)[\"error\"][\"code\"] == -32001"' _ "$CTL"

# ---- list, show ----
check "list: exit 0, a table" bash -c '"$1" list | head -1 | grep -q "^ID *NAME *STATE"' _ "$CTL"
check "--json list: one object with jobs" bash -c '"$1" --json list >"$2/l"; python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert all(\"id\" in x and \"state\" in x for x in j[\"jobs\"])" "$2/l"' _ "$CTL" "$T"
check "--json show: the job object" bash -c '"$1" --json show "$2" | python3 -c "import json,sys; j=json.load(sys.stdin); assert j[\"id\"]==\"$2\" and j[\"state\"]==\"done\""' _ "$CTL" "$A"

# ---- batches (issue 4) ----
printf '%s\n' "$T/a.png" "$T/missing.png" "$T/bad.png" "$T/dir/one.png" >"$T/list"
check "--from-file - with a missing and a non-PNG: exit 3" rc_is 3 "$CTL" submit -q --epochs 10 --from-file - <"$T/list"
check "the good ones were submitted" [ "$(grep -c '^[0-9]' "$T/out")" -eq 2 ]
check "the bad ones are named" bash -c 'grep -q missing.png "$1" && grep -q bad.png "$1"' _ "$T/err"
check "submit DIR: its PNGs, one batch" rc_is 0 "$CTL" --json submit --epochs 10 "$T/dir"
check "three jobs and a batch id" py "$T/out" 'len(j["jobs"]) == 3 and j["batch"].startswith("b")'
BATCH=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["batch"])' "$T/out")
check "wait BATCH: exit 0" rc_is 0 "$CTL" wait "$BATCH"
check "list --batch --csv: a header and 3 rows" bash -c '"$1" list --batch "$2" --csv >"$3/csv" && head -1 "$3/csv" | grep -q "^id,name,batch,state" && [ $(wc -l <"$3/csv") -eq 4 ]' _ "$CTL" "$BATCH" "$T"
check "export BATCH --dir: a model and a PNG per job" bash -c '"$1" export "$2" --dir "$3/exported" >/dev/null && [ -s "$3/exported/one.safetensors" ] && [ -s "$3/exported/three.recon.png" ] && [ $(ls "$3/exported" | wc -l) -eq 6 ]' _ "$CTL" "$BATCH" "$T"
check "export BATCH --dir DIR/: the files named with one slash, not two" bash -c '"$1" export "$2" --dir "$3/exported2/" >"$3/exp.out" && grep -q "exported2/one.safetensors" "$3/exp.out" && ! grep -q "//" "$3/exp.out"' _ "$CTL" "$BATCH" "$T"

# ---- export, infer ----
check "export ID: exit 0 (a 40 MB answer)" bash -c 'cd "$1" && "$2" export "$3" >/dev/null' _ "$T" "$CTL" "$A"
check "export into a file that is not a folder: exit 3" rc_is 3 "$CTL" export "$BATCH" --dir "$T/a.png"
check "export's default files, named after the job" bash -c '[ $(stat -c %s "$1/a.safetensors") -gt 41943040 ] && head -c 8 "$1/a.recon.png" | grep -q PNG' _ "$T"
check "infer --target: the PSNR, exit 0" bash -c '"$1" infer "$2/model.safetensors" -o "$2/r.png" --target "$2/a.png" | grep -q "PSNR 27.50" && [ -s "$2/r.png" ]' _ "$CTL" "$T"
check "infer of a refused model: exit 3" rc_is 3 "$CTL" infer "$T/a.png" -o "$T/r2.png"

[ "$n" -eq "$TOTAL" ] || { echo "# ran $n checks, planned $TOTAL"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ]
