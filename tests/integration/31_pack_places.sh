#!/bin/bash
# 31_pack_places.sh - a worker never holds more jobs than --pack, not even
# while jobs leave it (issue 31, left from item 4: "the worker's list can
# briefly exceed --pack while evicted jobs leave"). Real uids
# (users.bash), one worker, --pack 4.
#   - uid B's three 32x32 jobs train; uid A sends two on one connection:
#     the first sends B's newest back to the queue for its share and
#     takes the free place; the second waits until B's job has left
#     (before this change it was handed over at once, a fifth job on the
#     worker while B's was leaving);
#   - with the pack full, B's next job waits; B pauses one of its jobs,
#     and a queued job of B's starts only once that one has left;
#   - from the jobs' events (the loop's times of each start and each
#     end), at no time do more than 4 jobs run on the worker: the loop
#     counts a job the worker has let go until it has read its end.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/users.bash"
tap_plan 3
need_device
need_users 2
PACK=4 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
import re
tap = Tap()
A, B = UIDS
c = Client()
img = png_b64(sample("m.png", 32, 32))
long_job = ["job.submit", {"image": {"png": img}, "epochs": 1000000, "width": 16}]
bs = [r["result"]["job"] for r in as_uid(B, [long_job] * 3)]
for j in bs:
    wait_epoch(c, j, 2, timeout=120)
as_ = [r["result"]["job"] for r in as_uid(A, [long_job] * 2)]
for j in as_:
    wait_epoch(c, j, 2, timeout=120)
more = call_as(B, *long_job)["job"]
time.sleep(1)
full = c.call("job.get", {"job": more})["state"]
staying = [j for j in bs if c.call("job.get", {"job": j})["state"] == "running"]
call_as(B, "job.pause", {"job": staying[0]})
end = time.time() + 60
while time.time() < end and not any(
        c.call("job.get", {"job": j})["state"] == "running" for j in (bs[2], more)):
    time.sleep(0.1)
time.sleep(0.5)
jobs = bs + as_ + [more]
def events(j):
    return [(json.loads(l)["time"], json.loads(l)["text"]) for l in
            open(os.path.join(os.environ["STATE"], "jobs", j, "events.ndjson"))]
END = re.compile(r"^((queued|paused|cancelled|done) at epoch|failed:|paused:)")
marks = []
for j in jobs:
    for t, e in events(j):
        if e.startswith("starting on"):
            marks.append((t, 1, j))
        elif END.match(e):
            marks.append((t, -1, j))
# at equal times an end counts before a start
marks.sort(key=lambda m: (m[0], m[1]))
n = most = 0
for t, d, j in marks:
    n += d
    most = max(most, n)
sent = [e for _, e in events(bs[2]) if e.startswith("back to the queue")]
print("# at most %d jobs on the worker at once (--pack 4); B's newest: %s" % (most, sent[:1]))
tap.ok(sent and all(c.call("job.get", {"job": j})["state"] == "running" for j in as_),
       "A's two jobs run, B's newest sent back for them", [events(j) for j in as_])
again = [c.call("job.get", {"job": j})["state"] for j in (bs[2], more)]
tap.ok(full == "queued" and "running" in again,
       "B's next job waits while the pack is full, and a queued one of B's runs once B's "
       "paused one has left", (full, again))
tap.ok(most == 4, "never more than --pack jobs on the worker, while jobs leave (%d)" % most,
       marks)
for j in jobs:
    c.request("job.cancel", {"job": j})
tap.done()
EOF_PY
stop_daemon
tap_done
