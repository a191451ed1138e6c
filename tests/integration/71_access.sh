#!/bin/bash
# 71_access.sh - two uids for real: root and nobody (65534, through
# setpriv). Each job belongs to the uid that submitted it (SO_PEERCRED):
# another uid sees it (job.list, job.get, job.subscribe with its metrics)
# but job.pause, job.resume, job.cancel, job.remove and job.export of it
# are refused with -32005 naming the owner; its owner and root may do all
# of them. The test opens its private folder and socket to nobody (the
# daemon creates the socket 0600).
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
if ! command -v setpriv >/dev/null; then
	for i in $(seq 1 10); do echo "ok $i # SKIP setpriv is not installed (util-linux)"; done
	exit 0
fi
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
chmod 0711 "$T" && chmod 0666 "$SOCK"
run_py <<'EOF_PY'
import subprocess
from rpc import *
tap = Tap()

# nobody's side: runs [method, params] requests on one connection and
# prints the answers and the notifications it got
NOBODY = r'''
import json, sys, time
from rpc import Client
c = Client()
out = [c.request(m, p) for m, p in json.load(sys.stdin)]
print(json.dumps({"replies": out, "notes": c.notes}))
'''
def as_nobody(reqs):
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "python3", "-c", NOBODY], input=json.dumps(reqs),
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    if p.returncode:
        raise RuntimeError(p.stderr)
    return json.loads(p.stdout)

img = sample("a.png", 16, 16)
b64 = png_b64(img)
c = Client()
mine = submit(c, img, epochs=20000, width=16, name="root's")
wait_epoch(c, mine, 3)

r = as_nobody([["hello", None],
               ["job.submit", {"image": {"png": b64}, "epochs": 20000, "width": 16}],
               ["job.list", None],
               ["job.get", {"job": mine}],
               ["job.subscribe", {"job": mine}],
               ["hello", None]])
hello, sub_theirs, lst, get, sub = r["replies"][:5]
theirs = sub_theirs["result"]["job"]
tap.ok(hello["result"]["uid"] == 65534, "a second client runs as uid 65534", hello)
jobs = {j["id"]: j for j in lst["result"]["jobs"]}
tap.ok(jobs.get(mine, {}).get("uid") == 0 and jobs.get(theirs, {}).get("uid") == 65534,
       "each job records its submitter's uid; job.list shows others' jobs", jobs)
progress = [n for n in r["notes"] if n["method"] == "job.progress" and n["params"]["job"] == mine]
tap.ok(get["result"]["state"] == "running" and "result" in sub and progress,
       "another uid may job.get and job.subscribe (state and metrics)", (get, sub, len(progress)))

refused = as_nobody([[m, {"job": mine}] for m in
                     ("job.pause", "job.resume", "job.cancel", "job.remove", "job.export")])
bad = [x for x in refused["replies"]
       if x.get("error", {}).get("code") != -32005
       or x["error"]["data"].get("name") != "PERMISSION"
       or x["error"]["data"].get("owner") != 0
       or "uid 0" not in x["error"]["message"]]
tap.ok(not bad, "pause, resume, cancel, remove, export of another's job: -32005 naming the owner",
       bad or refused["replies"][0])
j = c.call("job.get", {"job": mine})
tap.ok(j["state"] == "running", "the refused requests left the job alone", j)

own = as_nobody([["job.pause", {"job": theirs}], ["job.resume", {"job": theirs}],
                 ["job.cancel", {"job": theirs}], ["job.export", {"job": theirs}]])
states = [x.get("result", {}).get("state") for x in own["replies"][:3]]
# a job cancelled before its first epoch has no model yet: -32002, not -32005
exp = own["replies"][3]
tap.ok(states[0] == "paused" and states[1] in ("queued", "running") and states[2] == "cancelled"
       and (exp.get("result") or exp["error"]["code"] == -32002),
       "its owner may pause, resume, cancel and export its own job", own["replies"])
rm = as_nobody([["job.remove", {"job": theirs}]])["replies"][0]
tap.ok(rm.get("result", {}).get("removed") is True, "... and remove it", rm)

# root may act on nobody's job
theirs2 = as_nobody([["job.submit", {"image": {"png": b64}, "epochs": 5, "width": 16}]]
                    )["replies"][0]["result"]["job"]
p = c.request("job.pause", {"job": theirs2})
r = c.request("job.cancel", {"job": theirs2})
x = c.request("job.remove", {"job": theirs2})
tap.ok(p.get("result", {}).get("job") == theirs2 and "result" in r and "result" in x,
       "root may pause, cancel and remove another uid's job", (p, r, x))

x = c.request("job.cancel", {"job": mine})
tap.ok(x.get("result", {}).get("state") == "cancelled", "the owner cancels its own job", x)
e = c.call("job.export", {"job": mine})
tap.ok(len(e["model"]["safetensors"]) > 100, "and exports it")
tap.done()
EOF_PY
stop_daemon
tap_done
