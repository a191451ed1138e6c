#!/bin/bash
# 57_pictures.sh - pictures and histories of real jobs: `plot BATCH -o
# F.png` (a 900x660 PNG) and `-o F.svg` (four panels: the model's PSNR,
# the live PSNR, MSE and rate, a line per job),
# `metrics --csv` (a header and one row per epoch and job, the epochs in
# order, the figures the daemon's replay holds) and into a file with -o
# (never over one without --force), `preview --png` of a running job (a PNG
# of the image's size) and on a terminal (colour blocks).
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import csv, io, struct, subprocess
import xml.etree.ElementTree as ET
from rpc import *
import rpc
tap = Tap()
a, b = sample("a.png", 16, 12), sample("b.png", 12, 16)

def ctl(*args):
    return rpc.ctl(*args, text=False)

r = ctl("--json", "submit", "--wait", "--epochs", "25", "--width", "16", a, b)
batch = json.loads(r.stdout.splitlines()[0])["batch"]
png, svg = os.path.join(T, "c.png"), os.path.join(T, "c.svg")
r1, r2 = ctl("plot", batch, "-o", png), ctl("plot", batch, "-o", svg)
head = open(png, "rb").read(24) if os.path.exists(png) else b""
tap.ok(r1.returncode == 0 and head[:8] == b"\x89PNG\r\n\x1a\n"
       and struct.unpack(">II", head[16:24]) == (900, 660),
       "plot BATCH -o c.png: a 900x660 PNG", (r1, head))
lines = []
if r2.returncode == 0:
    lines = ET.parse(svg).getroot().findall("{http://www.w3.org/2000/svg}polyline")
tap.ok(len(lines) == 8 and not any(l.get("stroke-dasharray") for l in lines)
       and all(len(l.get("points").split()) == 25 for l in lines),
       "plot -o c.svg: four panels of two lines, 25 points each",
       (r2, len(lines)))

r = ctl("metrics", batch, "--csv")
rows = list(csv.DictReader(io.StringIO(r.stdout.decode())))
jobs = sorted({row["job"] for row in rows})
hist = {j: [json.loads(l) for l in open(os.path.join(os.environ["STATE"], "jobs", j,
                                                      "metrics.ndjson"))] for j in jobs}
tap.ok(r.returncode == 0 and len(jobs) == 2 and len(rows) == 50
       and all([int(x["epoch"]) for x in rows if x["job"] == j] == list(range(1, 26)) for j in jobs)
       and all(abs(float(x["psnr"]) - hist[x["job"]][int(x["epoch"]) - 1].get(
                   "psnr_best", hist[x["job"]][int(x["epoch"]) - 1]["psnr"])) < 1e-5
               and abs(float(x["live_psnr"]) - hist[x["job"]][int(x["epoch"]) - 1]["psnr"]) < 1e-5
               for x in rows),
       "metrics --csv: every epoch of both jobs, in order, the daemon's figures", r.stdout[:300])
out = os.path.join(T, "m.csv")
r1, r2 = ctl("metrics", batch, "--csv", "-o", out), ctl("metrics", batch, "--csv", "-o", out)
r3 = ctl("metrics", batch, "--csv", "-o", out, "--force")
tap.ok(r1.returncode == 0 and open(out).read().count("\n") == 51 and r2.returncode == 3
       and b"--force" in r2.stderr and r3.returncode == 0,
       "metrics -o FILE: written, then refused without --force, replaced with it",
       (r1, r2, r3))

j = ctl("submit", "-q", "--epochs", "1000000", "--width", "16", a).stdout.decode().strip()
wait_epoch(c := Client(), j, 3)
p = os.path.join(T, "p.png")
r = ctl("preview", j, "--png", p)
head = open(p, "rb").read(24) if os.path.exists(p) else b""
tap.ok(r.returncode == 0 and struct.unpack(">II", head[16:24]) == (16, 12),
       "preview --png of a running job: a 16x12 PNG", (r, head))
r = ctl("preview", j, "--width", "8")
text = r.stdout.decode()
tap.ok(r.returncode == 0 and text.count("\u2580") == 8 * 3 and "\x1b[38;2;" in text
       and "PSNR" in text,
       "preview on a terminal: 3 rows (6 pixels) of 8 colour blocks and the PSNR", text[-200:])
ctl("cancel", j)
tap.ok(c.call("hello", {})["version"] != "", "the daemon still serves")
tap.done()
EOF_PY
stop_daemon
tap_done
