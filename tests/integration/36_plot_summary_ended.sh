#!/bin/bash
# 36_plot_summary_ended.sh - `plot --summary`'s curve counts a job that
# ended at its final PSNR after its last epoch (found on the walk through
# the README: a batch with --target-psnr, whose best jobs stop early,
# drew a mean that fell each time one of them left, and ended at the
# worst job's PSNR, not at the final PSNRs' mean that the line above it
# gives). Two jobs: a quick one fitted well (60 epochs), a long one whose
# tiny learning rate keeps it low (120 epochs). Each job's PSNR is its
# best model's, which never falls, so the mean over epochs must not fall
# either when the good one ends; and the curve's last point is the final
# PSNRs' mean.
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import os, subprocess, sys, xml.etree.ElementTree as ET
from rpc import *
tap = Tap()
T = os.environ["T"]
NS = "{http://www.w3.org/2000/svg}"
for name, seed in (("good", "1"), ("slow", "2")):
    subprocess.run([os.environ["MKSAMPLE"], os.path.join(T, name + ".png"), "16", "16", seed],
                   check=True, capture_output=True)
ctl("submit", "--epochs", "60", "--width", "16", "--name", "good", os.path.join(T, "good.png"))
ctl("submit", "--epochs", "120", "--width", "16", "--lr", "1e-5", "--name", "slow",
    os.path.join(T, "slow.png"))
ctl("wait", "good", "slow", timeout=600)
svg = os.path.join(T, "sum.svg")
r = ctl("--json", "plot", "good", "slow", "--summary", "-o", svg)
root = ET.parse(svg).getroot() if r.returncode == 0 else None
mean = [p for p in root.iter(NS + "polyline")
        if p.get("stroke") == "#1f77b4" and p.get("stroke-width") == "2"] if root is not None else []
ys = [float(p.split(",")[1]) for p in mean[0].get("points").split()] if mean else []
# y grows downwards: a falling PSNR is a rising y
tap.ok(len(ys) > 100 and all(b <= a + 1e-6 for a, b in zip(ys, ys[1:])),
       "the mean over epochs does not fall when the good job ends at epoch 60",
       (r.returncode, r.stderr, len(ys), max((b - a for a, b in zip(ys, ys[1:])), default=None)))
# at the last epoch both jobs count: the least and the most lines apart,
# the mean halfway between them (without the good job there, all three
# are one point)
edges = [p for p in root.iter(NS + "polyline") if p.get("stroke") == "#7f7f7f"] if root is not None else []
end = [float(e.get("points").split()[-1].split(",")[1]) for e in edges[:2]]
tap.ok(len(end) == 2 and ys and abs(end[0] - end[1]) > 10 and abs(ys[-1] - sum(end) / 2) < 0.5,
       "the curve ends at the two jobs' mean, the ended one counted at its final PSNR",
       (ys[-1] if ys else None, end))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
