#!/bin/bash
# 76_packs.sh - a worker's pack: jobs of different sizes, epochs, rates,
# seeds and recipes trained together (vkinrd --pack 8) give the exported
# models, byte for byte, that they give one at a time (--pack 1), with one
# of them paused and resumed mid-way, one cancelled mid-way, and the daemon
# killed (kill -9) and restarted while the pack trains: every job resumes
# from its checkpoint and finishes. The two runs' times are printed (on
# lavapipe a job's time is its arithmetic, which a pack does not shrink).
# run.sh: long
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
export VKINRD_CHECKPOINT_EPOCHS=10
run_py <<'EOF_PY'
import base64, signal, subprocess
from rpc import *
tap = Tap()
specs = [  # w, h, epochs, seed, lr, optimizer
    (16, 16, 40, 1, 2e-3, "muon"), (20, 12, 30, 2, 3e-3, "muon"),
    (12, 20, 50, 3, 1e-3, "muon"), (16, 16, 45, 4, 1e-3, "adam"),
    (24, 16, 40, 5, 2e-3, "muon"), (16, 16, 60, 6, 2e-3, "muon"),
]
imgs = [sample("p%d.png" % i, w, h) for i, (w, h, *_) in enumerate(specs)]

def daemon(state, pack):
    log = open(os.path.join(T, "daemon.log"), "a")
    return subprocess.Popen([os.environ["VKINRD"], "--socket", SOCK, "--state-dir",
                             state, "--pack", str(pack), "-v"], stdout=log, stderr=log)

def submit_all(c):
    return [submit(c, img, epochs=e, width=16, seed=s, lr=lr, optimizer=o)
            for img, (w, h, e, s, lr, o) in zip(imgs, specs)]

def models(c, jobs):
    return [c.call("job.export", {"job": j})["model"]["safetensors"] for j in jobs]

# one at a time
d = daemon(os.path.join(T, "alone"), 1)
t0 = time.time()
c = connect_retry()
alone = submit_all(c)
for j in alone:
    wait_state(c, j, ["done"], timeout=300)
t_alone = time.time() - t0
ref = models(c, alone)
c.close()
d.send_signal(signal.SIGTERM); d.wait(timeout=30)

# packed, with a pause, a cancel and a kill -9
state = os.path.join(T, "packed")
d = daemon(state, 8)
t0 = time.time()
c = connect_retry()
jobs = submit_all(c)
j = wait_epoch(c, jobs[2], 12, timeout=300)
running = [c.call("job.get", {"job": x})["state"] for x in jobs]
tap.ok(running.count("running") == len(jobs), "all six train at once", running)
c.call("job.pause", {"job": jobs[2]})
c.call("job.cancel", {"job": jobs[5]})
wait_state(c, jobs[2], ["paused"], timeout=120)
wait_state(c, jobs[5], ["cancelled"], timeout=120)
wait_epoch(c, jobs[0], 22, timeout=300)
d.send_signal(signal.SIGKILL); d.wait()
c.close()
d = daemon(state, 8)
try:
    c = connect_retry()
    c.call("job.resume", {"job": jobs[2]})
    ends = [wait_state(c, x, ["done", "cancelled", "failed"], timeout=300)["state"]
            for x in jobs]
    t_pack = time.time() - t0
    tap.ok(ends == ["done"] * 5 + ["cancelled"], "after kill -9 every job finishes, "
           "the cancelled one stays cancelled", ends)
    got = models(c, jobs[:5])
    for k in range(5):
        if k in (0, 2):
            tap.ok(got[k] == ref[k], "job %d (%s) packed equals alone, byte for byte"
                   % (k + 1, "killed mid-way" if k == 0 else "paused mid-way"))
    tap.ok(all(got[k] == ref[k] for k in (1, 3, 4)),
           "the others (another size, rate, recipe) equal alone too")
    tap.ok(c.call("job.get", {"job": jobs[5]})["epoch"] < 60, "the cancelled one stopped mid-way")
    logs = open(os.path.join(T, "daemon.log")).read()
    tap.ok("resum" in logs or "running from epoch" in logs, "the restart resumed the pack's jobs")
    print("# one at a time %.1f s, packed (with the pause, cancel and restart) %.1f s"
          % (t_alone, t_pack))
finally:
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=30)
tap.done()
EOF_PY
