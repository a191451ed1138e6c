#!/bin/bash
# 92_export_no_checkpoint.sh - an export of a job that ran epochs but has
# no checkpoint says exactly why (issue 24, item 13). Checkpoints are made
# rare, a job runs some epochs, the daemon is killed (-9) and restarted
# on a device that does not exist, so the job waits, queued, with its
# epochs in its history and no checkpoint: its export says it ran N epochs,
# has no checkpoint, and will start again from epoch 0; a job that never
# ran says it has not run yet (the restart cut the history back to the
# missing checkpoint, so the message says it has run, not how far); the first, cancelled, says it stopped
# before a checkpoint. The running job's export (the live weights) works.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
export VKINRD_CHECKPOINT_EPOCHS=1000000 VKINRD_CHECKPOINT_SECONDS=1000000
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("e.png", 16, 16)
job = submit(c, img, epochs=1000000, width=16)
wait_epoch(c, job, 20)
r = c.request("job.export", {"job": job})
tap.ok("result" in r and r["result"]["model"]["safetensors"],
       "a running job exports its live weights", r.get("error"))
open(os.path.join(T, "job"), "w").write(job)
tap.done()
EOF_PY
kill -9 "$DPID"; wait "$DPID" 2>/dev/null; DPID=
TAP_N=1
start_daemon --device no-such-device || { echo "not ok 2 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
job = open(os.path.join(T, "job")).read()
j = c.call("job.get", {"job": job})
r = c.request("job.export", {"job": job})
m = r.get("error", {}).get("message", "")
tap.ok(j["state"] == "queued" and j["started"] and r.get("error", {}).get("code") == -32002
       and "has run but has no checkpoint" in m and "epoch 0" in m,
       "a queued job that ran epochs without a checkpoint: the export says why", (j, r))
p = ctl("export", job, "--model", os.path.join(T, "m.safetensors"))
tap.ok(p.returncode == 3 and "no checkpoint" in p.stderr, "vkinrctl export says the same",
       (p.returncode, p.stderr))
new = submit(c, sample("n.png", 16, 16), epochs=5, width=16)
r = c.request("job.export", {"job": new})
tap.ok("has not run yet" in r.get("error", {}).get("message", ""), "a job that never ran: not run yet", r)
c.call("job.cancel", {"job": job})
r = c.request("job.export", {"job": job})
tap.ok("stopped before a checkpoint" in r.get("error", {}).get("message", ""),
       "cancelled before any checkpoint: said so", r)
tap.done()
EOF_PY
tap_done
