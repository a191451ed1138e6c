#!/bin/bash
# 60c_submit_one_sync.sh - small images sent together on one connection
# are stored together: a job.submit of a small PNG is decoded at once on
# the loop (no hold of the connection), so forty requests written in one
# go are read, stored and made durable in a few turns of the loop, each
# turn's jobs with one sync (the daemon says how many at -vv), and answered
# in order, numbered in the order sent. A large PNG is still decoded off
# the loop, and a request after it waits for it.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
start_daemon -vv || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import json, re
from rpc import *
tap = Tap()
imgs = [png_b64(sample("s%d.png" % i, 8, 8)) for i in range(2)]
lines = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "job.submit",
                            "params": {"image": {"png": imgs[i % 2]}, "epochs": 1,
                                       "width": 16, "name": "s%02d" % i}}) + "\n"
                for i in range(40))
c = Client()
c.send_raw(lines)
answers = [c.readline() for _ in range(40)]
ids = [a.get("result", {}).get("job") for a in answers]
tap.ok([a["id"] for a in answers] == list(range(40)) and all(ids),
       "forty submissions answered in the order sent", answers[:2])
tap.ok([int(x) for x in ids] == sorted(int(x) for x in ids),
       "numbered in the order sent", ids)
log = open(os.path.join(T, "daemon.log")).read()
groups = [int(n) for n in re.findall(r"(\d+) jobs stored with one sync", log)]
tap.ok(groups and max(groups) >= 10,
       "many of them stored with one sync (the largest group: %s)"
       % (max(groups) if groups else None), log[-600:])
big = png_b64(sample("big.png", 300, 300))
c.send_raw(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "job.submit",
                       "params": {"image": {"png": big}, "epochs": 1, "width": 16}})
           + "\n" + json.dumps({"jsonrpc": "2.0", "id": 101, "method": "job.submit",
                                "params": {"image": {"png": imgs[0]}, "epochs": 1,
                                           "width": 16}}) + "\n")
a, b = c.readline(), c.readline()
tap.ok(a["id"] == 100 and b["id"] == 101 and
       int(a["result"]["job"]) < int(b["result"]["job"]),
       "a large image (decoded off the loop) and a small one after it: in order",
       (a, b))
tap.done()
EOF_PY
