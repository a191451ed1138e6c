#!/bin/bash
# 31_activation_wait.sh - under socket activation too, the first request
# that needs the device waits for it (issue 31, item 11: "the first
# request after a start (socket activation or a plain start) was answered
# no device is available"; 14_device_wait.sh checks a plain start).
# systemd-socket-activate holds the socket; the first client's
# model.render starts vkinrd, whose worker takes 3 s to open its device
# (VKINRD_OPEN_DELAY_MS): the render is answered with its picture once the
# device is up, within the wait's bound, and a hello on a second
# connection meanwhile is answered at once.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
if ! command -v systemd-socket-activate >/dev/null; then
	for i in 1 2 3; do echo "ok $i # SKIP systemd-socket-activate is not installed (Debian package systemd)"; done
	trap - EXIT; rm -rf "$T"; exit 0
fi
"$MKSAMPLE" "$T/s.png" 16 16 3 >/dev/null
"$VKINRD" --fit "$T/s.png" --width 16 --epochs 3 -q --model "$T/m.safetensors" >/dev/null || exit 1
run_py <<'EOF_PY'
import base64, signal, subprocess, threading
from rpc import *
tap = Tap()
log = open(os.path.join(T, "daemon.log"), "a")
env = dict(os.environ, VKINRD_OPEN_DELAY_MS="3000")
env.pop("VKINR_SOCKET", None)
act = subprocess.Popen(["systemd-socket-activate", "-l", SOCK, "-E", "VKINRD_OPEN_DELAY_MS",
                        os.environ["VKINRD"], "--state-dir", os.environ["STATE"], "-v"],
                       env=env, stdout=log, stderr=log)
end = time.time() + 10
while not os.path.exists(SOCK) and time.time() < end:
    time.sleep(0.05)
model = base64.b64encode(open(os.path.join(T, "m.safetensors"), "rb").read()).decode()
got = {}
def render():
    t = time.time()
    got["render"] = (Client(timeout=60).request("model.render", {"model": {"safetensors": model}}),
                     time.time() - t)
th = threading.Thread(target=render)
th.start()
time.sleep(0.5)
t = time.time()
h = connect_retry().call("hello")
hello_s = time.time() - t
th.join(60)
r, render_s = got.get("render", ({"error": "no answer"}, 0))
print("# socket activation with a 3 s device opening: render answered in %.2f s, hello in %.2f s"
      % (render_s, hello_s))
tap.ok("result" in r and r["result"].get("png"), "the first request, a render, is answered with "
       "its picture once the device is up (%.1f s)" % render_s, r if "result" not in r else "")
tap.ok(2.0 < render_s < 35, "it waited for the device, within the bound (%.1f s)" % render_s, render_s)
tap.ok(h.get("daemon") == "vkinrd" and hello_s < 2, "a hello meanwhile is answered at once "
       "(%.2f s)" % hello_s, h)
act.send_signal(signal.SIGTERM)
try:
    act.wait(timeout=20)
except subprocess.TimeoutExpired:
    act.kill()
tap.done()
EOF_PY
tap_done
