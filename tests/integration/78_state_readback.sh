#!/bin/bash
# 78_state_readback.sh - what the daemon reads back from its state folder
# passes the checks of what it reads from the wire (issue 24, item 7):
#   - counters: a next-id of 2^64 - 1 and a job folder named beyond 2^53
#     neither wrap the counter nor make ids a client cannot name; jobs
#     accepted then are all in job.list after a restart;
#   - at 2^53 - 1 the last id is given and the next submission is refused
#     (-32004), never wrapped; the job with that id survives a restart and
#     is found by its number;
#   - request.json or state.json with a key twice or an escaped NUL, a
#     width the wire refuses (17) or an image over the side limit: the job
#     is kept, failed, with the file and the reason (and is listed).
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
mkdir -p "$STATE/jobs"
chmod 700 "$STATE"
echo 18446744073709551615 >"$STATE/next-id"
mkdir -m 700 "$STATE/jobs/99999999999999999999" "$STATE/jobs/007"
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("r.png", 16, 16)
ids = [submit(c, img, epochs=2, width=16, name="n%d" % i) for i in range(4)]
for j in ids:
    follow(c, j)
open(os.path.join(T, "ids"), "w").write(" ".join(ids))
tap.ok(all(1 <= int(j) <= 2**53 - 1 for j in ids) and len(set(ids)) == 4,
       "a wild next-id and folder name give small, distinct ids", ids)
tap.done()
EOF_PY
stop_daemon
TAP_N=1
python3 - "$STATE" <<'EOF_PY'
import json, os, sys
state = sys.argv[1]
ids = open(os.path.join(os.path.dirname(state), "ids")).read().split()
jobs = os.path.join(state, "jobs")
def edit(job, name, text):
    open(os.path.join(jobs, job, name), "w").write(text)
req = open(os.path.join(jobs, ids[0], "request.json")).read()
edit(ids[0], "request.json", req.replace('"epochs":', '"epochs": 100000000, "epochs":', 1)
     if '"epochs":' in req else req.replace('"epochs": ', '"epochs": 100000000, "epochs": ', 1))
r = json.loads(open(os.path.join(jobs, ids[1], "request.json")).read())
r["width"] = 17
edit(ids[1], "request.json", json.dumps(r))
r = json.loads(open(os.path.join(jobs, ids[2], "request.json")).read())
r["image_width"] = 20000
r["name"] = "\x1b]0;owned\x07"
edit(ids[2], "request.json", json.dumps(r))
s = json.loads(open(os.path.join(jobs, ids[3], "state.json")).read())
s["reached_epoch"] = 1e300
s["device"] = "gpu\u0000junk"
edit(ids[3], "state.json", json.dumps(s))
open(os.path.join(state, "next-id"), "w").write("9007199254740991\n")
EOF_PY
start_daemon || { echo "not ok 2 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
ids = open(os.path.join(T, "ids")).read().split()
listed = {j["id"]: j for j in c.call("job.list")["jobs"]}
tap.ok(all(i in listed for i in ids), "every accepted job is listed after the restart",
       sorted(listed))
bad = [listed[i] for i in ids]
tap.ok(bad[0]["state"] == "failed" and "request.json" in bad[0]["error"]
       and bad[1]["state"] == "failed" and '"width"' in bad[1]["error"]
       and bad[2]["state"] == "failed" and "image_width" in bad[2]["error"]
       and bad[3]["state"] == "failed" and "state.json" in bad[3]["error"],
       "a key twice, a width of 17, an image over the limit, an escaped NUL: failed, saying where",
       [(b["state"], b.get("error")) for b in bad])
img = sample("r2.png", 16, 16)
last = c.request("job.submit", {"image": {"png": png_b64(img)}, "epochs": 2, "width": 16})
more = c.request("job.submit", {"image": {"png": png_b64(img)}, "epochs": 2, "width": 16})
tap.ok(last.get("result", {}).get("job") == "9007199254740991"
       and more.get("error", {}).get("code") == -32004,
       "the id 2^53 - 1 is given, the next submission refused", (last, more))
open(os.path.join(T, "last"), "w").write(str(last.get("result", {}).get("job")))
tap.done()
EOF_PY
stop_daemon
TAP_N=4
start_daemon || { echo "not ok 5 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
j = c.request("job.get", {"job": 9007199254740991})
tap.ok(j.get("result", {}).get("id") == "9007199254740991",
       "the job with id 2^53 - 1 survives a restart and is found by its number", j)
tap.done()
EOF_PY
tap_done
