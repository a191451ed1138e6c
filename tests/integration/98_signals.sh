#!/bin/bash
# 98_signals.sh - every signal a service manager or a terminal sends
# (issue 24, item 9), with a job running:
#   - SIGHUP opens the --log file again (logrotate moved it), says so in
#     the new file, and never stops the daemon: the job keeps its epochs;
#   - SIGUSR1 and SIGUSR2 write a status line; SIGPIPE, SIGTSTP (^Z),
#     SIGTTIN, SIGTTOU, SIGXFSZ, SIGWINCH, SIGURG and SIGCONT change
#     nothing: the daemon answers and is not stopped;
#   - SIGSTOP then SIGCONT: it answers again and the job goes on;
#   - SIGQUIT (^\) and SIGINT (^C) stop it as SIGTERM does: a line, the
#     running job checkpointed and queued, the socket removed, exit 0,
#     and after a restart the job goes on from its checkpoint.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
LOG=$T/vkinrd.log
start_daemon --log "$LOG" || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import signal, subprocess
from rpc import *
tap = Tap()
pid = int(os.environ["DPID"])
log = os.path.join(T, "vkinrd.log")
img = sample("s.png", 16, 16)
c = Client()
job = submit(c, img, epochs=10000000, width=16)
wait_epoch(c, job, 10)

def state():
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"

def alive():
    return state() not in ("T", "t", "Z", "X", "gone")

def answers():
    try:
        return Client(timeout=10).call("hello")["daemon"] == "vkinrd"
    except Exception:
        return False

def wait_line(path, text, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and text in open(path, errors="replace").read():
            return True
        time.sleep(0.05)
    return False

tap.ok(wait_line(log, "ready on"), "--log: the daemon's lines go to the file",
       open(log).read()[-500:] if os.path.exists(log) else "no file")
os.rename(log, log + ".1")
before = c.call("job.get", {"job": job})["epoch"]
os.kill(pid, signal.SIGHUP)
reopened = wait_line(log, "SIGHUP: log file opened again")
time.sleep(0.5)
j = c.call("job.get", {"job": job})
tap.ok(reopened and alive() and answers() and j["state"] == "running"
       and j["epoch"] >= before and "SIGHUP" not in open(log + ".1").read(),
       "SIGHUP: the log file is opened again, the daemon and its job go on",
       (reopened, j, open(log).read()[-600:] if os.path.exists(log) else None))

os.kill(pid, signal.SIGUSR1)
os.kill(pid, signal.SIGUSR2)
tap.ok(wait_line(log, "User defined signal 1: 1 jobs (0 queued, 1 running")
       and wait_line(log, "User defined signal 2:") and alive() and answers(),
       "SIGUSR1 and SIGUSR2 write a status line and change nothing",
       open(log).read()[-800:])

quiet = [signal.SIGPIPE, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
         signal.SIGXFSZ, signal.SIGWINCH, signal.SIGURG, signal.SIGCONT]
bad = []
for s in quiet:
    os.kill(pid, s)
    time.sleep(0.2)
    if not (alive() and answers()):
        bad.append(s.name)
e0 = c.call("job.get", {"job": job})["epoch"]
time.sleep(1)
e1 = c.call("job.get", {"job": job})["epoch"]
tap.ok(not bad and e1 > e0 and wait_line(log, "(Stopped) ignored"),
       "PIPE, TSTP, TTIN, TTOU, XFSZ, WINCH, URG, CONT: still answering, the job still training",
       (bad, e0, e1))

os.kill(pid, signal.SIGSTOP)
time.sleep(1)
stopped = not alive()
os.kill(pid, signal.SIGCONT)
time.sleep(0.3)
e2 = c.call("job.get", {"job": job})["epoch"]
time.sleep(1)
e3 = c.call("job.get", {"job": job})["epoch"]
tap.ok(stopped and alive() and answers() and e3 > e2,
       "SIGSTOP then SIGCONT: it answers again and the job goes on", (stopped, e2, e3))

at = c.call("job.get", {"job": job})["epoch"]
os.kill(pid, signal.SIGQUIT)
t0 = time.time()
while time.time() - t0 < 15:
    if state() in ("Z", "gone"):
        break
    time.sleep(0.05)
st = json.load(open(os.path.join(os.environ["STATE"], "jobs", job, "state.json")))
tap.ok(time.time() - t0 < 10 and st["state"] == "queued" and not os.path.exists(SOCK)
       and wait_line(log, "Quit): checkpointing running jobs and stopping"),
       "SIGQUIT stops it as SIGTERM does: checkpointed, queued, socket removed",
       (time.time() - t0, st, open(log).read()[-600:]))
open(os.path.join(T, "job"), "w").write("%s %d" % (job, at))
tap.done()
EOF_PY
wait "$DPID"
rc=$?
DPID=
TAP_N=6
check "SIGQUIT: exit status 0" test "$rc" = 0
start_daemon --log "$LOG" || { echo "not ok 8 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
job, at = open(os.path.join(T, "job")).read().split()
c = connect_retry()
first = None
end = time.time() + 60
while time.time() < end:
    j = c.call("job.get", {"job": job})
    if j["state"] == "running" and j["epoch"] > 0:
        first = j["epoch"]
        break
    time.sleep(0.05)
tap.ok(first is not None and first >= int(at) - 5,
       "after the restart the job goes on from its checkpoint, not from epoch 0",
       (first, at))
tap.done()
EOF_PY
TAP_N=8
kill -INT "$DPID"
wait "$DPID"
rc=$?
DPID=
check "SIGINT: a clean stop (exit 0, socket removed)" test "$rc" = 0 -a ! -e "$SOCK"
tap_done
