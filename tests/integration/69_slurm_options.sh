#!/bin/bash
# 69_slurm_options.sh - the Slurm path takes the same fit options as the
# others, without a Slurm cluster: `vkinrctl submit --slurm --dry-run`
# with the recipe, --precision and --dilations writes them into the
# batch script's vkinrd --fit-task line; a bad value is refused with the
# sentence and exit status of plain submit (and of vkinrd --fit for
# --fit-task); and vkinrd --fit-task given a recipe fits a 16x16 image
# with it, result.json and the model package recording it.
. "$(dirname "$0")/lib.bash"
tap_plan 4
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
else
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
