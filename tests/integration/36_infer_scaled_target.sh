#!/bin/bash
# 36_infer_scaled_target.sh - the README's `infer MODEL -o OUT --target
# photo` after `submit photo --max-side N` (which the CPU estimate asks
# for), as a new user tried it: it was refused ("target is 96x64 but the
# model renders 32x21"). Now a target larger than the model's size in
# both directions is scaled down to it first, as the daemon scaled the
# photo for the job, so the PSNR printed is the job's own (within 0.01
# dB) and the line says at what size; a smaller target is still refused.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import json, re
from rpc import *
tap = Tap()
photo = os.path.join(T, "photo.png")
subprocess.run([os.environ["MKSAMPLE"], photo, "96", "64", "4"], check=True,
               stdout=subprocess.DEVNULL)
job = ctl("submit", "-q", "--epochs", "30", "--width", "16", "--max-side", "32", photo).stdout.strip()
ctl("wait", job)
shown = json.loads(ctl("--json", "show", job).stdout or "{}")
model = os.path.join(T, "m.safetensors")
ctl("export", job, "--model", model, "--recon", os.path.join(T, "recon.png"))
r = ctl("infer", model, "-o", os.path.join(T, "again.png"), "--target", photo)
m = re.search(r"PSNR ([\d.]+) dB against \S+ at 32x21", r.stdout)
tap.ok(r.returncode == 0 and m and abs(float(m.group(1)) - shown.get("psnr", 0)) < 0.01,
       "infer --target PHOTO of a job fitted at --max-side 32: the PSNR at 32x21, the job's own",
       (r.returncode, r.stdout, r.stderr, shown.get("psnr")))
r = ctl("--json", "infer", model, "-o", os.path.join(T, "again2.png"), "--target", photo)
got = json.loads(r.stdout) if r.returncode == 0 else {}
tap.ok(abs(got.get("psnr", 0) - shown.get("psnr", 0)) < 0.01, "... and with --json", (r.stdout, r.stderr))
small = os.path.join(T, "small.png")
subprocess.run([os.environ["MKSAMPLE"], small, "16", "16"], check=True, stdout=subprocess.DEVNULL)
r = ctl("infer", model, "-o", os.path.join(T, "again3.png"), "--target", small)
tap.ok(r.returncode == 3 and "16x16" in r.stderr and "32x21" in r.stderr
       and not os.path.exists(os.path.join(T, "again3.png")),
       "a target smaller than the model's size: refused, both sizes named", (r.returncode, r.stderr))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
