#!/bin/bash
# 99_call_timeout.sh - every vkinrctl call has a timeout (issue 24, item
# 10):
#   - a daemon stopped by SIGSTOP: `status` and `list` give up after
#     --call-timeout (or VKINR_CALL_TIMEOUT) seconds, exit 69, and say
#     what happened and how to wait longer; after SIGCONT all is well;
#   - a bad value is a usage error (exit 2);
#   - a call that waits for a worker (export of a running job, answered
#     at its next epoch boundary) takes longer than the timeout and still
#     succeeds: the daemon answers a hello meanwhile; `wait` of a job that
#     runs longer than the timeout ends with the job.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import signal
from rpc import *
tap = Tap()
pid = int(os.environ["DPID"])
c = Client()

def timed(*args, env=None):
    t0 = time.time()
    p = subprocess.run([CTL] + [str(a) for a in args], capture_output=True, text=True,
                       env=dict(os.environ, VKINR_SOCKET=SOCK, **(env or {})), timeout=120)
    return p, time.time() - t0

os.kill(pid, signal.SIGSTOP)
try:
    p, took = timed("--call-timeout", "1.5", "status")
    tap.ok(p.returncode == 69 and 1.4 < took < 10 and "did not answer" in p.stderr
           and "--call-timeout" in p.stderr and "SIGSTOP" in p.stderr,
           "a stopped daemon: status gives up after --call-timeout, exit 69, saying why",
           (p.returncode, took, p.stderr))
    p, took = timed("list", env={"VKINR_CALL_TIMEOUT": "1"})
    p2, took2 = timed("show", "1", "--call-timeout", "1")
    tap.ok(p.returncode == 69 and took < 10 and p2.returncode == 69 and took2 < 10,
           "VKINR_CALL_TIMEOUT and the command's own --call-timeout do the same",
           (p.returncode, took, p.stderr, p2.returncode, took2, p2.stderr))
finally:
    os.kill(pid, signal.SIGCONT)
p, _ = timed("--call-timeout", "soon", "status")
p2, _ = timed("status", env={"VKINR_CALL_TIMEOUT": "-1"})
tap.ok(p.returncode == 2 and p2.returncode == 2 and "--call-timeout" in p.stderr
       and "VKINR_CALL_TIMEOUT" in p2.stderr, "a bad timeout is a usage error",
       (p.stderr, p2.stderr))
p, took = timed("--call-timeout", "1", "status")
tap.ok(p.returncode == 0 and "vkinrd" in p.stdout, "after SIGCONT it answers again",
       (p.returncode, p.stdout, p.stderr))

# an epoch long enough to outlast a short timeout (below): the
# smallest that is still well above the client's own start-up time
img = sample("big.png", 128, 128)
job = submit(c, img, epochs=100000, width=32)
j = wait_epoch(c, job, 2)
ms = j["ms"] or 1000
# a quarter of an epoch, but 1 s at least: at the timeout the client asks
# the daemon hello on a second connection, and on a loaded machine that
# answer alone may take longer than a fraction of a second
tmo = max(1.0, ms / 1000 / 4)
p, took = timed("--call-timeout", "%.3f" % tmo, "export", job, "--model", os.path.join(T, "m.safetensors"),
                "--recon", os.path.join(T, "r.png"))
tap.ok(p.returncode == 0 and os.path.getsize(os.path.join(T, "m.safetensors")) > 0,
       "an export that waits for the epoch boundary outlasts the timeout and succeeds",
       (p.returncode, took, tmo, ms, p.stderr))
print("# export took %.2f s, timeout %.2f s, epoch %.0f ms" % (took, tmo, ms))
p, took = timed("--call-timeout", "%.3f" % tmo, "pause", job)
tap.ok(p.returncode == 0 and c.call("job.get", {"job": job})["state"] == "paused",
       "a pause that waits for the epoch boundary succeeds too", (p.returncode, took, p.stderr))
c.call("job.remove", {"job": job})

small = sample("small.png", 16, 16)
job = submit(c, small, epochs=1500, width=16)
p, took = timed("--call-timeout", "0.5", "wait", job)
tap.ok(p.returncode == 0 and took > 0.5 and c.call("job.get", {"job": job})["state"] == "done",
       "wait outlasts the call timeout and ends with the job", (p.returncode, took, p.stderr))
tap.done()
EOF_PY
tap_done
