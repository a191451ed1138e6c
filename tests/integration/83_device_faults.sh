#!/bin/bash
# 83_device_faults.sh - device loss and out-of-device-memory, injected with
# the test switch VKINR_FAULT (vkinrd-env(7)): the Nth submission (or
# allocation) of each device context fails.
#   1. Two workers on the one device, device_lost:N: job A loses its
#      device mid-fit; its worker reopens the device and resumes it from
#      its last checkpoint while job B, on the other worker, carries on;
#      both end done with every epoch once.
#   2. device_lost:1 (every new context fails at once): the job is retried
#      a bounded number of times (WORKER_DEVICE_RETRIES), then fails with
#      a message, and the daemon goes on.
#   3. One worker, oom:30: an allocation in the second job's setup
#      fails; the worker reopens its device, resumes from the checkpoint,
#      and both jobs end done.
# run.sh: long
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
run_py <<'EOF_PY'
import re
import signal
from rpc import *
tap = Tap()
state = os.environ["STATE"]
log_path = os.path.join(T, "daemon.log")
log = open(log_path, "a")

def start(fault, *devices):
    env = dict(os.environ, VKINR_FAULT=fault)
    # one job at a time: the faults are counted for a job's own programs
    args = [os.environ["VKINRD"], "--socket", SOCK, "--state-dir", state,
            "--pack", "1", "-v"]
    for dev in devices:
        args += ["--device", dev]
    d = subprocess.Popen(args, stdout=log, stderr=log, env=env)
    return d, connect_retry()

def stop(d):
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=20)

def history(job):
    return [json.loads(s)["epoch"] for s in
            open(os.path.join(state, "jobs", job, "metrics.ndjson"))]

img = sample("g.png", 24, 24)
# 1. two workers; A starts first, so it reaches its Nth submission first.
# An epoch takes about 4 submissions here (the checkpoints every 5 epochs
# read the weights back): at the 200th each job loses its device once, near
# epoch 50, and its next context finishes it (at the 100th, each context
# failed within 25 epochs, and an 80-epoch job could exhaust its retries)
d, c = start("device_lost:200", "0", "0")
a = submit(c, img, epochs=80, width=16, seed=1)
wait_epoch(c, a, 5)
b = submit(c, img, epochs=80, width=16, seed=2)
b_during, last_a, rewound = [], 0, False
end = time.time() + 90
while time.time() < end:
    ja, jb = c.call("job.get", {"job": a}), c.call("job.get", {"job": b})
    if ja["epoch"] < last_a:
        rewound = True
    if rewound and len(b_during) < 40:
        b_during.append(jb["epoch"])
    last_a = ja["epoch"]
    if ja["state"] in ("done", "failed") and jb["state"] in ("done", "failed"):
        break
    time.sleep(0.05)
ja, jb = c.call("job.get", {"job": a}), c.call("job.get", {"job": b})
text = open(log_path).read()
lost = text.count("the Vulkan device was lost at epoch")
# went back: seen by the client (its epoch fell), or in the log (it ran
# again from a checkpoint's epoch; a loss right after a checkpoint goes
# back by less than the client's polling can see)
resumed = re.findall(r"job %s: running from epoch ([1-9][0-9]*) to" % a, text)
tap.ok((rewound or resumed) and lost >= 1, "job A lost its device and went back "
       "to its checkpoint (%d losses in the log)" % lost, (rewound, resumed, lost))
tap.ok(len(set(b_during)) > 1 or jb["state"] == "done",
       "job B carried on meanwhile", b_during[:40])
tap.ok(ja["state"] == "done" and jb["state"] == "done" and
       history(a) == list(range(1, 81)) and history(b) == list(range(1, 81)),
       "both done, every epoch once", (ja, jb))
stop(d)

# 2. bounded: every new context loses its device at once
d, c = start("device_lost:1")
j = submit(c, img, epochs=20, width=16, seed=3)
j = wait_state(c, j, ("failed", "done"), timeout=60)
tap.ok(j["state"] == "failed" and "lost" in j.get("error", ""),
       "a device that keeps failing: retried a bounded number of times, then "
       "the job fails with a message", j)
tap.ok(c.call("hello")["protocol"] >= 1, "the daemon goes on")
stop(d)

# 3. out of device memory in the second job's setup
d, c = start("oom:30")
# the 30th allocation is counted for Adam without an average: the first
# job's buffers (the best model's too, about 22) and the context's one
# staging buffer come before, so it falls in the second job's buffers;
# the buffers other recipes add would move it
plain = {"optimizer": "adam", "average": "none"}
j1 = submit(c, img, epochs=10, width=16, seed=4, **plain)
j2 = submit(c, img, epochs=30, width=16, seed=5, **plain)
r1 = wait_state(c, j1, ("failed", "done"), timeout=60)
r2 = wait_state(c, j2, ("failed", "done"), timeout=60)
tap.ok("warning: job %s: out of device memory" % j1 in open(log_path).read()
       or "warning: job %s: out of device memory" % j2 in open(log_path).read(),
       "the injected out-of-memory was met, the device reopened", (r1, r2))
tap.ok(r1["state"] == "done" and r2["state"] == "done" and
       history(j1) == list(range(1, 11)) and history(j2) == list(range(1, 31)),
       "both jobs ran to the end, every epoch once", (r1, r2))
tap.ok(c.call("daemon.status")["devices"][0]["state"] == "idle",
       "the worker is back to idle")
stop(d)
tap.done()
EOF_PY
tap_done
