#!/bin/bash
# 69_slurm_options.sh - the Slurm path takes the same fit options as the
# others, without a Slurm cluster: `vkinrctl submit --slurm --dry-run`
# with the recipe, --precision and --dilations writes them into the
# batch script's vkinrd --fit-task line; a bad value is refused with the
# sentence and exit status of plain submit (and of vkinrd --fit for
# --fit-task); and vkinrd --fit-task given a recipe fits a 16x16 image
# with it, result.json and the model package recording it. The script is
# one an admin accepts: --sbatch as #SBATCH lines, --max-running as the
# array's throttle, stated --time, --mem and --cpus-per-task, logs in
# OUT/logs, vkinrd from PATH (or --vkinrd) and never the build tree's,
# --setup lines, every path quoted (an OUT with a space and a quote, the
# script run by hand fitting into it); --gpus-per-task 0 without
# --allow-cpu is refused at submission; --json --dry-run prints JSON.
. "$(dirname "$0")/lib.bash"
tap_plan 8
CTL=$BUILD/vkinrctl

mkdir -p "$T/data"
"$MKSAMPLE" "$T/data/a.png" 16 16 3 >/dev/null
RECIPE=(--optimizer adam --schedule exp --warmup 2 --plateau 1 --lr-min 0.2
	--half-life 7 --average ema --ema-decay 0.9 --ssim 0.1 --grad 0.2
	--chroma 0 --precision fp32 --dilations 1,2)

check "submit --slurm --dry-run passes the recipe to vkinrd --fit-task" bash -c '
	"'$CTL'" submit --slurm --out "'$T'/dry" --dry-run --epochs 5 --width 16 \
		'"${RECIPE[*]}"' "'$T'/data" >"'$T'/dry.sh" &&
	grep -- "--fit-task" "'$T'/dry.sh" &&
	grep -qF -- " --epochs 5 --width 16 '"${RECIPE[*]}"'" "'$T'/dry.sh" &&
	[ ! -e "'$T'/dry" ]'

