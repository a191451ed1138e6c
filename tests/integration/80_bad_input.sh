#!/bin/bash
# 80_bad_input.sh - the bad-input corpus against the real daemon while a
# job trains: every malformed request stream in
# tests/fuzz/corpus/fuzz_request/bad-* (truncated JSON, wrong types, huge
# numbers, deep nesting, invalid UTF-8, NUL bytes, oversized strings,
# unknown methods, junk) goes down its own connection, and every broken PNG
# in tests/fuzz/corpus/fuzz_png/bad-* (truncated, bad CRC, zero and huge
# sizes, a zlib bomb, bad palettes, garbage) is submitted as base64 in
# job.submit (-32003; -32004 naming the limit for a size over it). Each gets its error (and a connection that sent junk is still
# answered afterwards), no job is created by any of it, the daemon stays up,
# and the job training meanwhile ends with every epoch once.
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
export CORPUS=$ROOT/tests/fuzz/corpus
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import glob
from rpc import *
tap = Tap()
corpus = os.environ["CORPUS"]
img = sample("a.png", 24, 24)
c = Client()
job = submit(c, img, epochs=120, width=16, seed=3)
wait_epoch(c, job, 2)

def well_formed(r):
    if r.get("jsonrpc") != "2.0" or ("result" in r) == ("error" in r):
        return False
    e = r.get("error")
    return e is None or (isinstance(e.get("code"), int) and isinstance(e.get("message"), str)
                         and e["message"])

# requests: no reply is expected to a notification or to a client's result
quiet = ("results-from-client", "notification")
bad = []
files = sorted(glob.glob(os.path.join(corpus, "fuzz_request", "bad-*")))
for path in files:
    data = open(path, "rb").read()
    d = Client(timeout=30)
    try:
        d.send_raw(data + b'\n{"jsonrpc":"2.0","id":"end","method":"hello"}\n')
        replies = []
        while True:
            r = d.readline()
            if r.get("id") == "end":
                break
            replies.append(r)
        errors = [r for r in replies if "error" in r]
        if not all(well_formed(r) for r in replies) or \
           (not errors and not any(q in path for q in quiet)):
            bad.append((os.path.basename(path), replies[:3]))
    except Exception as e:
        bad.append((os.path.basename(path), repr(e)))
    d.close()
tap.ok(files and not bad, "%d malformed request streams: each line gets its error, "
       "the connection goes on" % len(files), bad)

pngs = sorted(glob.glob(os.path.join(corpus, "fuzz_png", "bad-*")))
bad = []
for path in pngs:
    r = c.request("job.submit", {"image": {"png": png_b64(path)}, "epochs": 5,
                                 "width": 16})
    # -32004 (a limit, named in data.limit) for a size over the limits
    if r.get("error", {}).get("code") not in (-32003, -32004) or not r["error"].get("message"):
        bad.append((os.path.basename(path), r))
tap.ok(pngs and not bad, "%d broken PNGs: each refused (-32003, or -32004 over a limit) with a sentence"
       % len(pngs), bad)
tap.ok(c.call("daemon.status")["jobs"]["total"] == 1, "no job was created by any of it")
epochs, states, _ = follow(c, job)
tap.ok(states[-1:] == ["done"] and epochs == list(range(1, 121)),
       "the training job is undisturbed: done, every epoch once", (states, epochs[-5:]))
tap.ok(os.path.exists("/proc/%s" % os.environ["DPID"]), "the daemon is still up")
tap.ok(c.call("hello")["protocol"] >= 1, "and answers")
tap.done()
EOF_PY
stop_daemon
tap_done
