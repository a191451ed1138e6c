#!/bin/bash
# 64_peer_render.sh - a model package made by the PyTorch peer
# (../shared/peer/torch_convsiren.py --save) renders through
# `vkinrctl infer --target` with the PSNR the peer reports for it (within
# 0.05 dB), and the same image the peer renders. Skipped when the peer or
# torch (in /usr/bin/python3) is missing.
. "$(dirname "$0")/lib.bash"
tap_plan 4
PEER=${VKINR_PEER:-$ROOT/../shared/peer/torch_convsiren.py}
export PEER_PY=${VKINR_PEER_PYTHON:-/usr/bin/python3}
if [ ! -f "$PEER" ] || ! "$PEER_PY" -c 'import torch, PIL' 2>/dev/null; then
	for i in 1 2 3 4; do echo "ok $i # SKIP the PyTorch peer needs $PEER and torch in $PEER_PY"; done
	exit 0
fi
need_device
"$MKSAMPLE" "$T/img.png" 36 28 7 >/dev/null
if ! "$PEER_PY" "$PEER" --image "$T/img.png" --nf 16 --epochs 30 --lr 1e-3 \
	--save "$T/peer.safetensors" --render "$T/peer.png" --device cpu --seed 5 \
	--threads 1 >"$T/peer.log" 2>&1; then
	echo "not ok 1 - the peer fits and saves a package"; sed 's/^/#   /' "$T/peer.log" | tail -5
	exit 1
fi
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import subprocess
from rpc import *
tap = Tap()
CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"])
res = [json.loads(l[7:]) for l in open(os.path.join(T, "peer.log")) if l.startswith("RESULT ")]
tap.ok(len(res) == 1 and os.path.getsize(os.path.join(T, "peer.safetensors")) > 0,
       "the peer fitted the image and saved its package", res)
peer_psnr = res[0]["final_psnr"] if res else float("nan")
r = subprocess.run([CTL, "--json", "infer", os.path.join(T, "peer.safetensors"),
                    "-o", os.path.join(T, "ours.png"), "--target", os.path.join(T, "img.png")],
                   env=ENV, capture_output=True, text=True, timeout=120)
tap.ok(r.returncode == 0, "infer of the peer's package: exit 0", (r.returncode, r.stderr))
psnr = json.loads(r.stdout)["psnr"] if r.returncode == 0 else float("nan")
tap.ok(abs(psnr - peer_psnr) < 0.05, "the peer's PSNR, within 0.05 dB (%.3f vs %.3f)"
       % (psnr, peer_psnr))
# the two renderings, pixel by pixel (decoded by the peer's own python)
cmp = subprocess.run([os.environ["PEER_PY"], "-c", """
import sys, numpy as np
from PIL import Image
a = np.asarray(Image.open(sys.argv[1]).convert("RGB"), dtype=np.int16)
b = np.asarray(Image.open(sys.argv[2]).convert("RGB"), dtype=np.int16)
print(int(np.abs(a - b).max()) if a.shape == b.shape else "shape", a.shape, b.shape)
""", os.path.join(T, "ours.png"), os.path.join(T, "peer.png")], capture_output=True, text=True)
out = cmp.stdout.split()
tap.ok(cmp.returncode == 0 and out and out[0].isdigit() and int(out[0]) <= 1,
       "the same image as the peer renders (each value within 1 of 255)", (cmp.stdout, cmp.stderr))
tap.done()
EOF_PY
stop_daemon
tap_done
