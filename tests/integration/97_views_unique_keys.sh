#!/bin/bash
# 97_views_unique_keys.sh - every JSON the daemon writes has each key once
# (issue 25, item 10: a job with a device but no precision yet had
# "device" twice). Every answer and notification of a session that uses
# every method is parsed by a parser that refuses a key given twice; the
# job with a device and no precision is made by dropping precision_used
# from a finished job's state.json (what a job has between its hand-off
# and its start, and what an older vkinrd wrote).
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("u.png", 16, 16)
job = submit(c, img, epochs=3, width=16, name="u", batch="b1", target_psnr=90)
follow(c, job)
open(os.path.join(T, "job"), "w").write(job)
tap.ok(c.call("job.get", {"job": job})["state"] == "done", "a job ran to its end")
EOF_PY
stop_daemon
python3 - "$STATE/jobs/$(cat "$T/job")/state.json" <<'EOF_PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.pop("precision_used", None)
assert s["device"]
json.dump(s, open(sys.argv[1], "w"))
EOF_PY
TAP_N=1
start_daemon || { echo "not ok 2 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
job = open(os.path.join(T, "job")).read()

def once(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError("keys given twice: %s" % sorted(dup))
    return dict(pairs)

lines = []
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(120)
s.connect(SOCK)
img = sample("v.png", 16, 16)
b64 = png_b64(img)
reqs = [("hello", None), ("daemon.status", None), ("job.list", None),
        ("job.get", {"job": job}), ("job.logs", {"job": job}),
        ("job.subscribe", {"job": job}),
        ("job.submit", {"image": {"png": b64}, "epochs": 2, "width": 16}),
        ("job.export", {"job": job}), ("job.get", {"job": "999"}),
        ("nope", None), ("job.list", {"bogus": 1})]
for i, (m, p) in enumerate(reqs):
    msg = {"jsonrpc": "2.0", "id": i + 1, "method": m}
    if p is not None:
        msg["params"] = p
    s.sendall((json.dumps(msg) + "\n").encode())
buf, answers = b"", 0
while answers < len(reqs):
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        lines.append(line)
        answers += b'"id"' in line
errors = []
for l in lines:
    try:
        json.loads(l, object_pairs_hook=once)
    except ValueError as e:
        errors.append((str(e), l[:300]))
tap.ok(answers == len(reqs) and not errors,
       "every answer and notification of every method has each key once",
       (answers, errors))
j = json.loads([l for l in lines if b'"id":4,' in l][0])["result"]
tap.ok(j["device"] and "precision_used" not in j,
       "a job with a device and no precision: device once, precision absent", j)
new = json.loads([l for l in lines if b'"id":7,' in l][0])["result"]["job"]
c = Client()
follow(c, new)
st = c.call("daemon.status")
rest = [json.dumps(c.call("job.get", {"job": new})), json.dumps(c.call("job.list"))]
bad = []
for t in rest:
    try:
        json.loads(t, object_pairs_hook=once)
    except ValueError as e:
        bad.append(str(e))
tap.ok(not bad, "a new job's views too", bad)
tap.done()
EOF_PY
tap_done
