#!/bin/bash
# 36_plot_text.sh - plots made for reading (issue 36 item 12), from a real
# batch of 20 jobs with long names: the legend names all 20 (the picture
# grows with it), each job has a colour of its own, the PNG is painted by
# cairo (antialiased lines, real grey-shaded text, not a 3x5 pixel font),
# --smooth N evens the curves out, and --summary draws the batch's summary
# (the mean and spread of PSNR over epochs, a histogram of the final
# PSNRs) whose figures --json gives and which match the jobs' own PSNRs.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
need_pil
PACK=20 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import json, re
import xml.etree.ElementTree as ET
from PIL import Image
from rpc import *
tap = Tap()
c = Client()
NS = "{http://www.w3.org/2000/svg}"
os.mkdir(os.path.join(T, "imgs"))
for i in range(20):
    subprocess.run([os.environ["MKSAMPLE"],
                    os.path.join(T, "imgs", "a-rather-long-photo-name-%02d.png" % i),
                    "16", "16", str(i + 1)], check=True)
r = ctl("submit", "--epochs", "40", "--width", "16", os.path.join(T, "imgs"))
m = re.search(r"batch (\w+): 20 jobs", r.stdout)
batch = m.group(1) if m else "?"
ctl("wait", batch, timeout=600)

def svg(path, *args):
    r = ctl("plot", batch, *args, "-o", path)
    return ET.parse(path).getroot() if r.returncode == 0 else None

root = svg(os.path.join(T, "p.svg"))
texts = [t.text or "" for t in root.iter(NS + "text")] if root is not None else []
legend = [t for t in texts if t.startswith("job ")]
tap.ok(len(legend) == 20 and all(any(t.endswith("name-%02d" % i) for t in legend) for i in range(20))
       and not any("not named" in t for t in texts),
       "the legend names all 20 jobs of the batch", legend)
lines = [p for p in root.iter(NS + "polyline")] if root is not None else []
colours = [p.get("stroke") for p in lines[:20]]
tap.ok(len(lines) == 80 and len(set(colours)) == 20,
       "each of the 20 jobs has a colour of its own", colours)

png = os.path.join(T, "p.png")
r = ctl("plot", batch, "-o", png)
img = Image.open(png).convert("RGB") if r.returncode == 0 else Image.new("RGB", (1, 1))
w, h = img.size
px = img.load()
distinct = len(set(img.getdata()))
# the legend's text: grey shades between black and white (antialiasing)
greys = sum(1 for y in range(0, min(h, 120)) for x in range(100, w)
            if px[x, y][0] == px[x, y][1] == px[x, y][2] and 40 < px[x, y][0] < 215)
tap.ok(r.returncode == 0 and h > 700 and distinct > 300 and greys > 300,
       "the PNG is antialiased, with real (grey-shaded) text, and grows with the legend",
       (r.returncode, r.stderr, w, h, distinct, greys))

def variation(pl):
    ys = [float(p.split(",")[1]) for p in pl.get("points").split()]
    return sum(abs(a - b) for a, b in zip(ys, ys[1:]))
sm = svg(os.path.join(T, "s.svg"), "--smooth", "10")
raw_v = [variation(p) for p in lines[20:40]]
sm_lines = [p for p in sm.iter(NS + "polyline")] if sm is not None else []
sm_v = [variation(p) for p in sm_lines[20:40]]
sm_texts = [t.text or "" for t in sm.iter(NS + "text")] if sm is not None else []
tap.ok(len(sm_v) == 20 and all(s <= r + 1e-6 for s, r in zip(sm_v, raw_v))
       and sum(sm_v) < 0.9 * sum(raw_v) and any("smoothed" in t for t in sm_texts),
       "--smooth 10: the live psnr curves vary less, and the key says so",
       (sum(raw_v), sum(sm_v)))

r = ctl("--json", "plot", batch, "--summary", "-o", os.path.join(T, "sum.svg"))
got = json.loads(r.stdout).get("summary", {}) if r.returncode == 0 else {}
ids = [l.split()[1] for l in legend]
finals = [c.call("job.get", {"job": i})["psnr"] for i in ids]
mean = sum(finals) / len(finals) if finals else 0
sd = (sum((v - mean) ** 2 for v in finals) / (len(finals) - 1)) ** 0.5 if len(finals) > 1 else 0
tap.ok(got.get("jobs") == 20 and abs(got.get("mean", 0) - mean) < 1e-9
       and abs(got.get("sd", 0) - sd) < 1e-9 and got.get("min") == min(finals or [0])
       and got.get("max") == max(finals or [0]),
       "--summary --json: the final PSNRs' mean, sd, least and most, as the jobs give them",
       (got, mean, sd))

root = ET.parse(os.path.join(T, "sum.svg")).getroot() if r.returncode == 0 else None
texts = [t.text or "" for t in root.iter(NS + "text")] if root is not None else []
bands = list(root.iter(NS + "polygon")) if root is not None else []
bars = [b for b in root.iter(NS + "rect") if b.get("fill") == "#1f77b4"] if root is not None else []
r2 = ctl("plot", batch, "--summary", "-o", os.path.join(T, "sum.png"))
simg = Image.open(os.path.join(T, "sum.png")).convert("RGB") if r2.returncode == 0 else None
tap.ok(any(t.startswith("20 jobs: final psnr mean %.2f dB" % mean) for t in texts)
       and len(bands) == 1 and 1 <= len(bars) <= 20 and "final psnr (dB)" in texts
       and simg is not None and len(set(simg.getdata())) > 100,
       "--summary: the figures, the band of one sd over epochs and a histogram (SVG and PNG)",
       (texts[:3], len(bands), len(bars)))

bad = [ctl("plot", batch, "--smooth", "0", "-o", os.path.join(T, "b1.png")),
       ctl("plot", batch, "--smooth", "x", "-o", os.path.join(T, "b2.png")),
       ctl("plot", batch, "--summary", "--time", "-o", os.path.join(T, "b3.png"))]
tap.ok(all(b.returncode == 2 for b in bad)
       and not any(os.path.exists(os.path.join(T, f)) for f in ("b1.png", "b2.png", "b3.png")),
       "--smooth 0, --smooth x and --summary --time are refused, nothing written",
       [(b.returncode, b.stderr) for b in bad])
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
