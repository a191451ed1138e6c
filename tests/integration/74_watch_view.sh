#!/bin/bash
# 74_watch_view.sh - the live view at 80 columns (tmux, 80x24), as a new
# user meets it: `vkinrctl submit IMG --watch` shows the epochs with their
# percentage, the model's PSNR and how long the job has run (besides the
# ETA); Ctrl-C stops the watch, not the job, and says so with the command
# that watches it again, which works; with the daemon gone, the view says
# disconnected and the state unknown, with no ETA left standing. The README starts the daemon with
# its log away from the terminal where --watch draws. Skipped without
# tmux.
. "$(dirname "$0")/lib.bash"
tap_plan 6
if ! command -v tmux >/dev/null; then
	for i in $(seq 1 6); do echo "ok $i # SKIP tmux is not installed (tests/deps.sh)"; done
	exit 0
fi
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export TMUX_TMPDIR=$T   # a private tmux server, gone with $T
trap 'tmux kill-server 2>/dev/null; cleanup' EXIT
run_py <<'EOF_PY'
import re, subprocess
from rpc import *
tap = Tap()
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"], LANG="C.UTF-8")
img = sample("w.png", 16, 16)
c = Client()

def tmux(*args):
    return subprocess.run(["tmux"] + list(args), env=ENV, capture_output=True,
                          text=True, timeout=30).stdout

tmux("-u", "new-session", "-d", "-s", "w", "-x", "80", "-y", "24",
     "%s submit %s --epochs 100000 --width 16 --watch; echo exit=$?; sleep 120"
     % (CTL, img))
line, job = "", None
end = time.time() + 60
while time.time() < end:
    jobs = c.call("job.list")["jobs"]
    job = jobs[0] if jobs else None
    pane = tmux("capture-pane", "-p", "-t", "w").split("\n")
    line = next((l for l in pane if job and l.split()[:1] == [job["id"]]), "")
    if job and job["epoch"] >= 30 and "ETA" in line and "s " in line:
        break
    time.sleep(0.3)
print("# line: %r" % line)
m = re.search(r"running\s+(\d+)/100000 (\d+)% +(\d+\.\d\d) dB (\d+s|\d+m\d+s|\d+:\d+) ETA", line)
tap.ok(m and len(line) <= 80,
       "80 columns: epochs, their percentage, the model's PSNR, the time run, the ETA", line)
# paused, the view stands still: its PSNR is the model's to the digit
ctl("pause", job["id"])
end = time.time() + 30
while time.time() < end:
    pane = tmux("capture-pane", "-p", "-t", "w").split("\n")
    paused = next((l for l in pane if l.split()[:2] == [job["id"], "w"] and "paused" in l), "")
    if paused:
        break
    time.sleep(0.3)
time.sleep(0.5)
pane = tmux("capture-pane", "-p", "-t", "w").split("\n")
paused = next((l for l in pane if l.split()[:2] == [job["id"], "w"]), "")
g = c.call("job.get", {"job": job["id"]})
shown = re.search(r"(\d+\.\d\d) dB", paused)
print("# paused: %r, job: psnr %s best_psnr %s" % (paused, g["psnr"], g["best_psnr"]))
tap.ok(shown and abs(float(shown.group(1)) - g["best_psnr"]) < 0.006,
       "the PSNR shown is the model's (best_psnr), not the last epoch's", paused)
ctl("resume", job["id"])
time.sleep(1.5)
tmux("send-keys", "-t", "w", "C-c")
time.sleep(1)
pane = "\n".join(tmux("capture-pane", "-p", "-t", "w").split("\n"))
print("# pane after Ctrl-C:\n# " + pane.replace("\n", "\n# "))
again = "vkinrctl watch %s" % job["id"]
tap.ok("stopped watching" in pane and "goes on" in pane and again in pane
       and "exit=130" in pane,
       "Ctrl-C says the job goes on and how to watch it again (exit 130)", pane)
g = c.call("job.get", {"job": job["id"]})
ctl("cancel", job["id"])
r = ctl("watch", job["id"], timeout=60)
tap.ok(g["state"] == "running" and r.returncode == 1 and "cancelled" in r.stdout,
       "the job was still running, and the command given watches it (to its cancel)",
       (g["state"], r.returncode, r.stdout))
# the daemon gone (kill -9): no "running" and no ETA frozen on the screen
import signal
j2 = ctl("submit", "-q", "--epochs", "100000", "--width", "16", img).stdout.strip()
tmux("-u", "new-session", "-d", "-s", "g", "-x", "80", "-y", "24",
     "%s watch %s; sleep 120" % (CTL, j2))
end = time.time() + 60
row = ""
while time.time() < end:
    pane = tmux("capture-pane", "-p", "-t", "g").split("\n")
    row = next((l for l in pane if l.split()[:1] == [j2]), "")
    if "ETA" in row:
        break
    time.sleep(0.3)
os.kill(int(os.environ["DPID"]), signal.SIGKILL)
time.sleep(2)
pane = tmux("capture-pane", "-p", "-t", "g").split("\n")
gone = next((l for l in pane if l.split()[:1] == [j2]), "")
print("# before: %r\n# after: %r" % (row, gone))
tap.ok("ETA" in row and "disconnected" in gone and "unknown" in gone
       and "running" not in gone and "ETA" not in gone,
       "the daemon gone: the row says disconnected, state unknown, no ETA", gone)
sys.exit(tap.done())
EOF_PY
TAP_N=5
check "the README starts the daemon with its log away from the terminal" \
	grep -q '^    build/vkinrd 2>>vkinrd.log &' "$ROOT/README.md"
stop_daemon
tap_done
