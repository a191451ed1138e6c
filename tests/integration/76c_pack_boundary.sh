#!/bin/bash
# 76c_pack_boundary.sh - many jobs of a pack writing at the same epoch
# boundary (a dataset's jobs checkpoint together, and end together): their
# checkpoints and exports are written by several threads, and nothing of
# a job's own result changes. Twelve jobs checkpoint every 4 epochs
# (more than the 8 from which the writes are spread over threads), the
# daemon is killed (kill -9) and restarted mid-way, and every model equals,
# byte for byte, the same job trained alone (--pack 1); each job's history
# has every epoch once, and the last checkpoint is of the last epoch.
# run.sh: long
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
export VKINRD_CHECKPOINT_EPOCHS=4
run_py <<'EOF_PY'
import json, re, signal, subprocess
from rpc import *
tap = Tap()
N, EPOCHS = 12, 14
imgs = [sample("b%d.png" % i, 8 + 4 * (i % 2), 8) for i in range(N)]

def daemon(state, pack):
    log = open(os.path.join(T, "daemon.log"), "a")
    return subprocess.Popen([os.environ["VKINRD"], "--socket", SOCK, "--state-dir",
                             state, "--pack", str(pack), "-vv"], stdout=log, stderr=log)

def submit_all(c):
    return [submit(c, img, epochs=EPOCHS, width=16, seed=i + 1)
            for i, img in enumerate(imgs)]

def models(c, jobs):
    return [c.call("job.export", {"job": j})["model"]["safetensors"] for j in jobs]

d = daemon(os.path.join(T, "alone"), 1)
c = connect_retry()
alone = submit_all(c)
for j in alone:
    wait_state(c, j, ["done"], timeout=300)
ref = models(c, alone)
c.close()
d.send_signal(signal.SIGTERM); d.wait(timeout=30)

state = os.path.join(T, "packed")
d = daemon(state, 16)
c = connect_retry()
jobs = submit_all(c)
wait_epoch(c, jobs[-1], 6, timeout=300)
d.send_signal(signal.SIGKILL); d.wait()
c.close()
ckpts = [os.path.exists(os.path.join(state, "jobs", j, "checkpoint.safetensors"))
         for j in jobs]
tap.ok(all(ckpts), "every job had a checkpoint when the daemon was killed", ckpts)
d = daemon(state, 16)
try:
    c = connect_retry()
    ends = [wait_state(c, x, ["done", "failed", "paused"], timeout=300)["state"]
            for x in jobs]
    tap.ok(ends == ["done"] * N, "after kill -9 every job finishes", ends)
    got = models(c, jobs)
    same = [got[k] == ref[k] for k in range(N)]
    tap.ok(all(same), "every packed model equals the job alone, byte for byte", same)
    hist = []
    for j in jobs:
        rows = [json.loads(l) for l in open(os.path.join(state, "jobs", j, "metrics.ndjson"))]
        hist.append([r["epoch"] for r in rows] == list(range(1, EPOCHS + 1)))
    tap.ok(all(hist), "each history has every epoch once", hist)
    epochs = [c.call("job.get", {"job": j})["epoch"] for j in jobs]
    tap.ok(epochs == [EPOCHS] * N, "every job ended at its last epoch", epochs)
    spread = re.findall(r"(\d+) jobs write their files at this boundary, by (\d+) threads",
                        open(os.path.join(T, "daemon.log")).read())
    tap.ok(any(int(n) >= 8 and int(k) > 1 for n, k in spread),
           "some boundary had its files written by several threads", spread[-4:])
finally:
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=30)
tap.done()
EOF_PY
