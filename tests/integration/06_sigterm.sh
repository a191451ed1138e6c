#!/bin/bash
# 06_sigterm.sh - SIGTERM checkpoints the running job and the daemon exits
# within a few seconds; after a restart the job resumes at the epoch where
# it stopped (nothing lost, nothing repeated) and finishes.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import signal, subprocess
from rpc import *
tap = Tap()
img = sample("f.png", 24, 24)
c = Client()
job = submit(c, img, epochs=60, width=16, seed=4)
wait_epoch(c, job, 15)
pid = int(os.environ["DPID"])
t0 = time.time()
os.kill(pid, signal.SIGTERM)
while time.time() - t0 < 60:
    try:
        os.kill(pid, 0)
        if open("/proc/%d/stat" % pid).read().split()[2] == "Z":
            break
    except OSError:  # gone, between the two looks or before
        break
    time.sleep(0.05)
took = time.time() - t0
# within 5 s by the daemon's own log, from the signal to "stopped"; the
# process's exit after it (a sanitizer build's leak check, a loaded
# machine) is bounded loosely
import datetime
stamp = lambda l: datetime.datetime.strptime(l[:23], "%Y-%m-%d %H:%M:%S.%f")
lines = [l for l in open(os.path.join(T, "daemon.log")) if l[:2] == "20"]
sig = [stamp(l) for l in lines if "signal 15" in l]
end = [stamp(l) for l in lines if l.rstrip().endswith(": stopped")]
own = (end[-1] - sig[-1]).total_seconds() if sig and end else None
tap.ok(own is not None and own < 5 and took < 60,
       "SIGTERM: the daemon stops within 5 s (%s s; exited after %.1f s)" % (own, took))
wait_unlocked(os.environ["STATE"])
st = json.load(open(os.path.join(os.environ["STATE"], "jobs", job, "state.json")))
stopped_at = len(open(os.path.join(os.environ["STATE"], "jobs", job, "metrics.ndjson")).readlines())
tap.ok(st["state"] == "queued", "the running job is saved as queued", st)
log = open(os.path.join(T, "daemon.log"), "a")
d = subprocess.Popen([os.environ["VKINRD"], "--socket", SOCK, "--state-dir",
                      os.environ["STATE"], "-v"], stdout=log, stderr=log)
try:
    c = connect_retry(60)
    epochs, states, _ = follow(c, job)
    tap.ok(states[-1:] == ["done"] and epochs == list(range(1, 61)), "it resumes and finishes",
           (states, epochs))
    text = open(os.path.join(T, "daemon.log")).read()
    tap.ok("running from epoch %d " % stopped_at in text, "resumed at the epoch it stopped at (%d)" % stopped_at)
finally:
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=15)
tap.done()
EOF_PY
wait $DPID 2>/dev/null; DPID=
tap_done
