#!/bin/bash
# 10_fit_cli.sh - `vkinrd --fit` end to end on real PNG files: NDJSON
# metrics, the summary, the model package and reconstruction, stop and
# resume giving the same metrics as an uninterrupted run, --init, refused
# inputs, and (when Debian's PyTorch is installed) the PyTorch peer loading
# the exported package and measuring the same PSNR.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device

"$MKSAMPLE" "$T/img.png" 37 23 3
FIT=("$VKINRD" --fit "$T/img.png" --width 16 --lr 1e-3 --warmup 5 -q)

check "fit prints one JSON object per epoch and a summary" bash -c '
	"$@" --epochs 40 --json --model "'$T'/m.safetensors" --recon "'$T'/r.png" >"'$T'/full.ndjson" &&
	python3 - "'$T'/full.ndjson" <<PY
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r for r in rows if "epoch" in r and "done" not in r]
assert [r["epoch"] for r in epochs] == list(range(1, 41)), "epochs 1..40"
best = 0
for r in epochs:
    assert set(r) >= {"epoch", "mse", "psnr", "lr", "ms", "psnr_best"}, r
    # psnr_best: the running maximum of every measurement
    best = max(best, r["psnr"], r.get("psnr_average", 0))
    assert abs(r["psnr_best"] - best) < 2e-6, (r, best)
s = rows[-1]
assert s["done"] is True and s["epochs"] == 40 and s["width"] == 16, s
assert {"psnr", "seconds", "device"} <= set(s), s
# the mean beside the median: the wall time of the training loop over its
# epochs, which the times of the epochs (evaluations included) fill
assert abs(s["ms_per_epoch_mean"] * 40 - s["train_seconds"] * 1e3) < 1.5, s
assert s["ms_per_epoch_mean"] * 40 >= 0.999 * sum(r["ms"] for r in epochs), s
assert 0 < s["train_seconds"] <= s["seconds"], s
assert epochs[-1]["psnr"] > epochs[0]["psnr"] + 3, "it learns"
# the export takes the best model, or better weights
assert s["psnr"] >= best - 1e-3 and s["weights"], (s, best)
PY' _ "${FIT[@]}"

check "writes the model package and the reconstruction" bash -c '
	head -c 8 "'$T'/r.png" | od -An -tx1 | grep -q "89 50 4e 47" &&
	python3 - "'$T'/m.safetensors" <<PY
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
m = h["__metadata__"]
assert m["format"] == "vkinr-convsiren" and m["nf"] == "16", m
assert m["dilations"] == "1,2,4,8" and m["width"] == "37" and m["height"] == "23", m
assert h["first.weight"]["shape"] == [16, 2, 1, 1]
assert h["dw.3.weight"]["shape"] == [16, 1, 3, 3]
assert h["pw.0.weight"]["shape"] == [16, 16, 1, 1]
assert h["out.weight"]["shape"] == [3, 16, 1, 1] and h["out.bias"]["shape"] == [3]
PY'

check "stop at epoch 15, resume: the same metrics as one run" bash -c '
	"$@" --epochs 40 --stop-after 15 --checkpoint "'$T'/ck.safetensors" --json >"'$T'/a.ndjson" &&
	"'$VKINRD'" --fit "'$T'/img.png" --resume "'$T'/ck.safetensors" -q --json >"'$T'/b.ndjson" &&
	python3 - "'$T'" <<PY
import json, sys
t = sys.argv[1]
def ep(path):
    return [json.loads(l) for l in open(path) if "\"done\"" not in l]
full, a, b = ep(t + "/full.ndjson"), ep(t + "/a.ndjson"), ep(t + "/b.ndjson")
assert [r["epoch"] for r in a] == list(range(1, 16))
assert [r["epoch"] for r in b] == list(range(16, 41))
for x, y in zip(full, a + b):
    keys = ("epoch", "mse", "lr", "psnr_best")
    assert [x[k] for k in keys] == [y[k] for k in keys], (x, y)
PY' _ "${FIT[@]}"

check "a damaged checkpoint is refused" bash -c '
	cp "'$T'/ck.safetensors" "'$T'/bad.safetensors" &&
	printf "\x55" | dd of="'$T'/bad.safetensors" bs=1 seek=$(( $(stat -c %s "'$T'/bad.safetensors") - 9 )) conv=notrunc 2>/dev/null &&
	! "'$VKINRD'" --fit "'$T'/img.png" --resume "'$T'/bad.safetensors" -q 2>"'$T'/err" &&
	grep -qi "corrupt\|checksum" "'$T'/err"'

check "--init starts from a model package (where the first fit ended)" bash -c '
	"$@" --epochs 1 --init "'$T'/m.safetensors" --json | head -1 >"'$T'/init.json" &&
	python3 - "'$T'" <<PY
import json, sys
t = sys.argv[1]
first = json.load(open(t + "/init.json"))
final = json.loads(open(t + "/full.ndjson").readlines()[-1])
assert abs(first["psnr"] - final["psnr"]) < 1e-3, (first, final)
PY' _ "${FIT[@]}"

check "a corrupt PNG is refused with a message" bash -c '
	head -c 200 "'$T'/img.png" >"'$T'/cut.png" &&
	! "$@" --epochs 1 2>"'$T'/err" && grep -qi "png" "'$T'/err"' _ "$VKINRD" --fit "$T/cut.png" -q

check "a bad width is refused with a message" bash -c '
	! "$@" 2>"'$T'/err" && grep -q "multiple of 16" "'$T'/err"' _ "$VKINRD" --fit "$T/img.png" --width 24 --epochs 1 -q

check "tiles: a tiled fit gives the metrics of the untiled one" bash -c '
	"$@" --epochs 5 --json --max-tile 12 >"'$T'/tiled.ndjson" &&
	python3 - "'$T'" <<PY
import json, sys
t = sys.argv[1]
full = [json.loads(l) for l in open(t + "/full.ndjson")][:5]
tiled = [json.loads(l) for l in open(t + "/tiled.ndjson")]
assert tiled[-1]["tiles"] > 1, tiled[-1]
for x, y in zip(full, tiled[:5]):
    assert abs(x["psnr"] - y["psnr"]) < 1e-3, (x, y)
PY' _ "${FIT[@]}"

# The PyTorch peer (Debian's python3-torch) loads the package and renders it.
PEER=${PEER:-$ROOT/../shared/peer/torch_convsiren.py}
PEER_PYTHON=${PEER_PYTHON:-/usr/bin/python3}
if [ -f "$PEER" ] && "$PEER_PYTHON" -c "import torch, numpy, PIL" 2>/dev/null; then
	check "the PyTorch peer loads the package and measures the same PSNR" bash -c '
		ours=$(tail -1 "'$T'/full.ndjson" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"psnr\"])") &&
		theirs=$("'$PEER_PYTHON'" "'$PEER'" --image "'$T'/img.png" --load "'$T'/m.safetensors" --epochs 0 --device cpu |
			sed -n "s/^RESULT //p" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"final_psnr\"])") &&
		echo "vkinrd $ours dB, peer $theirs dB" &&
		python3 -c "import sys; d=abs($ours-$theirs); print(\"difference\", d); sys.exit(d > 0.05)"'
else
	skip "the PyTorch peer needs Debian python3-torch, python3-numpy, python3-pil"
fi
tap_done
