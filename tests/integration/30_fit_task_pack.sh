#!/bin/bash
# 30_fit_task_pack.sh - `vkinrd --fit-task` (a Slurm array task) trains
# its shard's images as packs, as `vkinrd --fit DIR` and the daemon do
# (issue 30 item 4), and each image comes out as it would alone:
#   - six images of one shard train in one pack, every one done;
#   - an image's model is the same file as `vkinrd --fit IMG --model`;
#   - SIGTERM mid-way checkpoints every image in training and exits 75
#     (the batch script requeues); the task run again resumes them and
#     ends with the same model as a run never stopped.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device

cd "$T" || exit 1
mkdir in
for i in 1 2 3 4 5 6; do "$MKSAMPLE" "in/p$i.png" 16 $((12 + i)) "$i" >/dev/null; done
for i in 1 2 3 4 5 6; do printf 'p%s\t%s\n' "$i" "$T/in/p$i.png"; done >manifest.tsv
TASK=("$VKINRD" --fit-task manifest.tsv --shard 0/1 --width 16 --allow-cpu)
TASKS="${TASK[*]}" # for bash -c (no path here holds a space)

check "six images train as one pack, every one done" bash -c '
	'"$TASKS"' --out out --epochs 4 2>err &&
	grep -q "6 images, in packs of up to [1-9][0-9]*" err &&
	! grep -q "packs of up to 1$" err &&
	[ $(grep -l "\"state\":\"done\"" out/p*/result.json | wc -l) = 6 ]'

check "an image's model is the file a fit of it alone writes" bash -c '
	'"$VKINRD"' --fit in/p3.png --width 16 --epochs 4 -q --model alone3.safetensors &&
	cmp out/p3/model.safetensors alone3.safetensors'

# a long run, stopped once every image has begun
"${TASK[@]}" --out stopped --epochs 120 2>stop.err &
pid=$!
for _ in $(seq 300); do
	[ "$(grep -c ': fitting ' stop.err 2>/dev/null)" = 6 ] && grep -q "epoch 12/120" stop.err && break
	sleep 0.1
done
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM checkpoints every image in training and exits 75" bash -c '
	[ '$rc' = 75 ] && [ $(grep -c "checkpointed" stop.err) = 6 ] &&
	[ $(ls stopped/p*/checkpoint.safetensors | wc -l) = 6 ]'

check "run again, the task resumes them and ends as a run never stopped" bash -c '
	'"$TASKS"' --out stopped --epochs 120 2>again.err &&
	[ $(grep -c ", resumed" again.err) = 6 ] &&
	'"$TASKS"' --out whole --epochs 120 2>/dev/null &&
	for i in 1 2 3 4 5 6; do cmp stopped/p$i/model.safetensors whole/p$i/model.safetensors || exit 1; done'
tap_done
