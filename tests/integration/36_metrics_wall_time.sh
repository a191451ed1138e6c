#!/bin/bash
# 36_metrics_wall_time.sh - metrics rows carry the wall clock's time
# (issue 36 item 12), not only the epochs' own training times: each
# epoch's "time" (Unix seconds, when the daemon recorded it) is in
# metrics.ndjson, in the replayed job.progress, in `metrics --json`, in
# `metrics --csv` (a last column "time") and in the table (local date and
# time); the times rise epoch by epoch within the job's run (started to
# finished), a job that ran after another has later ones, and they are
# the same after the daemon restarts (read back from disk).
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import csv, io, json
from rpc import *
tap = Tap()
img = sample("a.png", 16, 16)
ids = [ctl("submit", "-q", "--epochs", "30", "--width", "16", "--seed", str(s), img).stdout.strip()
       for s in (1, 2)]
ctl("wait", *ids)
jobs = {i: json.loads(ctl("--json", "show", i).stdout) for i in ids}

disk = {i: [json.loads(l) for l in open(os.path.join(os.environ["STATE"], "jobs", i, "metrics.ndjson"))]
        for i in ids}
tap.ok(all(len(disk[i]) == 30 and all(isinstance(r.get("time"), float) for r in disk[i]) for i in ids),
       "metrics.ndjson: every epoch's line has its time", disk[ids[0]][:2])

c = Client()
c.call("job.subscribe", {"job": ids[0]})
notes = []
while len(notes) < 30:
    n = c.next_note()
    if n["method"] == "job.progress":
        notes.append(n["params"])
tap.ok(all(isinstance(n.get("time"), float) for n in notes)
       and [n.get("time") for n in notes] == [r.get("time") for r in disk[ids[0]]],
       "the replayed job.progress carries each epoch's time", notes[:2])

r = ctl("--json", "metrics", *ids)
hist = {j["job"]: j["history"] for j in json.loads(r.stdout)["jobs"]} if r.returncode == 0 else {}
def rising(i):
    t = [row.get("time", 0) for row in hist.get(i, [])]
    j = jobs[i]
    return len(t) == 30 and t == sorted(t) and j["started"] - 1 <= t[0] and t[-1] <= j["finished"] + 1
tap.ok(all(rising(i) for i in ids) and hist[ids[0]][-1].get("time", 1) <= hist[ids[1]][0].get("time", 0),
       "metrics --json: the times rise within each job's run, the second job's after the first's",
       ([h[-1].get("time") for h in hist.values()], [(j["started"], j["finished"]) for j in jobs.values()]))

r = ctl("metrics", "--csv", *ids)
rows = list(csv.DictReader(io.StringIO(r.stdout)))
tap.ok(r.stdout.startswith("job,name,epoch,psnr,mse,lr,ms,live_psnr,time\n") and len(rows) == 60
       and all(abs(float(row.get("time") or 0) - hist[row["job"]][int(row["epoch"]) - 1].get("time", 1)) < 1e-3
               for row in rows),
       "metrics --csv: a last column time, the same times", r.stdout[:300])

r = ctl("metrics", ids[0])
import time as _t
day = _t.strftime("%Y-%m-%d", _t.localtime(hist[ids[0]][0].get("time", 0)))
lines = r.stdout.splitlines()
tap.ok(lines and lines[0].split()[-1] == "TIME" and all(day in l for l in lines[1:]) and len(lines) == 31,
       "the table: a TIME column, the local date and time", lines[:3])
open(os.path.join(T, "before.json"), "w").write(json.dumps(hist))
sys.exit(tap.done())
EOF_PY
TAP_N=5
stop_daemon
start_daemon || { echo "not ok 6 - the daemon starts again"; exit 1; }
run_py <<'EOF_PY'
import json
from rpc import *
tap = Tap()
before = json.load(open(os.path.join(T, "before.json")))
r = ctl("--json", "metrics", *before.keys())
after = {j["job"]: j["history"] for j in json.loads(r.stdout)["jobs"]} if r.returncode == 0 else {}
tap.ok(after == before and all("time" in row for h in after.values() for row in h)
       and len(after) == 2, "after a restart the same times, read back from disk",
       [(k, v[:1]) for k, v in after.items()])
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
