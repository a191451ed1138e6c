#!/bin/bash
# 61_two_workers.sh - two workers on one device (`--device 0 --device 0`):
# daemon.status lists both, two jobs run at the same time (one on each,
# seen through daemon.status), and each ends with exactly the PSNR, the
# history and the model it gets when it runs alone (same seed, same
# result): workers share nothing but the device. `vkinrctl status` shows
# the workers as a table.
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
start_daemon --device 0 --device 0 || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import base64, subprocess, time
from rpc import *
tap = Tap()
imgs = []
for name, w, h, seed in (("a.png", 32, 32, 1), ("b.png", 28, 36, 2)):
    path = os.path.join(T, name)
    subprocess.run([os.environ["MKSAMPLE"], path, str(w), str(h), str(seed)],
                   check=True, stdout=subprocess.DEVNULL)
    imgs.append(path)
c = connect_retry()
for _ in range(100):
    st = c.call("daemon.status")
    if all(d["state"] != "starting" for d in st["devices"]):
        break
    time.sleep(0.1)
devs = st["devices"]
tap.ok(len(devs) == 2 and [d["worker"] for d in devs] == [0, 1]
       and all(d["state"] == "idle" and d["name"] and d["job"] is None
               and isinstance(d["gpu_bytes"], (int, float)) for d in devs)
       and st["queue"] == 0,
       "daemon.status lists two idle workers with their device, job, memory; the queue", st)

CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
r = subprocess.run([CTL, "--socket", os.environ["SOCK"], "status"],
                   capture_output=True, text=True, timeout=60)
lines = r.stdout.splitlines()
head = [i for i, l in enumerate(lines) if l.split()[:5] == ["WORKER", "STATE", "JOB", "MEMORY", "DEVICE"]]
rows = [l.split() for l in lines[head[0] + 1:]] if head else []
tap.ok(r.returncode == 0 and len(rows) == 2 and [x[0] for x in rows] == ["0", "1"]
       and all(x[1] == "idle" and x[2] == "-" and devs[0]["name"].split()[0] in x for x in rows),
       "vkinrctl status: a table with a row per worker", r.stdout + r.stderr)

EPOCHS = 200  # long enough to see both running, with the CPU GEMM family too
def run(img, seed):
    return submit(c, img, epochs=EPOCHS, width=16, seed=seed, lr=1e-3)

def outcome(job):
    j = wait_state(c, job, ("done", "failed", "cancelled"), timeout=300)
    hist = [json.loads(s) for s in
            open(os.path.join(os.environ["STATE"], "jobs", job, "metrics.ndjson"))]
    model = c.call("job.export", {"job": job})["model"]["safetensors"]
    return j, [(h["epoch"], h["psnr"]) for h in hist], model

# alone, one after the other
alone = []
for img, seed in zip(imgs, (11, 12)):
    alone.append(outcome(run(img, seed)))
tap.ok(all(a[0]["state"] == "done" for a in alone), "each job alone: done",
       [a[0] for a in alone])

# together
ja, jb = run(imgs[0], 11), run(imgs[1], 12)
both, mem, seen, states = False, False, [], None
end = time.time() + 120
while time.time() < end:
    st = c.call("daemon.status")
    jobs = sorted(d["job"] for d in st["devices"] if d["state"] == "running" and d["job"])
    seen.append(jobs)
    if jobs == sorted([ja, jb]):
        if not both:
            states = [c.call("job.get", {"job": j})["state"] for j in (ja, jb)]
        both = True
        # memory shows once each worker has built its fit
        mem = all(d["gpu_bytes"] > 0 for d in st["devices"])
        if mem:
            break
    if all(c.call("job.get", {"job": j})["state"] == "done" for j in (ja, jb)):
        break
    time.sleep(0.02)
tap.ok(both and states == ["running", "running"],
       "the two jobs run at the same time, one on each worker", seen[-5:])
tap.ok(mem, "daemon.status shows device memory in use by both workers", st["devices"])
together = [outcome(ja), outcome(jb)]
tap.ok(all(t[0]["state"] == "done" and t[0]["epoch"] == EPOCHS for t in together),
       "both end done", [t[0] for t in together])
tap.ok({together[0][0]["worker"], together[1][0]["worker"]} == {None}
       and all(t[0]["device"] == devs[0]["name"] for t in together),
       "each job records its device")
tap.ok(all(t[0]["psnr"] == a[0]["psnr"] and t[0]["model_psnr"] == a[0]["model_psnr"]
           for t, a in zip(together, alone)),
       "each ends with exactly the PSNR it reaches alone",
       [(t[0]["psnr"], a[0]["psnr"], t[0]["model_psnr"], a[0]["model_psnr"])
        for t, a in zip(together, alone)])
tap.ok(all(t[1] == a[1] and len(t[1]) == EPOCHS for t, a in zip(together, alone)),
       "... and the same PSNR at every epoch")
tap.ok(all(t[2] == a[2] for t, a in zip(together, alone)),
       "... and the same model, byte for byte")
tap.done()
EOF_PY
stop_daemon
tap_done
