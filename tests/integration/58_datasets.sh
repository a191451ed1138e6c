#!/bin/bash
# 58_datasets.sh - a dataset of 50 images, submitted twice: `submit DIR -q`
# prints the 50 job ids and then a line `batch ID`; list --csv names each
# job's source file; the same submit again with --skip-done submits
# nothing (the same bytes and options) and -q prints the ids that cover
# each image, and after one image changes, only that one; --skip-done
# skips jobs still queued or running too, names them, and --json names no
# batch that was not made; `rm --state done` clears the ended jobs and
# `rm BATCH` a batch. Prints the submit overhead per job as a comment.
. "$(dirname "$0")/lib.bash"
tap_plan 9
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

first = out[:50]
r = ctl("submit", d, "-q", *opts)
tap.ok(r.returncode == 0 and sorted(r.stdout.split()) == sorted(first)
       and "50 images skipped" in r.stderr,
       "the same again with --skip-done: nothing submitted, -q prints the "
       "covering ids", (r.stdout[:200], r.stderr))
subprocess.run([os.environ["MKSAMPLE"], os.path.join(d, "img07.png"), "8", "8", "99"],
               check=True, stdout=subprocess.DEVNULL)
r = ctl("submit", d, "-q", *opts)
lines = r.stdout.split("\n")[:-1]
new = [x for x in lines[:-1] if x not in first]
tap.ok(r.returncode == 0 and len(lines) == 51 and len(new) == 1
       and re.fullmatch(r"batch b[0-9a-f]{6}", lines[-1])
       and "49 images skipped" in r.stderr,
       "after one image changed: only that one (its id, the others' and "
       "the batch)", (r.stdout, r.stderr))
lines = [new[0], "batch", lines[-1].split()[1]]
r2 = ctl("submit", "-q", "--epochs", "2", "--width", "16", "--skip-done",
         os.path.join(d, "img01.png"))
tap.ok(r2.returncode == 0 and r2.stdout.strip().isdigit(),
       "other options are another job: submitted", (r2.stdout, r2.stderr))
ctl("wait", lines[2], r2.stdout.strip())

# a job still queued or running covers its image too
c = Client()
img = os.path.join(d, "img03.png")
long = ["--epochs", "1000000", "--width", "16", "--skip-done"]
run = ctl("submit", "-q", *long, img).stdout.strip()
q = ctl("submit", "-q", "--priority", "-5", *long, os.path.join(d, "img04.png")).stdout.strip()
again = ctl("submit", *long, img, os.path.join(d, "img04.png"))
said = again.stdout + again.stderr
tap.ok(again.returncode == 0 and "already as job %s" % run in said
       and "already as job %s" % q in said and "batch" not in said
       and len(c.call("job.list")["jobs"]) == len(set(
           j["id"] for j in c.call("job.list")["jobs"])),
       "--skip-done skips jobs queued or running, naming them", (again.stdout, again.stderr))
js = ctl("--json", "submit", *long, img, os.path.join(d, "img04.png"))
o = json.loads(js.stdout or "{}")
tap.ok(js.returncode == 0 and "batch" not in o and o.get("jobs") == []
       and sorted(s["job"] for s in o.get("skipped", [])) == sorted([run, q]),
       "--json with everything skipped: the covering jobs, no batch", js.stdout)
ctl("cancel", run, q)
ctl("wait", run, q)
ctl("rm", run, q)

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
