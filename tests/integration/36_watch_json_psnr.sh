#!/bin/bash
# 36_watch_json_psnr.sh - one name, one figure, in vkinrctl's JSON too
# (issue 36 item 10: "psnr is the live figure in watch's events and the
# model's figure everywhere else"). A job's `watch --json` job.progress
# events carry "psnr" the model's (the notification's psnr_best, kept)
# and "live_psnr" the epoch's own, as `metrics --json` names its rows:
# epoch by epoch the two commands give the same psnr and the same
# live_psnr, and the live figure differs from the model's somewhere (so
# the check is not empty).
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import json, os, sys
from rpc import *
tap = Tap()
T = os.environ["T"]
img = sample("w.png", 24, 24)
job = ctl("submit", "-q", "--epochs", "40", "--width", "16", img).stdout.strip()
r = ctl("--json", "watch", job)
ev = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
prog = [e for e in ev if e.get("event") == "job.progress"]
tap.ok(r.returncode == 0 and len(prog) == 40 and
       all(e.get("psnr") == e.get("psnr_best") and "live_psnr" in e for e in prog) and
       any(abs(e["psnr"] - e["live_psnr"]) > 1e-6 for e in prog),
       "watch --json: psnr the model's, live_psnr the epoch's own",
       (r.returncode, len(prog), prog[:2]))
m = json.loads(ctl("--json", "metrics", job).stdout)
rows = {h["epoch"]: h for h in m["jobs"][0]["history"]}
tap.ok(len(rows) == 40 and all(abs(rows[e["epoch"]]["psnr"] - e["psnr"]) < 1e-6 and
                               abs(rows[e["epoch"]]["live_psnr"] - e["live_psnr"]) < 1e-6
                               for e in prog),
       "... the same figures under the same names as metrics --json, epoch by epoch",
       (len(rows), [(e["epoch"], e["psnr"], rows.get(e["epoch"])) for e in prog[:2]]))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
