#!/bin/bash
# 87_connection_order.sh - what one connection sends, and how it reads.
#   - order: job.pause then job.resume of a running job, pipelined in one
#     write, leave it running (the resume acts after the pause took
#     effect), three times over;
#   - half-close: a client that sends its requests and shuts down its
#     writing side (echo ... | socat) still gets every answer in full: a
#     subscription to its end, a deferred export, and a last line without
#     a newline;
#   - back-pressure: pipelined exports and job.lists far past
#     LIMIT_SUBSCRIBER_BYTES, read slowly, are all answered in order; a
#     reader that keeps reading slowly outlives VKINRD_STALL_SECONDS;
#   - bounded input: an unfinished line times out (VKINRD_LINE_SECONDS)
#     and one uid's unfinished lines are capped in all
#     (VKINRD_MAX_PARTIAL_BYTES_PER_UID), each with an error naming the
#     limit, while other connections go on.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
export VKINRD_STALL_SECONDS=2 VKINRD_LINE_SECONDS=2
export VKINRD_MAX_PARTIAL_BYTES_PER_UID=1000000
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import socket
from rpc import *
tap = Tap()
c = Client()
img = sample("o.png", 48, 48)

def line(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m)

long_job = submit(c, img, epochs=20000, width=16)
wait_epoch(c, long_job, 2)
states = []
for k in range(3):
    p = Client()
    p.send_raw(line(1, "job.pause", {"job": long_job}) + "\n" +
               line(2, "job.resume", {"job": long_job}) + "\n")
    a, b = p.read_reply(1), p.read_reply(2)
    time.sleep(0.3)
    states.append((a["result"]["state"], b["result"]["state"],
                   c.call("job.get", {"job": long_job})["state"]))
    p.close()
tap.ok(all(s[0] == "paused" and s[1] in ("queued", "running") and s[2] in ("queued", "running")
           for s in states), "pause then resume pipelined: the job runs again, each time", states)
c.call("job.cancel", {"job": long_job})

big = sample("big.png", 256, 256)
done = submit(c, big, epochs=2, width=16)
wait_state(c, done, ("done",))
short = submit(c, img, epochs=30, width=16)
h = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
h.connect(SOCK)
h.sendall((line(1, "job.subscribe", {"job": short}) + "\n" +
           line(2, "job.export", {"job": short}) + "\n" + line(3, "hello")).encode())
h.shutdown(socket.SHUT_WR)
h.settimeout(120)
data = b""
while True:
    chunk = h.recv(1 << 20)
    if not chunk:
        break
    data += chunk
msgs = [json.loads(l) for l in data.split(b"\n") if l]
ids = [m.get("id") for m in msgs if "id" in m]
epochs = [m["params"]["epoch"] for m in msgs if m.get("method") == "job.progress"]
ends = [m["params"]["state"] for m in msgs if m.get("method") == "job.state"]
tap.ok(ids == [1, 2, 3] and epochs and epochs[-1] == 30 and ends[-1:] == ["done"],
       "half-closed: the subscription to its end, the export and an unterminated last line are answered",
       (ids, epochs[-3:], ends))

# back-pressure: 6 exports and 40 lists pipelined, read slowly
b = Client()
reqs = [line(i, "job.export", {"job": done}) for i in range(1, 7)]
reqs += [line(i, "job.list") for i in range(7, 47)]
b.send_raw("\n".join(reqs) + "\n")
got, size = [], 0
b.sock.settimeout(30)
try:
    while len(got) < 46:
        time.sleep(0.002)
        chunk = b.sock.recv(16384)
        if not chunk:
            break
        size += len(chunk)
        b.buf += chunk
        while b"\n" in b.buf:
            l, b.buf = b.buf.split(b"\n", 1)
            got.append(json.loads(l).get("id"))
except (OSError, ValueError) as e:
    got.append(repr(e))
tap.ok(got == list(range(1, 47)), "46 pipelined requests (%d bytes of replies) read slowly: all answered in order" % size,
       got[-5:])

# a steady slow reader of more than the stall time's worth
wide = submit(c, sample("w.png", 16, 16), epochs=1, width=256)  # a 1.5 MB export
wait_state(c, wide, ("done",))
s = Client()
s.send_raw(line(1, "job.export", {"job": wide}) + "\n" + line(2, "hello") + "\n")
t0, n, total = time.time(), 0, 0
try:
    while n < 2:
        chunk = s.sock.recv(4096)
        if not chunk:
            break
        total += len(chunk)
        n += chunk.count(b"\n")
        time.sleep(0.01)
except OSError as e:
    pass
took = time.time() - t0
tap.ok(n == 2 and took > 2.5, "a slow reader (%d bytes in %.1f s, stall time 2 s) is not dropped" % (total, took),
       (n, took))

# an unfinished line times out
u = Client()
u.send_raw('{"jsonrpc": "2.0", "id": 1, "method"')
t0 = time.time()
try:
    r = u.readline()
    eof = u.sock.recv(10) == b""
except Exception as e:
    r, eof = repr(e), False
tap.ok(isinstance(r, dict) and r["error"]["data"].get("limit") == "VKINRD_LINE_SECONDS" and eof
       and 1.5 < time.time() - t0 < 10, "an unfinished line times out with an error naming the limit", r)

# one uid's unfinished lines are capped in all
p1, p2 = Client(), Client()
p1.send_raw('{"x": "' + "a" * 600000)
time.sleep(0.3)
try:
    p2.send_raw('{"x": "' + "a" * 600000)
except OSError:
    pass  # refused and closed before it was all sent
try:
    r = p2.readline()
except Exception as e:
    r = repr(e)
tap.ok(isinstance(r, dict) and r["error"]["data"].get("limit") == "LIMIT_PARTIAL_BYTES_PER_UID",
       "a uid's unfinished lines past its cap: refused naming the limit", r)
p1.send_raw('"}\n')
r1 = p1.readline()
tap.ok(r1["error"]["code"] == -32600 and c.call("hello")["protocol"] == 1,
       "the first connection and the others go on", r1)
tap.done()
EOF_PY
stop_daemon
tap_done
