#!/bin/bash
# 03_pause_resume_cancel.sh - pause holds (the epoch stops advancing and
# the device is idle), resume continues from the same epoch (no epoch
# repeated or lost in the history), cancel ends for good; a cancelled job
# cannot be resumed; remove deletes it.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import time
from rpc import *
tap = Tap()
img = sample("c.png", 24, 24)
c = Client()
job = submit(c, img, epochs=100000, width=16, seed=9)
wait_epoch(c, job, 5)
r = c.call("job.pause", {"job": job})
tap.ok(r["state"] == "paused", "job.pause answers once paused", r)
e1 = c.call("job.get", {"job": job})["epoch"]
time.sleep(1.5)
j = c.call("job.get", {"job": job})
st = c.call("daemon.status")
tap.ok(j["epoch"] == e1 and j["state"] == "paused", "pause holds the epoch", (e1, j["epoch"]))
tap.ok(st["devices"][0]["state"] == "idle", "the device is free while paused", st["devices"])
r = c.call("job.resume", {"job": job})
tap.ok(r["state"] in ("queued", "running"), "job.resume queues it", r)
j = wait_epoch(c, job, e1 + 5)
tap.ok(j["state"] == "running" and j["epoch"] >= e1 + 5, "resume continues", j)
r = c.call("job.cancel", {"job": job})
e2 = c.call("job.get", {"job": job})["epoch"]
time.sleep(1.0)
j = c.call("job.get", {"job": job})
tap.ok(r["state"] == "cancelled" and j["state"] == "cancelled" and j["epoch"] == e2,
       "cancel ends it", (r, j))
hist = [json.loads(s)["epoch"] for s in
        open(os.path.join(os.environ["STATE"], "jobs", job, "metrics.ndjson"))]
tap.ok(hist == list(range(1, e2 + 1)), "history has every epoch once across pause/resume",
       hist[-10:])
r = c.request("job.resume", {"job": job})
tap.ok(r.get("error", {}).get("code") == -32002, "a cancelled job cannot be resumed", r)
r = c.call("job.remove", {"job": job})
g = c.request("job.get", {"job": job})
tap.ok(g.get("error", {}).get("code") == -32001
       and not os.path.exists(os.path.join(os.environ["STATE"], "jobs", job)),
       "job.remove deletes the job and its files", g)
tap.done()
EOF_PY
stop_daemon
tap_done
