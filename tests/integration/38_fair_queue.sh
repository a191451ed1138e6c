#!/bin/bash
# 38_fair_queue.sh - the queue is fair between users (real uids: users.bash
# creates vkinrt1 and vkinrt2 when run as root, else every test skips).
# One worker, one job at a time. While root's job holds the worker, uid A
# queues six jobs (two of them at priority 50) and uid B three at
# priority 0; once root's job is cancelled, B's three all start before A's
# fifth (the next job comes from the uid with the least device time
# lately, not from the highest priority of anyone's), and A's own jobs
# start in its own order (priority, then age). A priority above 100 is
# refused for a user (-32005), at submission and through job.renice; root
# may renice B's job to 500 and it starts next, before everyone's.
# `vkinrctl renice` changes A's own queued job (and says what it was), is
# refused on B's job. A batch id names one uid's jobs: B's submission into
# A's batch is refused naming A, and A's `vkinrctl wait BATCH` returns.
# Then, with packs of 2, a renice orders what the pack admits next.
# run.sh: long
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/users.bash"
tap_plan 9
need_device
need_users 2
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
tap = Tap()
A, B = UIDS
c = Client()
img = sample("s.png", 16, 16)
b64 = png_b64(img)
chmod = os.chmod(T, 0o711)

def job(uid, **kw):
    p = {"image": {"png": b64}, "epochs": 3, "width": 16}
    p.update(kw)
    return call_as(uid, "job.submit", p)["job"]

blocker = submit(c, img, epochs=1000000, width=16)
wait_epoch(c, blocker, 1)
a = [job(A, priority=50 if i in (2, 4) else 0, name="a%d" % i) for i in range(6)]
b = [job(B, name="b%d" % i) for i in range(3)]
c.call("job.cancel", {"job": blocker})
for j in a + b:
    wait_state(c, j, ("done", "failed", "cancelled"), timeout=300)
jobs = {x["id"]: x for x in c.call("job.list")["jobs"]}
order = sorted(a + b, key=lambda j: jobs[j]["started"])
who = ["A" if j in a else "B" for j in order]
tap.ok(all(jobs[j]["state"] == "done" for j in a + b) and
       max(order.index(j) for j in b) < [k for k, w in enumerate(who) if w == "A"][4],
       "B's three jobs all start before A's fifth, whatever A's priorities: %s" % "".join(who),
       [(j, jobs[j]["uid"], jobs[j]["priority"]) for j in order])
a_order = [j for j in order if j in a]
tap.ok(a_order == [a[2], a[4], a[0], a[1], a[3], a[5]],
       "A's own jobs start by its priority, then by age", a_order)

# priorities above 100: root only
blocker = submit(c, img, epochs=1000000, width=16)
wait_epoch(c, blocker, 1)
ra = as_uid(A, [["job.submit", {"image": {"png": b64}, "epochs": 3, "width": 16, "priority": 500}]])[0]
qa = job(A, name="qa")
qb = job(B, name="qb")
rr = as_uid(A, [["job.renice", {"job": qa, "priority": 101}]])[0]
tap.ok(ra.get("error", {}).get("code") == -32005 and rr.get("error", {}).get("code") == -32005
       and "only root" in ra["error"]["message"],
       "a user's priority above 100 is refused (-32005) at submission and by job.renice", (ra, rr))
r = ctl("renice", qb, 500)
qa2 = job(A, name="qa2")
c.call("job.cancel", {"job": blocker})
wait_state(c, qb, ("running", "done"))
ja, jb = c.call("job.get", {"job": qa}), c.call("job.get", {"job": qb})
tap.ok(r.returncode == 0 and "was 0" in r.stdout and jb["priority"] == 500 and
       (ja["started"] or 1e99) > jb["started"],
       "root's renice to 500 puts B's job before A's older one", (r.stdout, r.stderr, ja, jb))

# vkinrctl renice as the owner, and on another's job
blocker = submit(c, img, epochs=1000000, width=16)
wait_epoch(c, blocker, 1)
x1, x2 = job(A, name="x1"), job(A, name="x2")
mine = ctl_as(A, "renice", x2, "-5")
mine2 = ctl_as(A, "--json", "renice", x1, x2, 7)
theirs = ctl_as(B, "renice", x2, 3)
j2 = c.call("job.get", {"job": x2})
res = json.loads(mine2.stdout or "{}").get("results", [])
tap.ok(mine.returncode == 0 and "was 0" in mine.stdout and len(res) == 2 and res[1]["was"] == -5
       and j2["priority"] == 7 and theirs.returncode == 3 and "belongs to uid %d" % A in theirs.stderr,
       "vkinrctl renice: the owner may (a negative priority too), another uid may not",
       (mine.stdout, mine.stderr, mine2.stdout, theirs.stderr, j2["priority"]))
logs = c.call("job.logs", {"job": x2})
tap.ok(any("priority -5 -> 7 by uid %d" % A in e["text"] for e in logs["events"]),
       "the change is in the job's events, with who made it", logs["events"][-3:])
c.call("job.cancel", {"job": blocker})

# batches name one user's jobs
s1 = call_as(A, "job.submit", {"image": {"png": b64}, "epochs": 2, "width": 16, "batch": "bmine"})
rb = as_uid(B, [["job.submit", {"image": {"png": b64}, "epochs": 100000, "width": 16,
                                "batch": "bmine"}]])[0]
w = ctl_as(A, "wait", "bmine", timeout=200)
tap.ok(rb.get("error", {}).get("code") == -32005 and rb["error"]["data"].get("owner") == A
       and w.returncode == 0,
       "another uid cannot add a job to my batch (-32005 naming me); my wait on it returns",
       (rb, w.returncode, w.stderr))
tap.done()
EOF_PY

# packs: renice orders the admissions
stop_daemon
TAP_N=7
PACK=2 start_daemon || { echo "not ok 8 - daemon restarts with packs"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
tap = Tap()
A, B = UIDS
c = Client()
img = sample("p.png", 16, 16)
b64 = png_b64(img)
r1 = submit(c, img, epochs=1000000, width=16)
r2 = submit(c, img, epochs=1000000, width=16)
wait_epoch(c, r1, 1); wait_epoch(c, r2, 1)
both = c.call("job.get", {"job": r1})["state"] == "running" and \
       c.call("job.get", {"job": r2})["state"] == "running"
q = [call_as(A, "job.submit", {"image": {"png": b64}, "epochs": 1000000, "width": 16})["job"]
     for _ in range(3)]
ren = ctl_as(A, "renice", q[2], 10)
c.call("job.cancel", {"job": r2})
wait_state(c, q[2], ("running",), timeout=60)
st = [c.call("job.get", {"job": j})["state"] for j in q]
tap.ok(both and ren.returncode == 0 and st == ["queued", "queued", "running"],
       "with a pack of 2 full, the job A reniced is the one the pack admits next", (both, st, ren.stderr))
c.call("job.cancel", {"job": r1})
wait_state(c, q[0], ("running",), timeout=60)
st = [c.call("job.get", {"job": j})["state"] for j in q]
tap.ok(st == ["running", "queued", "running"], "then A's older job of equal priority", st)
for j in q + [r1]:
    c.request("job.cancel", {"job": j})
tap.done()
EOF_PY
tap_done