check "--sbatch, --max-running, --time, --mem, --cpus-per-task and --setup are in the script" bash -c '
	"'$CTL'" submit --slurm --out "'$T'/dry" --dry-run --max-running 3 \
		--sbatch "--partition gpu --account=\"my lab\" --qos=long" \
		--setup "module load vulkan" --setup "echo ready" "'$T'/data" >"'$T'/adm.sh" 2>"'$T'/adm.err" &&
	cat "'$T'/adm.sh" &&
	grep -qx "#SBATCH --array=0-0%3" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --partition gpu" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --account=\"my lab\"" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --qos=long" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --time=08:00:00" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --mem=4G" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --cpus-per-task=2" "'$T'/adm.sh" &&
	grep -qx "#SBATCH --output=\"\?'$T'/dry/logs/%A_%a.log\"\?" "'$T'/adm.sh" &&
	[ "$(grep -A2 "^# from --setup" "'$T'/adm.sh" | tail -2)" = "module load vulkan
echo ready" ] &&
	! grep -q "'$BUILD'" "'$T'/adm.sh" && grep -q "command -v vkinrd" "'$T'/adm.sh" &&
	"'$CTL'" submit --slurm --out "'$T'/dry" --dry-run --time 30 --mem 500M \
		--cpus-per-task 1 --vkinrd /opt/vk/vkinrd "'$T'/data" >"'$T'/adm2.sh" &&
	grep -qx "#SBATCH --time=30" "'$T'/adm2.sh" && grep -qx "#SBATCH --mem=500M" "'$T'/adm2.sh" &&
	grep -qx "#SBATCH --cpus-per-task=1" "'$T'/adm2.sh" &&
	grep -qx "vkinrd='"'"'/opt/vk/vkinrd'"'"'" "'$T'/adm2.sh" && [ ! -e "'$T'/dry" ]'

check "--gpus-per-task 0 without --allow-cpu is refused at submission (exit 2)" bash -c '
	"'$CTL'" submit --slurm --out "'$T'/dry" --dry-run --gpus-per-task 0 "'$T'/data" 2>"'$T'/g0.err"
	rc=$?; cat "'$T'/g0.err"
	[ $rc = 2 ] && grep -q "allow-cpu" "'$T'/g0.err" &&
	"'$CTL'" submit --slurm --out "'$T'/dry" --dry-run --gpus-per-task 0 --allow-cpu "'$T'/data" >"'$T'/g0.sh" &&
	! grep -q gres "'$T'/g0.sh" && grep -q -- "--allow-cpu" "'$T'/g0.sh"'

check "--json --dry-run prints only JSON, the script inside" bash -c '
	"'$CTL'" --json submit --slurm --out "'$T'/dry" --dry-run --epochs 3 "'$T'/data" 2>/dev/null |
	python3 -c "
import json, sys
o = json.load(sys.stdin)
assert o[\"tasks\"] == 1 and o[\"images\"] == 1 and o[\"missing\"] == 0, o
assert o[\"script\"].startswith(\"#!/bin/bash\") and \" --epochs 3\" in o[\"script\"], o"'

# plain submit checks its options before it looks for the daemon
same_refusal() {
	local a b rca rcb
	a=$("$CTL" submit --slurm --out "$T/bad" --dry-run "$@" "$T/data" 2>&1 >/dev/null); rca=$?
	b=$("$CTL" submit "$@" "$T/data" 2>&1 >/dev/null); rcb=$?
	echo "slurm ($rca): $a"; echo "plain ($rcb): $b"
	[ "$rca" = 2 ] && [ "$rcb" = 2 ] && [ "$a" = "$b" ] && [ -n "$a" ]
}
check "a bad value is refused as plain submit refuses it (exit 2)" bash -c "
	$(declare -f same_refusal); CTL='$CTL' T='$T'
	same_refusal --chroma 500 && same_refusal --optimizer sgd &&
	same_refusal --schedule sometimes && same_refusal --dilations 0,a &&
	same_refusal --precision fp8 && same_refusal --ema-decay 1"

check "vkinrd --fit-task refuses a bad recipe as --fit does (exit 2)" bash -c '
	a=$("'$VKINRD'" --fit-task "'$T'/m.tsv" --out "'$T'/x" --optimizer sgd 2>&1 | head -1)
	set -o pipefail
	"'$VKINRD'" --fit-task "'$T'/m.tsv" --out "'$T'/x" --optimizer sgd 2>/dev/null; rc=$?
	b=$("'$VKINRD'" --fit "'$T'/data/a.png" --optimizer sgd 2>&1 | head -1)
	echo "task ($rc): $a"; echo "fit: $b"
	[ "$rc" = 2 ] && [ "$a" = "$b" ] && [ -n "$a" ] && [ ! -e "'$T'/x" ]'

if ! "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
	skip "no Vulkan device"
	skip "no Vulkan device"
else
	# the script as written, run by hand as task 0 (a stand-in sbatch
	# takes the submission): an OUT with a space and a quote, vkinrd
	# found on PATH
	mkdir -p "$T/bin"
	printf '#!/bin/sh\necho 4242\n' >"$T/bin/sbatch"
	chmod +x "$T/bin/sbatch"
	ODD="$T/my results/it's here"
	check "the script quotes every path: an OUT with a space and a quote is fitted into" bash -c '
		export PATH="'$T'/bin:'$BUILD':$PATH"
		"'$CTL'" submit --slurm -q --out "$1" --epochs 2 --width 16 --allow-cpu \
			--gpus-per-task 0 "'$T'/data" >"'$T'/odd.id" &&
		[ "$(cat "'$T'/odd.id")" = 4242 ] && [ -d "$1/logs" ] &&
		bash -n "$1/.vkinr/fit.sbatch" &&
		SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_JOB_ID=4242 bash "$1/.vkinr/fit.sbatch" &&
		python3 -c "import json, sys; r = json.load(open(sys.argv[1])); assert r[\"state\"] == \"done\", r" "$1/a/result.json"' _ "$ODD"

	printf 'a\t%s\n' "$T/data/a.png" >"$T/m.tsv"
	check "vkinrd --fit-task fits with the recipe and records it" bash -c '
		"'$VKINRD'" --fit-task "'$T'/m.tsv" --out "'$T'/out" -q --allow-cpu \
			--epochs 4 --width 16 '"${RECIPE[*]}"' &&
		python3 - "'$T'/out/a" <<"PY"
import json, struct, sys
d = sys.argv[1]
r = json.load(open(d + "/result.json"))
blob = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
meta = json.loads(blob[8:8 + n])["__metadata__"]
want = {"optimizer": "adam", "schedule": "exp", "warmup": 2, "plateau": 1,
        "lr_min": 0.2, "half_life": 7, "average": "ema", "ema_decay": 0.9,
        "ssim": 0.1, "grad": 0.2, "chroma": 0, "dilations": "1,2"}
got = {k: type(v)(meta.get(k)) for k, v in want.items()}
print(r, meta, sep="\n")
assert r["state"] == "done" and r["epochs"] == 4, r
assert "optimizer adam schedule exp warmup 2 plateau 1" in r["settings"], r
assert "dilations=1,2" in r["settings"] and "ssim 0.1 grad 0.2 chroma 0" in r["settings"], r
assert got == want, got
PY'
fi
tap_done
