#!/bin/bash
# 58_datasets.sh - a dataset of 50 images, submitted twice: `submit DIR -q`
# prints the 50 job ids and then a line `batch ID`; list --csv names each
# job's source file; the same submit again with --skip-done submits
# nothing (the same bytes and options), and after one image changes,
# only that one; `rm --state done` clears the ended jobs and `rm BATCH`
# a batch. Prints the submit overhead per job as a comment.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import csv, io, re, subprocess
from rpc import *
tap = Tap()
d = os.path.join(T, "set")
os.makedirs(d)
for i in range(50):
    subprocess.run([os.environ["MKSAMPLE"], os.path.join(d, "img%02d.png" % i), "8", "8",
                    str(i)], check=True, stdout=subprocess.DEVNULL)

opts = ["--epochs", "1", "--width", "16", "--skip-done"]
t0 = time.time()
r = ctl("submit", d + "/", "-q", *opts)
t1 = time.time()
out = r.stdout.split("\n")[:-1]
tap.ok(r.returncode == 0 and len(out) == 51 and all(x.isdigit() for x in out[:50])
       and re.fullmatch(r"batch b[0-9a-f]{6}", out[50]),
       "submit DIR -q: 50 job ids, then 'batch ID'", (r.returncode, out[-3:], r.stderr))
batch = out[50].split()[1]
w = ctl("wait", batch)
t2 = time.time()
print("# 50 one-epoch jobs of 8x8: submit %.2f s (%.1f ms a job), all done after %.2f s"
      % (t1 - t0, (t1 - t0) * 20, t2 - t0))
rows = list(csv.DictReader(io.StringIO(ctl("list", "--batch", batch, "--csv").stdout)))
tap.ok(w.returncode == 0 and len(rows) == 50
       and sorted(r["source"] for r in rows) == sorted(os.path.join(d, f) for f in os.listdir(d))
       and not any("//" in r["source"] for r in rows),
       "list --csv: each job's source file", rows[:2])

r = ctl("submit", d, "-q", *opts)
tap.ok(r.returncode == 0 and r.stdout == "" and "50 images skipped" in r.stderr,
       "the same again with --skip-done: nothing submitted", (r.stdout[:200], r.stderr))
subprocess.run([os.environ["MKSAMPLE"], os.path.join(d, "img07.png"), "8", "8", "99"],
               check=True, stdout=subprocess.DEVNULL)
r = ctl("submit", d, "-q", *opts)
lines = r.stdout.split()
tap.ok(r.returncode == 0 and len(lines) == 3 and "49 images skipped" in r.stderr,
       "after one image changed: only that one (its id and the batch)", (r.stdout, r.stderr))
r2 = ctl("submit", "-q", "--epochs", "2", "--width", "16", "--skip-done",
         os.path.join(d, "img01.png"))
tap.ok(r2.returncode == 0 and r2.stdout.strip().isdigit(),
       "other options are another job: submitted", (r2.stdout, r2.stderr))
ctl("wait", lines[2], r2.stdout.strip())

r = ctl("rm", "--state", "done")
c = Client()
jobs = c.call("job.list")["jobs"]
tap.ok(r.returncode == 0 and jobs == [], "rm --state done: every ended job removed",
       (r.stderr, len(jobs)))
j = ctl("submit", "-q", "--epochs", "1", "--width", "16", d + "/img01.png", d + "/img02.png").stdout.split()
ctl("wait", j[-1])
r = ctl("rm", j[-1])
tap.ok(r.returncode == 0 and c.call("job.list")["jobs"] == [], "rm BATCH: its jobs removed",
       (j, r.stdout, r.stderr))
tap.done()
EOF_PY
stop_daemon
tap_done
