#!/bin/bash
# 89_new_user.sh - what a new user met (issue 36), on the real daemon with
# packs of 4: `list` with nothing to list prints nothing on stdout ("No
# jobs." on stderr); `list --csv --format` writes the chosen columns;
# `status` says a worker runs (with its pack's count) while the rest of a
# pack trains after one of its jobs ended; `watch` of a paused job in its
# warmup shows the rate of its last epoch, not the peak rate; a batch's
# summary gives the wall time and the sum of the job times, labelled so;
# `plot` and `preview --png` with --json print a JSON object naming the
# files written.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device
PACK=4 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import re, signal, subprocess
from rpc import *
tap = Tap()
c = Client()

r = ctl("list")
r2 = ctl("list", "--state", "failed")
tap.ok(r.returncode == 0 and r.stdout == "" and "No jobs." in r.stderr
       and r2.stdout == "" and "No jobs." in r2.stderr,
       "an empty list: stdout empty, 'No jobs.' on stderr",
       (r.stdout, r.stderr, r2.stdout, r2.stderr))

img = sample("n.png", 16, 16)
short = submit(c, img, epochs=3, width=16, batch="b1")
longs = [submit(c, img, epochs=5000, width=16, batch="b1", warmup=4000,
                lr=2e-3, seed=s) for s in (1, 2)]
wait_state(c, short, ("done", "failed", "cancelled"))
for j in longs:
    wait_epoch(c, j, 3)
st = c.call("daemon.status", {})
dev = st["devices"][0]
r = ctl("status")
tap.ok(dev["state"] == "running" and dev.get("jobs") == 2
       and dev.get("job") in longs
       and all(c.call("job.get", {"job": j})["state"] == "running" for j in longs)
       and re.search(r"\brunning\s+\S+ \+1\b", r.stdout),
       "a pack trains on after one of its jobs ended: the worker is running, "
       "2 jobs", (dev, r.stdout))

a = longs[0]
c.call("job.pause", {"job": a})
j = wait_state(c, a, ("paused",))
peak = j["lr"]
live = j.get("live_lr")
p = subprocess.Popen([CTL,
                      "watch", a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True, env=dict(os.environ, VKINR_SOCKET=SOCK))
time.sleep(3)
p.send_signal(signal.SIGINT)
try:
    out, err = p.communicate(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    out, err = p.communicate()
rates = [float(x) for x in re.findall(r" lr ([0-9.e+-]+)", out)]
tap.ok(live is not None and live < peak / 10,
       "job.get's live_lr: the warmup's rate, below the peak lr", (peak, live))
tap.ok(rates and all(x < peak / 10 for x in rates),
       "watch of a paused job in warmup (piped): the last epoch's rate, not the peak",
       (peak, rates, out, err))

for j in longs:
    c.call("job.cancel", {"job": j})
    wait_state(c, j, ("cancelled",))
r = ctl("list", "--batch", "b1")
last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
tap.ok(re.search(r"; [0-9:.]+s? wall, [0-9:.]+s? of job time$", last)
       and "of fitting" not in last,
       "the batch's summary: the wall time, and the sum labelled job time",
       r.stdout)

r = ctl("list", "--csv", "--format", "id,state,name")
rows = r.stdout.splitlines()
tap.ok(r.returncode == 0 and rows[0] == "id,state,name" and len(rows) == 4
       and all(len(x.split(",")) == 3 for x in rows)
       and ("%s,done," % short) in r.stdout,
       "list --csv --format: the chosen columns, their names as header", r.stdout)
r = ctl("list", "--csv")
tap.ok(r.stdout.startswith("id,name,batch,state,width,height,"),
       "list --csv alone: the full CSV as before", r.stdout)
def json_of(r):
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None

svg = os.path.join(T, "p.svg")
r = ctl("--json", "plot", short, "-o", svg)
j = json_of(r)
tap.ok(r.returncode == 0 and j and j.get("files") == [svg] and j.get("jobs") == 1
       and os.path.getsize(svg) > 0,
       "plot --json: {files: [OUT], jobs: 1}", (r.returncode, r.stdout, r.stderr))
png = os.path.join(T, "pre.png")
r = ctl("--json", "preview", short, "--png", png)
j = json_of(r)
tap.ok(r.returncode == 0 and j and j.get("files") == [png] and j.get("job") == short
       and open(png, "rb").read(4) == b"\x89PNG",
       "preview --png --json: {files: [PNG], job: ID}", (r.returncode, r.stdout, r.stderr))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
