#!/bin/bash
# 04_kill_restart.sh - kill -9 of the daemon mid-fit, then a restart: the
# job goes back to the queue, resumes from its last checkpoint and
# finishes; its history has every epoch exactly once; and its metrics and
# final weights equal those of an uninterrupted run with the same seed
# (job 1, run first in the same daemon). Checkpoints every 10 epochs here
# (VKINRD_CHECKPOINT_EPOCHS) so the kill lands between two of them.
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
export VKINRD_CHECKPOINT_EPOCHS=10
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import base64, signal, subprocess
from rpc import *
tap = Tap()
img = sample("d.png", 24, 24)
c = Client()
ref = submit(c, img, epochs=80, width=16, seed=11)
follow(c, ref)
ref_export = c.call("job.export", {"job": ref})
ref_hist = [json.loads(s) for s in
            open(os.path.join(os.environ["STATE"], "jobs", ref, "metrics.ndjson"))]

job = submit(c, img, epochs=80, width=16, seed=11)
j = wait_epoch(c, job, 35)
os.kill(int(os.environ["DPID"]), signal.SIGKILL)
c.close()
wait_unlocked(os.environ["STATE"])
tap.ok(j["state"] == "running" and 35 <= j["epoch"] < 80, "killed mid-fit", j)
# what a write interrupted by the kill would have left behind
leftover = os.path.join(os.environ["STATE"], "jobs", job, "checkpoint.safetensors.tmp.99999")
open(leftover, "wb").write(b"half a checkpoint")

log = open(os.path.join(T, "daemon.log"), "a")
d = subprocess.Popen([os.environ["VKINRD"], "--socket", SOCK, "--state-dir",
                      os.environ["STATE"], "-v"], stdout=log, stderr=log)
try:
    c = connect_retry(60)
    j = c.call("job.get", {"job": job})
    tap.ok(j["state"] in ("queued", "running"), "after restart the job is queued again", j)
    tap.ok(not os.path.exists(leftover), "the leftover of an interrupted write is removed")
    epochs, states, metrics = follow(c, job)
    tap.ok(states[-1:] == ["done"], "it finishes", states)
    tap.ok(epochs == list(range(1, 81)), "replayed history: every epoch once", epochs)
    hist = [json.loads(s) for s in
            open(os.path.join(os.environ["STATE"], "jobs", job, "metrics.ndjson"))]
    tap.ok([h["epoch"] for h in hist] == list(range(1, 81)),
           "metrics.ndjson: every epoch once", [h["epoch"] for h in hist])
    tap.ok([h["psnr"] for h in hist] == [h["psnr"] for h in ref_hist],
           "per-epoch psnr equals the uninterrupted run's")
    x = c.call("job.export", {"job": job})
    tap.ok(x["model"]["safetensors"] == ref_export["model"]["safetensors"]
           and x["psnr"] == ref_export["psnr"],
           "final weights equal the uninterrupted run's (same bytes)",
           (x["psnr"], ref_export["psnr"]))
finally:
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=15)
tap.done()
EOF_PY
DPID=
tap_done
