#!/bin/bash
# 05_bad_clients.sh - while a job trains: malformed JSON, an unknown
# method, wrong types, an unknown parameter, a NUL byte, an oversized line
# (the same connection resynchronises after it), a client that disconnects
# mid-request, and a subscriber that never reads (dropped once its output
# stops moving; VKINRD_STALL_SECONDS=2 here). Each gets its error or is
# dropped; the daemon goes on and the job's history is undisturbed.
. "$(dirname "$0")/lib.bash"
tap_plan 12
need_device
export VKINRD_STALL_SECONDS=2
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
img = sample("e.png", 24, 24)
c = Client()
job = submit(c, img, epochs=150, width=16, seed=2)

def err(raw):
    c.send_raw(raw)
    return c.read_reply()

r = err('{"jsonrpc":"2.0","id":1,"method":"hello"\n')
tap.ok(r["error"]["code"] == -32700 and r["id"] is None, "malformed JSON: -32700", r)
r = err('{"jsonrpc":"2.0","id":2,"method":"job.fly"}\n')
tap.ok(r["error"]["code"] == -32601 and r["id"] == 2 and "job.fly" in r["error"]["message"],
       "unknown method: -32601 naming it", r)
r = c.request("job.submit", {"image": {"png": png_b64(img)}, "epochs": "ten"})
tap.ok(r["error"]["code"] == -32602 and "epochs" in r["error"]["message"],
       "wrong type: -32602 naming the field", r)
r = c.request("job.submit", {"image": {"png": png_b64(img)}, "epoch": 10})
tap.ok(r["error"]["code"] == -32602 and '"epoch"' in r["error"]["message"],
       "unknown parameter: -32602 naming it", r)
r = c.request("job.submit", {"image": {"png": "aGVsbG8="}})
tap.ok(r["error"]["code"] == -32003, "not a PNG: -32003", r)
r = err('{"jsonrpc":"2.0","id":3,\x00"method":"hello"}\n')
tap.ok(r["error"]["code"] == -32700, "NUL byte: -32700", r)
r = c.request("job.get", {"job": "999"})
tap.ok(r["error"]["code"] == -32001, "no such job: -32001", r)

# 64 MiB + 1 KiB of one line, then a good request on the same connection
big = b'{"jsonrpc":"2.0","id":4,"method":"hello","params":{"x":"' + b"a" * ((64 << 20) + 1024) + b'"}}\n'
c.send_raw(big + b'{"jsonrpc":"2.0","id":5,"method":"hello"}\n')
r1 = c.read_reply()
r2 = c.read_reply()
tap.ok(r1.get("error", {}).get("code") == -32004 and r2.get("id") == 5 and "result" in r2,
       "oversized line: -32004, then the next line is answered", (r1, r2))

# mid-request disconnect
d = Client()
d.send_raw('{"jsonrpc":"2.0","id":1,"method":"job.su')
d.close()
tap.ok(c.call("hello")["protocol"] == 1, "a client leaving mid-request harms nobody")

# a subscriber that never reads, and asks for a lot
s = Client()
s.call("hello")  # accepted for sure before the count below
s.send_raw('{"jsonrpc":"2.0","id":1,"method":"job.subscribe","params":{"job":"%s"}}\n' % job)
before = c.call("daemon.status")["connections"]
reqs = ''.join('{"jsonrpc":"2.0","id":%d,"method":"job.list"}\n' % i for i in range(2, 20000)).encode()
s.sock.setblocking(False)
try:
    sent = s.sock.send(reqs)
except BlockingIOError:
    sent = 0
dropped = False
for _ in range(300):
    time.sleep(0.1)
    if c.call("daemon.status")["connections"] < before:
        dropped = True
        break
tap.ok(dropped, "a client that never reads is dropped", (before, sent))

epochs, states, _ = follow(c, job)
tap.ok(states[-1:] == ["done"] and epochs == list(range(1, 151)),
       "the training job is undisturbed: done, every epoch once", (states, epochs[-5:]))
tap.ok(c.call("daemon.status")["jobs"]["done"] == 1, "the daemon goes on")
tap.done()
EOF_PY
stop_daemon
tap_done
