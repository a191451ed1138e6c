#!/bin/bash
# 77_option_table.sh - one table of training options (proto/params.h) for
# every front end: for each row (read from the table itself, through
# tools/param_table), a value just outside its bounds (or a word not among
# its choices) is refused by vkinrctl submit (exit 2), by job.submit on the
# raw protocol (-32602), by vkinrctl submit --slurm, by vkinrd --fit and
# by vkinrd --fit-task (exit 2), all with the same sentence; the bounds
# themselves (and "auto" where a row takes it) are accepted by each
# command line; the queue's own row (priority) is refused by the front
# ends without a queue. Every row is an option of each front end's help.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
"$BUILD/tools/param_table" >"$T/table.ndjson" || { echo "not ok 1 - the table"; exit 1; }
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import json, os, subprocess
from rpc import *
tap = Tap()
img = sample("t.png", 8, 8)
rows = [json.loads(l) for l in open(os.path.join(T, "table.ndjson"))]
c = Client()
vkinrd = os.environ["VKINRD"]
manifest = os.path.join(T, "m.tsv")
open(manifest, "w").write("t\t%s\n" % img)

def first_line(text):
    return text.splitlines()[0] if text else ""

def run(args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, VKINR_SOCKET=SOCK))
    return r.returncode, first_line(r.stderr)

def outside(row):
    """Values just outside the row's bounds, as text and as sent."""
    if row["word"]:
        return ["bogus"] if row["choices"] else ["0,a"]
    step = row["multiple"] if row["int"] else 0
    lo = row["min"] if row["open_min"] else row["min"] - (step or 1e-3 * (row["max"] - row["min"]))
    hi = row["max"] if row["open_max"] else row["max"] + (step or 1e-3 * (row["max"] - row["min"]))
    return [lo, hi]

def text(v):
    return v if isinstance(v, str) else ("%d" % v if v == int(v) else repr(v))

refusals = {}
for row in rows:
    for v in outside(row):
        t = text(v)
        plain = run([CTL, "submit", "-q", row["option"], t, img])
        slurm = run([CTL, "submit", "--slurm", "--out", os.path.join(T, "o"),
                     "--dry-run", row["option"], t, img])
        fit = run([vkinrd, "--fit", img, row["option"], t])
        task = run([vkinrd, "--fit-task", manifest, "--out", os.path.join(T, "x"),
                    row["option"], t])
        d = c.request("job.submit", {"image": {"png": png_b64(img)},
                                     row["key"]: v if row["word"] else float(t)})
        refusals[(row["key"], t)] = (row, plain, slurm, fit, task, d.get("error", {}))

def same(row, plain, slurm, fit, task, err):
    msg = plain[1].split(": ", 1)[-1]
    if plain[0] != 2 or not msg or err.get("code") != -32602:
        return False
    if msg.replace(row["option"], '"%s"' % row["key"]) != err.get("message"):
        return False
    if row["queue"]:   # no queue: the option is not theirs
        return slurm[0] == 2 and fit[0] == 2 and task[0] == 2
    return (slurm == plain and fit == (2, "vkinrd: " + msg)
            and task == (2, "vkinrd: " + msg))

bad = {k: v[1:] for k, v in refusals.items() if not same(*v)}
tap.ok(len(refusals) >= 2 * len(rows) - 8 and not bad,
       "every row, just outside its bounds: refused by submit, job.submit, "
       "--slurm, vkinrd --fit and --fit-task with the same sentence", bad)

# the bounds themselves, and auto: taken by each command line (slurm's
# dry run and --fit-task's check stand for the rest; job.submit's are in
# 54_validation.sh)
def inside(row):
    if row["word"]:
        return [row["example"]]
    vals = []
    if not row["open_min"]: vals.append(row["min"])
    if not row["open_max"]: vals.append(row["max"])
    if row["auto"]: vals.append("auto")
    return vals or [row["example"]]
taken = {}
for row in rows:
    if row["queue"]:
        continue
    for v in inside(row):
        r = run([CTL, "submit", "--slurm", "--out", os.path.join(T, "o"),
                 "--dry-run", row["option"], text(v), img])
        if r[0] != 0:
            taken[(row["key"], text(v))] = r
tap.ok(not taken, "the bounds (and auto) are taken by submit --slurm", taken)

helps = {"submit": subprocess.run([CTL, "submit", "--help"], capture_output=True, text=True).stdout,
         "fit": subprocess.run([vkinrd, "--fit", img, "--help"], capture_output=True, text=True).stdout,
         "task": subprocess.run([vkinrd, "--fit-task", manifest, "--help"], capture_output=True, text=True).stdout}
missing = [(k, row["option"]) for k, h in helps.items() for row in rows
           if not (row["queue"] and k != "submit") and ("  %s " % row["option"]) not in h]
tap.ok(not missing, "every row is in each front end's help", missing)

# a row's value goes through to the engine alike: --fit-task with every
# recipe row at a value of its own, through a dry-run script's line
r = subprocess.run([CTL, "submit", "--slurm", "--out", os.path.join(T, "o2"), "--dry-run",
                    "--warmup", "3", "--ema-decay", "0.9", "--precision", "fp32",
                    "--target-psnr", "40", img], capture_output=True, text=True)
tap.ok(r.returncode == 0 and all(s in r.stdout for s in
       (" --warmup 3", " --ema-decay 0.9", " --precision fp32", " --target-psnr 40")),
       "--slurm passes every row on to --fit-task", r.stdout[-600:])
g = c.call("job.get", {"job": ctl("submit", "-q", "--epochs", "1000000", "--width", "16",
                                  "--warmup", "auto", "--lr", "auto", img).stdout.strip()})
tap.ok(g.get("warmup") == 50 and abs(g.get("lr", 0) - 6e-3) < 1e-12,
       "submit --warmup auto --lr auto: the width's (50, 6e-3)", g)
ctl("cancel", g.get("id", ""))
tap.ok(c.call("hello", {})["version"] != "", "the daemon still serves")
tap.done()
EOF_PY
TAP_N=6
stop_daemon
check "vkinrd --fit --width auto --epochs 2: the device's width" bash -c '
	"'$VKINRD'" --fit "'$T'/t.png" --width auto --epochs 2 --json -q |
	tail -1 | grep -q "\"width\":64\|\"width\":512"'
tap_done
