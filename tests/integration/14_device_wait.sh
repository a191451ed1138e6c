#!/bin/bash
# 14_device_wait.sh - the first requests after a start wait for the device
# that is still opening, instead of "no device is available". The test
# switch VKINRD_OPEN_DELAY_MS (vkinrd-env(7)) makes each worker wait that long
# before it opens its device, as a slow driver would.
#   1. A model (from a done job) and a paused job with a checkpoint are
#      made; the daemon restarts with a 4 s device opening; right after its
#      socket appears a model.render and a job.export of the paused job
#      (both need a device) are sent: both are answered with their
#      results once the device is up, while a hello on another connection
#      is answered at once.
#   2. With VKINRD_DEVICE_WAIT_SECONDS=1 and a 6 s opening, a render is
#      refused after about 1 s, saying the device is still opening; once
#      it is up the same render is made.
#   3. A render waiting for the device when SIGTERM comes is refused at
#      once, the daemon stopping (-32008), and the daemon exits cleanly.
# run.sh: light
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import json
from rpc import *
c = Client()
img = sample("s.png", 16, 16)
a = submit(c, img, epochs=10, width=16)
follow(c, a)
model = c.call("job.export", {"job": a})["model"]["safetensors"]
b = submit(c, img, epochs=100000, width=16)
wait_epoch(c, b, 6)
c.call("job.pause", {"job": b})
assert wait_state(c, b, ["paused"])["state"] == "paused"
json.dump({"model": model, "paused": b}, open(os.path.join(T, "made.json"), "w"))
EOF_PY
stop_daemon

VKINRD_OPEN_DELAY_MS=4000 start_daemon || { echo "not ok 1 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
import json, threading
from rpc import *
tap = Tap()
made = json.load(open(os.path.join(T, "made.json")))
answers = {}

def ask(key, method, params):
    t = time.time()
    try:
        answers[key] = (Client(timeout=60).request(method, params), time.time() - t)
    except Exception as e:
        answers[key] = ({"exception": repr(e)}, time.time() - t)

start = time.time()
threads = [threading.Thread(target=ask, args=("render", "model.render",
                                              {"model": {"safetensors": made["model"]}})),
           threading.Thread(target=ask, args=("export", "job.export", {"job": made["paused"]}))]
for t in threads:
    t.start()
time.sleep(0.3)
t0 = time.time()
hello = Client().call("hello")
hello_s = time.time() - t0
for t in threads:
    t.join(90)
render, render_s = answers.get("render", ({}, 0))
export, export_s = answers.get("export", ({}, 0))
tap.ok("png" in render.get("result", {}),
       "model.render sent as the daemon starts: rendered once the device is up (%.1f s)" % render_s,
       render)
tap.ok("safetensors" in export.get("result", {}).get("model", {}),
       "job.export of a paused job sent as it starts: exported (%.1f s)" % export_s, export)
tap.ok(hello and hello_s < 2 and min(render_s, export_s) > 1,
       "meanwhile a hello on another connection is answered at once (%.2f s)" % hello_s,
       (hello_s, render_s, export_s))
tap.done()
EOF_PY
stop_daemon
TAP_N=3

VKINRD_OPEN_DELAY_MS=6000 VKINRD_DEVICE_WAIT_SECONDS=1 start_daemon ||
	{ echo "not ok 4 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
import json
from rpc import *
tap = Tap()
made = json.load(open(os.path.join(T, "made.json")))
c = Client(timeout=60)
t = time.time()
r = c.request("model.render", {"model": {"safetensors": made["model"]}})
secs = time.time() - t
e = r.get("error", {})
tap.ok(e.get("code") == -32007 and "still opening after 1 s" in e.get("message", "")
       and 0.8 < secs < 4,
       "with a 1 s wait, a render is refused after %.1f s: the device is still opening" % secs, r)
end = time.time() + 30
while time.time() < end and not any(d.get("name") for d in c.call("daemon.status").get("devices", [])):
    time.sleep(0.2)
r = c.request("model.render", {"model": {"safetensors": made["model"]}})
tap.ok("result" in r, "once the device is up, the same render is made", r)
tap.ok(os.path.exists("/proc/%s" % os.environ["DPID"]), "the daemon is still up")
tap.done()
EOF_PY
stop_daemon
TAP_N=6

VKINRD_OPEN_DELAY_MS=5000 start_daemon || { echo "not ok 7 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
import json, signal
from rpc import *
tap = Tap()
made = json.load(open(os.path.join(T, "made.json")))
c = Client(timeout=60)
c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "model.render",
                       "params": {"model": {"safetensors": made["model"]}}}) + "\n")
time.sleep(0.5)
t = time.time()
os.kill(int(os.environ["DPID"]), signal.SIGTERM)
r = c.read_reply(1)
secs = time.time() - t
tap.ok(r.get("error", {}).get("code") == -32008 and secs < 2,
       "a render waiting for the device is refused at SIGTERM (%.1f s): the daemon stops" % secs, r)
tap.done()
EOF_PY
wait "$DPID"; rc=$?; DPID=
[ $rc = 0 ] || { echo "# the daemon exited $rc"; TAP_FAILED=1; }
tap_done
