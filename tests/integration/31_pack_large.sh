#!/bin/bash
# 31_pack_large.sh - several jobs too large to share a pack arrive while
# another user's pack runs (issue 31, item 4: nine 8192x8192 jobs joining
# a running pack, a job that went back to the queue and rejoined 201 times
# in 5 minutes). Scaled to lavapipe by the pack budget
# VKINRD_PACK_MEMORY_BYTES (24 MiB: a 16x16 fit holds about 3 MiB, a
# 160x160 one about 33): real uids (users.bash), one worker, --pack 64.
#   - uid B's pack of four small jobs trains; uid A submits three 160x160
#     jobs, then B two more small ones;
#   - each large job says once why it waits (it runs alone), starts once,
#     and runs alone: nothing else trains between its start and its end
#     (the loop's times of both, within 0.25 s), and it does not start
#     while B's pack runs;
#   - every job ends done, each large one with every epoch once; the
#     device memory in use stays within the budget while the pack runs.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/users.bash"
tap_plan 5
need_device
need_users 2
export VKINRD_PACK_MEMORY_BYTES=25165824
PACK=64 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
tap = Tap()
A, B = UIDS
c = Client()
simg = png_b64(sample("s.png", 16, 16))
bimg = png_b64(sample("b.png", 160, 160))
small = ["job.submit", {"image": {"png": simg}, "epochs": 120, "width": 16}]
pack = [r["result"]["job"] for r in as_uid(B, [small] * 4)]
wait_epoch(c, pack[0], 3)
large = [r["result"]["job"] for r in as_uid(A, [["job.submit", {
    "image": {"png": bimg}, "epochs": 4, "width": 16}]] * 3)]
late = [r["result"]["job"] for r in as_uid(B, [["job.submit", {
    "image": {"png": simg}, "epochs": 20, "width": 16}]] * 2)]
most = 0
end = time.time() + 300
while time.time() < end:
    d = c.call("daemon.status")["devices"][0]
    if any(c.call("job.get", {"job": j})["state"] == "running" for j in pack):
        most = max(most, d["gpu_bytes"])
    if all(c.call("job.get", {"job": j})["state"] in ("done", "failed", "cancelled")
           for j in pack + large + late):
        break
    time.sleep(0.1)
jobs = {j: c.call("job.get", {"job": j}) for j in pack + large + late}
tap.ok(all(jobs[j]["state"] == "done" for j in jobs), "every job ends done",
       {j: (jobs[j]["state"], jobs[j].get("error")) for j in jobs})
def events(j):
    return [json.loads(l)["text"] for l in
            open(os.path.join(os.environ["STATE"], "jobs", j, "events.ndjson"))]
ev = {j: events(j) for j in large}
starts = {j: sum(1 for e in ev[j] if e.startswith("starting on")) for j in large}
waits = {j: [e for e in ev[j] if e.startswith("waits:")] for j in large}
print("# the large jobs' starts %s, their waits %s" % (starts, {j: len(w) for j, w in waits.items()}))
print("# %s" % waits[large[0]][:1])
tap.ok(all(starts[j] == 1 for j in large), "each large job starts once (no rejoining)", ev)
tap.ok(all(len(waits[j]) <= 1 for j in large) and all("runs alone" in w[0] for w in waits.values() if w)
       and waits[large[0]], "each says at most once why it waits: it runs alone", waits)
def overlap(a, b):
    # the times are the loop's: a job's end is recorded a few ms after
    # the worker let it go, and the next job may have started meanwhile
    return a["started"] + 0.25 < b["finished"] and b["started"] + 0.25 < a["finished"]
shared = [(j, k) for j in large for k in jobs if k != j and overlap(jobs[j], jobs[k])]
tap.ok(not shared, "each large job runs alone: nothing trains beside it", shared)
hist = {j: [json.loads(l)["epoch"] for l in open(os.path.join(os.environ["STATE"], "jobs", j,
                                                              "metrics.ndjson"))] for j in large}
print("# at most %.1f MiB of device memory in use while B's pack ran (budget 24 MiB)" % (most / 2**20))
tap.ok(all(h == [1, 2, 3, 4] for h in hist.values()) and 0 < most <= 25165824,
       "each large job trains every epoch once; the pack stays within its budget", (hist, most))
tap.done()
EOF_PY
stop_daemon
tap_done
