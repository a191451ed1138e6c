#!/bin/bash
# 84_diverge.sh - a job whose loss is not finite. Its init model has every
# weight at 1e30, so the first epoch's loss overflows: the worker goes back
# to the job's last good state (its checkpoint, here its start) with half
# the learning rate, at most WORKER_DIVERGE_RETRIES (3) times, then fails
# the job with a message saying it diverged. job.get shows the lowered lr.
# A job alongside, with a sane lr, is not affected.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import struct
from rpc import *
tap = Tap()
img = sample("h.png", 24, 24)
c = Client()
ref = submit(c, img, epochs=10, width=16, seed=6)
follow(c, ref)
pkg = base64.b64decode(c.call("job.export", {"job": ref})["model"]["safetensors"])
hlen = int.from_bytes(pkg[:8], "little")
header = json.loads(pkg[8:8 + hlen])
data = bytearray(pkg[8 + hlen:])
for name, t in header.items():
    if name != "__metadata__" and t["dtype"] == "F32":
        lo, hi = t["data_offsets"]
        data[lo:hi] = struct.pack("<%df" % ((hi - lo) // 4), *[1e30] * ((hi - lo) // 4))
bomb = base64.b64encode(pkg[:8 + hlen] + bytes(data)).decode()

job = c.call("job.submit", {"image": {"png": png_b64(img)}, "epochs": 40,
                            "lr": 0.008, "init": {"safetensors": bomb}})["job"]
j = wait_state(c, job, ("failed", "done"), timeout=60)
tap.ok(j["state"] == "failed" and "diverged" in j.get("error", ""),
       "a job that keeps diverging fails with a message saying so", j)
tap.ok("3 rollbacks" in j.get("error", ""), "after 3 rollbacks", j.get("error"))
tap.ok(abs(j["lr"] - 0.001) < 1e-12, "its lr was halved each time: 0.008 -> 0.001", j["lr"])
log = open(os.path.join(T, "daemon.log")).read()
tap.ok(log.count("rolling back") + log.count("back to the checkpoint") == 3,
       "three rollbacks in the log")
tap.ok(c.call("job.get", {"job": ref})["state"] == "done" and c.call("hello"),
       "the daemon goes on")
tap.done()
EOF_PY
stop_daemon
tap_done
