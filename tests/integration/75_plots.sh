#!/bin/bash
# 75_plots.sh - plots people can read, from real jobs: ticks with round
# labels and a grid on every panel, lower-case titles, the jobs named in
# the legend with no two entries overlapping, the model's PSNR and the live
# PSNR each on a panel of its own, --time putting the wall clock's time
# on the x axis (local times of day; a job that ran later drawn to the
# right) and --train-time the training seconds, tick labels that never
# repeat and whole epochs on a run of three epochs, and a job with no
# epoch yet drawn as a sentence, not as empty axes (SVG and PNG).
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import re, struct, subprocess
import xml.etree.ElementTree as ET
from rpc import *
tap = Tap()
NS = "{http://www.w3.org/2000/svg}"
imgs = [sample("n%d.png" % i, 16, 16) for i in range(5)]
names = ["a-rather-long-job-name-%d" % i for i in range(5)]
ids = []
for img, name in zip(imgs, names):
    ids.append(ctl("submit", "-q", "--epochs", "20", "--width", "16",
                   "--name", name, img).stdout.strip())
ctl("wait", *ids)
svg = os.path.join(T, "p.svg")
r = ctl("plot", *ids, "-o", svg)
root = ET.parse(svg).getroot() if r.returncode == 0 else None
texts = [t.text or "" for t in root.iter(NS + "text")] if root is not None else []
legend = [t for t in root.iter(NS + "text") if (t.text or "").startswith("job ")] if root is not None else []
tap.ok(r.returncode == 0 and all(any(("job %s %s" % (i, n)) == t for t in texts)
                                 for i, n in zip(ids, names)),
       "the legend names every job: id and name", texts)
# no two legend entries overlap: on one row, each starts after the last ends
boxes = sorted((float(t.get("y")), float(t.get("x")), len(t.text) * 7) for t in legend)
ok = len(boxes) == 5 and all(not (a[0] == b[0] and b[1] < a[1] + a[2]) for a, b in zip(boxes, boxes[1:]))
tap.ok(ok and len({b[0] for b in boxes}) >= 2, "... wrapped over rows, no two overlapping", boxes)
ticks = [t for t in texts if re.fullmatch(r"-?[\d.e+-]+", t)]
grid = [l for l in root.iter(NS + "line") if l.get("stroke") == "#e4e4e4"] if root is not None else []
tap.ok(len(ticks) >= 15 and len(grid) >= 15
       and "psnr (dB)" in texts and "mse (log scale)" in texts and "epoch" in texts,
       "ticks with labels and a grid on the panels; lower-case titles",
       (len(ticks), len(grid), texts[:12]))
dashed = [l for l in root.iter(NS + "polyline") if l.get("stroke-dasharray")] if root is not None else []
tap.ok(not dashed and "live psnr (dB)" in texts
       and any("psnr: the model's" in t and "live psnr" in t for t in texts),
       "the model's PSNR and the live PSNR each have a panel, and the key says which is which",
       (len(dashed), texts[:12]))

r = ctl("plot", ids[0], ids[4], "--time", "-o", os.path.join(T, "t.svg"))
root = ET.parse(os.path.join(T, "t.svg")).getroot() if r.returncode == 0 else None
texts = [t.text for t in root.iter(NS + "text")] if root is not None else []
clock = [t for t in texts if re.fullmatch(r"\d\d:\d\d:\d\d", t or "")]
lines = [[float(p.split(",")[0]) for p in l.get("points").split()] for l in root.iter(NS + "polyline")] if root is not None else []
tap.ok(len(clock) >= 2 and clock == sorted(set(clock)) and texts[-1].startswith("wall-clock time (local")
       and len(lines) >= 2 and max(lines[0]) < min(lines[1]),
       "--time: the wall clock's time on the x axis, the later job to the right", (texts[-8:], lines[:2]))
r = ctl("plot", ids[0], "--train-time", "-o", os.path.join(T, "tt.svg"))
texts = [t.text for t in ET.parse(os.path.join(T, "tt.svg")).getroot().iter(NS + "text")] if r.returncode == 0 else []
tap.ok("training time (s)" in texts, "--train-time: training seconds on the x axis", texts[-3:])

# a short run: every panel's labels its own, whole epochs below
short = ctl("submit", "-q", "--epochs", "3", "--width", "16", imgs[2]).stdout.strip()
ctl("wait", short)
r = ctl("plot", short, "-o", os.path.join(T, "s.svg"))
groups, xs = [], []
for t in (ET.parse(os.path.join(T, "s.svg")).getroot().iter(NS + "text") if r.returncode == 0 else []):
    if t.text in ("psnr (dB)", "live psnr (dB)", "mse (log scale)", "learning rate"):
        groups.append([])
    elif groups and t.get("text-anchor") == "end" and float(t.get("x")) < 90:
        groups[-1].append(t.text)
    elif groups and re.fullmatch(r"[\d.e+-]+", t.text or ""):
        xs.append(t.text)
tap.ok(len(groups) == 4 and all(len(g) >= 2 and len(set(g)) == len(g) for g in groups)
       and xs and all(re.fullmatch(r"\d+", x) for x in xs),
       "a run of three epochs: no panel repeats a tick label, the epochs are whole", (groups, xs))

# a job with no epoch yet: one long job ahead of it on the one worker
busy = ctl("submit", "-q", "--epochs", "100000", "--width", "16", imgs[0]).stdout.strip()
idle = ctl("submit", "-q", "--epochs", "20", "--width", "16", "--name", "later", imgs[1]).stdout.strip()
r1 = ctl("plot", idle, "-o", os.path.join(T, "e.svg"))
r2 = ctl("plot", idle, "-o", os.path.join(T, "e.png"))
doc = open(os.path.join(T, "e.svg")).read() if r1.returncode == 0 else ""
tap.ok(r1.returncode == 0 and r2.returncode == 0 and "has no epochs yet" in doc
       and "<polyline" not in doc and "<rect x=" not in doc,
       "a job with no epoch yet: a sentence, no empty axes", doc[-300:])
ctl("cancel", busy, idle)
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
