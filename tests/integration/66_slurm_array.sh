#!/bin/bash
# 66_slurm_array.sh - `vkinrctl submit --slurm` on a real single-node Slurm
# (slurm.bash: munged, slurmctld and slurmd as children of this test), on
# the CPU device with 16x16 images: 8 images over 4 array tasks, each
# package rendering at its reported PSNR; the same submission again
# refitting nothing; a task signalled mid-fit (Slurm's time-limit warning,
# USR1), requeued, ending with exactly the result of an uninterrupted fit;
# a list with missing and broken files, those reported and the rest
# fitted; --dry-run writing nothing; an --out with a space in it, a
# throttled array (--max-running) and a --setup line, the tasks finding
# vkinrd on PATH and logging into OUT/logs/.
# make check-slow runs it, not make check: a private Slurm cluster takes minutes to run its array.
# run.sh: slow
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/slurm.bash"
tap_plan 13
need_device
need_slurm
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
# the tasks find vkinrd on PATH, as on a cluster where it is installed
# (sbatch passes this environment on)
export PATH=$BUILD:$PATH

finish() {
	slurm_stop
	stop_daemon
	if [ "$TAP_FAILED" != 0 ]; then
		echo "# task logs:"; tail -n 8 "$T"/out*/logs/*.log 2>/dev/null | sed 's/^/#   /'
		slurm_logs
	fi
	cleanup
}
trap finish EXIT

# how long each part took, for the log
phase_start=$(date +%s%N)
phase() {
	local now
	now=$(date +%s%N)
	echo "# $1: $(((now - phase_start) / 1000000)) ms"
	phase_start=$now
}

slurm_start || { echo "not ok 1 - Slurm starts"; exit 1; }
phase "Slurm started"

mkdir -p "$T/data" "$T/more"
for i in 1 2 3 4 5 6 7; do "$MKSAMPLE" "$T/data/img$i.png" 16 16 "$i" >/dev/null; done
"$MKSAMPLE" "$T/more/img1.png" 16 16 11 >/dev/null # a second img1
# the sanitizer build (VKINR_SANITIZED) fits fewer epochs
E=${VKINR_SANITIZED:+10}; E=${E:-20}
LONG_E=${VKINR_SANITIZED:+150}; LONG_E=${LONG_E:-300}
FIT=(--epochs "$E" --width 16 --lr 2e-3 --allow-cpu)
# what the test node has (slurm.bash: 1000 MB), not the stated defaults
SL=(--mem 200M --cpus-per-task 1)

# results as "name state psnr" lines, and the files of every folder
results() {
	python3 - "$1" <<'PY'
import json, os, sys
out = sys.argv[1]
for name in sorted(os.listdir(out)):
    p = os.path.join(out, name, "result.json")
    if name.startswith(".") or not os.path.exists(p):
        continue
    r = json.load(open(p))
    files = sorted(f for f in os.listdir(os.path.join(out, name)) if not f.startswith("."))
    print(name, r["state"], r.get("psnr", "-"), files)
PY
}
export -f results

check "--dry-run prints the array script and writes nothing" bash -c '
	"'$CTL'" submit --slurm --out "'$T'/dry" "'$T'/data" --tasks 4 --dry-run >"'$T'/dry.sh" &&
	grep -q "^#SBATCH --array=0-3$" "'$T'/dry.sh" &&
	grep -q "^#SBATCH --gres=gpu:1$" "'$T'/dry.sh" &&
	grep -q "^#SBATCH --signal=B:USR1@" "'$T'/dry.sh" &&
	grep -q -- "--fit-task" "'$T'/dry.sh" && [ ! -e "'$T'/dry" ]'

# 1. eight images over four tasks
JOB=$("$CTL" submit --slurm -q --out "$T/out" "$T/data" "$T/more/img1.png" --tasks 4 "${FIT[@]}" "${SL[@]}" 2>"$T/submit.err")
check "submit prints the Slurm job id of a 4-task array" bash -c '
	[[ "'$JOB'" =~ ^[0-9]+$ ]] &&
	[ "$(grep -c . "'$T'/out/.vkinr/images.tsv")" = 8 ] &&
	scontrol -o show job "'$JOB'" | grep -q "ArrayTaskId="'
"$CTL" wait --out "$T/out" >"$T/wait1.out" 2>&1
wait_rc=$?
check "wait --out: every image done, exit 0" bash -c '
	[ '$wait_rc' = 0 ] && grep -q "8 images: 8 done, 0 failed, 0 not ended" "'$T'/wait1.out" &&
	[ "$(results "'$T'/out" | grep -c "done [0-9.]* \[.metrics.ndjson., .model.safetensors., .recon.png., .result.json.\]")" = 8 ] &&
	[ -d "'$T'/out/img1" ] && [ -d "'$T'/out/img1-2" ] &&
	grep -q "more/img1.png" "'$T'/out/img1-2/result.json"' || cat "$T/wait1.out"

phase "8 images over 4 tasks, waited for"
start_daemon
phase "daemon started"
check "every package renders at its reported PSNR" python3 - "$T/out" "$CTL" <<'PY'
import glob, json, os, subprocess, sys
out, ctl = sys.argv[1], sys.argv[2]
results = sorted(glob.glob(os.path.join(out, "*", "result.json")))
assert len(results) == 8, results
for path in results:
    r = json.load(open(path))
    model = os.path.join(os.path.dirname(path), "model.safetensors")
    got = json.loads(subprocess.run(
        [ctl, "--json", "infer", model, "--target", r["file"], "--force",
         "-o", os.path.join(out, "render.png")],
        check=True, capture_output=True, text=True).stdout)["psnr"]
    print(r["name"], r["psnr"], got)
    assert abs(got - r["psnr"]) < 1e-4, (r, got)
PY
phase "rendered"
stop_daemon
phase "daemon stopped"

check "list --out --csv and --json give every image" bash -c '
	"'$CTL'" list --out "'$T'/out" --csv >"'$T'/list.csv" &&
	head -1 "'$T'/list.csv" | grep -q "^name,file,state,width,height,epochs,psnr,seconds,device" &&
	[ "$(grep -c ",done,16,16,'$E'," "'$T'/list.csv")" = 8 ] &&
	"'$CTL'" --json list --out "'$T'/out" | python3 -c "
import json, sys
o = json.load(sys.stdin)
assert o[\"done\"] == 8 and len(o[\"images\"]) == 8, o"'

# 2. the same submission again: nothing is refitted
stat -c '%n %i %Y' "$T"/out/*/result.json "$T"/out/*/model.safetensors >"$T/before"
JOB2=$("$CTL" submit --slurm -q --out "$T/out" "$T/data" "$T/more/img1.png" --tasks 4 "${FIT[@]}" "${SL[@]}" 2>>"$T/submit.err")
"$CTL" wait --out "$T/out" >/dev/null 2>&1
for _ in $(seq 1 100); do [ -z "$(squeue -h -j "$JOB2")" ] && break; sleep 0.1; done
stat -c '%n %i %Y' "$T"/out/*/result.json "$T"/out/*/model.safetensors >"$T/after"
check "submitting again refits nothing" bash -c '
	diff "'$T'/before" "'$T'/after" &&
	[ "$(grep -h "0 fitted, [0-9] skipped, 0 failed" "'$T'"/out/logs/'$JOB2'_*.log | wc -l)" = 4 ] &&
	[ "$(grep -c . "'$T'/out/.vkinr/images.tsv")" = 8 ]'
phase "resubmitted"

# 3. a task warned (USR1) mid-fit checkpoints, is requeued and resumes
printf 'long\t%s\n' "$T/data/img3.png" >"$T/long.tsv"
LONG=(--epochs "$LONG_E" --width 16 --lr 2e-3 --allow-cpu)
"$VKINRD" --fit-task "$T/long.tsv" --out "$T/uninterrupted" -q "${LONG[@]}" 2>"$T/unint.err"
JOB3=$("$CTL" submit --slurm -q --out "$T/out3" "$T/data/img3.png" "${LONG[@]}" "${SL[@]}" 2>>"$T/submit.err")
log3=$T/out3/logs/${JOB3}_0.log
# the first progress line (a tenth of the way) says it is fitting
for _ in $(seq 1 600); do grep -q "epoch [0-9]*/$LONG_E" "$log3" 2>/dev/null && break; sleep 0.05; done
scancel --signal=USR1 --batch "${JOB3}_0"
"$CTL" wait --out "$T/out3" >"$T/wait3.out" 2>&1
wait3_rc=$?
phase "interrupted, requeued and resumed"
check "the warned task checkpointed mid-fit and was requeued" bash -c '
	[ '$wait3_rc' = 0 ] && grep -q "signal 10 at epoch [1-9][0-9]*: checkpointed" "'$log3'" &&
	python3 -c "import json,sys; r = json.load(open(sys.argv[1])); assert 0 < r[\"resumed_from\"] < '$LONG_E', r" "'$T'/out3/img3/result.json" &&
	[ ! -e "'$T'/out3/img3/checkpoint.safetensors" ]' || cat "$log3"
check "the resumed fit ends bit for bit as an uninterrupted one" bash -c '
	python3 -c "
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
print(a[\"psnr\"], b[\"psnr\"]); assert a[\"psnr\"] == b[\"psnr\"] and a[\"epochs\"] == b[\"epochs\"] == '$LONG_E'" "'$T'/uninterrupted/long/result.json" "'$T'/out3/img3/result.json" &&
	cmp "'$T'/uninterrupted/long/model.safetensors" "'$T'/out3/img3/model.safetensors" &&
	cmp "'$T'/uninterrupted/long/recon.png" "'$T'/out3/img3/recon.png" &&
	[ "$(grep -c . "'$T'/out3/img3/metrics.ndjson")" = '$LONG_E' ]'

# 4. missing and broken files among good ones
printf 'this is text, not a PNG\n' >"$T/more/text.png"
head -c 100 "$T/data/img2.png" >"$T/more/cut.png"
printf '%s\n' "$T/data/img4.png" "$T/more/missing.png" "$T/more/text.png" \
	"# a comment" "$T/more/cut.png" "$T/data/img5.png" >"$T/list"
JOB4=$("$CTL" submit --slurm -q --out "$T/out4" --from-file "$T/list" --tasks 2 "${FIT[@]}" "${SL[@]}" 2>"$T/submit4.err")
submit4_rc=$?
"$CTL" wait --out "$T/out4" >"$T/wait4.out" 2>&1
wait4_rc=$?
phase "bad inputs"
check "a missing file is named at submission (exit 3), the rest submitted" bash -c '
	[ '$submit4_rc' = 3 ] && [[ "'$JOB4'" =~ ^[0-9]+$ ]] &&
	grep -q "missing.png" "'$T'/submit4.err" &&
	! grep -q "img4\|img5\|text.png\|cut.png" "'$T'/submit4.err"'
check "broken files fail alone with the reason; wait exits 1" bash -c '
	[ '$wait4_rc' = 1 ] && grep -q "4 images: 2 done, 2 failed" "'$T'/wait4.out" &&
	"'$CTL'" --json list --out "'$T'/out4" | python3 -c "
import json, sys
o = json.load(sys.stdin)
s = {i[\"name\"]: i for i in o[\"images\"]}
assert s[\"img4\"][\"state\"] == s[\"img5\"][\"state\"] == \"done\", s
assert s[\"text\"][\"state\"] == s[\"cut\"][\"state\"] == \"failed\", s
assert \"PNG\" in s[\"text\"][\"error\"] and s[\"cut\"][\"error\"], s"'

check "a task given no GPU, or one Vulkan does not show, fails without --allow-cpu" bash -c '
	! SLURM_JOB_ID=1 "'$VKINRD'" --fit-task "'$T'/long.tsv" --out "'$T'/nogpu" 2>"'$T'/nogpu.err" &&
	grep -q "given no GPU" "'$T'/nogpu.err" &&
	! CUDA_VISIBLE_DEVICES=GPU-00112233-4455-6677-8899-aabbccddeeff "'$VKINRD'" --fit-task "'$T'/long.tsv" --out "'$T'/nogpu" 2>"'$T'/nogpu.err" &&
	grep -q "CUDA_VISIBLE_DEVICES names GPU-00112233" "'$T'/nogpu.err" && [ ! -e "'$T'/nogpu/long" ]'

# 5. an --out with a space, a throttle and a --setup line
SP="$T/out with space"
JOB5=$("$CTL" submit --slurm -q --out "$SP" "$T/data/img1.png" "$T/data/img2.png" \
	--max-running 1 --setup 'export VKINR_SETUP_RAN=yes; echo "setup ran: $VKINR_SETUP_RAN"' \
	"${FIT[@]}" "${SL[@]}" 2>"$T/submit5.err")
"$CTL" wait --out "$SP" >"$T/wait5.out" 2>&1
wait5_rc=$?
phase "out with a space"
check "an --out with a space, --max-running 1 and --setup: fitted, logs in OUT/logs" bash -c '
	[ '$wait5_rc' = 0 ] && grep -q "2 images: 2 done" "'$T'/wait5.out" &&
	grep -q "^#SBATCH --array=0-1%1$" "'"$SP"'/.vkinr/fit.sbatch" &&
	! grep -q "'$BUILD'" "'"$SP"'/.vkinr/fit.sbatch" &&
	[ "$(cat "'"$SP"'"/logs/'$JOB5'_*.log | grep -c "setup ran: yes")" = 2 ] &&
	[ -f "'"$SP"'/img1/result.json" ] && [ -f "'"$SP"'/img2/model.safetensors" ]' ||
	{ cat "$T/wait5.out" "$T/submit5.err"; ls -R "$SP"; }

check "no temporary file is left in any result folder" bash -c '
	! find "'$T'"/out "'$T'"/out3 "'$T'"/out4 -name "*.tmp*" | grep -q .'
tap_done
