#!/bin/bash
# 31_pack_pass.sh - a job that cannot be placed now does not hold another
# uid's job that can (issue 31, left from item 4: "a small job beside
# another uid's single large job now waits for it, and the scheduler lets
# nothing pass a waiting job, so it can hold that worker's queue").
# Three real uids (users.bash), one worker, --pack 64, and
# VKINRD_PASS_SECONDS=8 (how long a waiting job lets others pass it).
#   - uid A's 64x64 job trains; uid B's 16x16 job joins it no more than
#     its share allows (a pack of A's large work would make its epochs
#     far over 3x its own), so it waits, saying why;
#   - uid C's 64x64 job, which the pack admits, passes it and starts
#     while B's waits (before this change it waited for A's job to end);
#   - A's second job does not pass B's: A runs more jobs than B, and
#     its work in the pack is what B waits to see go;
#   - once B's job has waited past VKINRD_PASS_SECONDS, nothing passes
#     it any more: a 64x64 job of root's (no job running, as B), which
#     the pack would admit, waits too, and the pack drains;
#   - when A's and C's large jobs are cancelled, B's job starts first,
#     and every job waiting ends done.
# run.sh: long
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/users.bash"
tap_plan 5
need_device
need_users 3
export VKINRD_PASS_SECONDS=8
PACK=64 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
tap = Tap()
A, B, C = UIDS
c = Client()
big = png_b64(sample("b.png", 64, 64))
small = png_b64(sample("s.png", 16, 16))
def job(img, epochs):
    return ["job.submit", {"image": {"png": img}, "epochs": epochs, "width": 16}]
def events(j):
    return [(json.loads(l)["time"], json.loads(l)["text"]) for l in
            open(os.path.join(os.environ["STATE"], "jobs", j, "events.ndjson"))]
def started(j):
    return [t for t, e in events(j) if e.startswith("starting on")]

a_big = call_as(A, *job(big, 1000000))["job"]
wait_epoch(c, a_big, 2, timeout=120)
b = call_as(B, *job(small, 5))["job"]
t_b = time.time()
time.sleep(1)
c_big = call_as(C, *job(big, 1000000))["job"]
a_small = call_as(A, *job(small, 5))["job"]
cj = wait_state(c, c_big, ("running",), timeout=6)
t_c = time.time()
states = {k: c.call("job.get", {"job": j})["state"] for k, j in
          (("A's large", a_big), ("B's small", b), ("A's small", a_small))}
waits = [e for _, e in events(b) if e.startswith("waits:")]
print("# uid %d's 16x16 job waits beside uid %d's 64x64 one: %s" % (B, A, waits[:1]))
print("# uid %d's 64x64 job %s %.1f s after it was sent; the others: %s"
      % (C, cj["state"], t_c - t_b - 1, states))
tap.ok(cj["state"] == "running" and states["B's small"] == "queued" and waits,
       "uid C's job that the pack admits passes uid B's waiting one and starts", (cj, states, waits))
tap.ok(states["A's small"] == "queued" and not started(a_small),
       "uid A's next job does not pass B's (A runs more jobs than B)", events(a_small))
# past the bound, nothing passes B's job
time.sleep(max(0, t_b + 9 - time.time()))
c_late = c.call(*job(big, 5))["job"]
time.sleep(2)
late = c.call("job.get", {"job": c_late})["state"]
tap.ok(late == "queued" and c.call("job.get", {"job": b})["state"] == "queued",
       "once B's job has waited past VKINRD_PASS_SECONDS, root's job, which the pack would "
       "admit, waits too (%s)" % late,
       events(c_late))
call_as(A, "job.cancel", {"job": a_big})
call_as(C, "job.cancel", {"job": c_big})
ends = {j: wait_state(c, j, ("done", "failed", "cancelled"), timeout=240)["state"]
        for j in (b, a_small, c_late)}
tap.ok(all(s == "done" for s in ends.values()), "every waiting job ends done", ends)
tap.ok(started(b) and started(b)[0] <= min(started(a_small) + started(c_late)),
       "once the large jobs leave, B's job starts first",
       (started(b), started(a_small), started(c_late)))
tap.done()
EOF_PY
stop_daemon
tap_done
