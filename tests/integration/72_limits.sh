#!/bin/bash
# 72_limits.sh - every documented limit refuses with -32004 and
# data {"limit": NAME, "value": N}: a line over LIMIT_LINE_BYTES, an image
# over IMAGE_MAX_SIDE or IMAGE_MAX_PIXELS (job.submit), jobs per uid,
# connections per uid and in all (an error line, then the connection is
# closed; full in all, an idle connection of the uid holding the most
# gives way to another uid's), and a client that never reads: once its unread output passes
# half of LIMIT_SUBSCRIBER_BYTES its requests are no longer read, so what
# waits for it stays bounded, and it is dropped when its output has not
# moved for VKINRD_STALL_SECONDS (3 here). The job and connection limits are
# lowered here through the test-only variables of vkinrd-env(7); the second
# uid is nobody (65534, through setpriv).
. "$(dirname "$0")/lib.bash"
tap_plan 11
need_device
export VKINRD_MAX_JOBS_PER_UID=3 VKINRD_MAX_CONNECTIONS_PER_UID=4 VKINRD_MAX_CONNECTIONS=6
export VKINRD_STALL_SECONDS=3
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
chmod 0711 "$T" && chmod 0666 "$SOCK"
run_py <<'EOF_PY'
import socket, struct, subprocess, threading, zlib
from rpc import *
tap = Tap()

def limit_error(r, name, value):
    e = r.get("error", {})
    d = e.get("data", {})
    return (e.get("code") == -32004 and d.get("limit") == name and d.get("value") == value
            and name in e.get("message", "") + json.dumps(d))

def png(w, h, idat=None):
    def chunk(t, data):
        return struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data))
    if idat is None:
        idat = zlib.compress((b"\0" + b"\x80" * (3 * w)) * h)
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                            + chunk(b"IDAT", idat) + chunk(b"IEND", b"")).decode()

c = Client()
st = c.call("daemon.status")["limits"]
tap.ok(st["jobs_per_uid"] == 3 and st["connections_per_uid"] == 4 and st["connections"] == 6
       and st["line_bytes"] == 64 << 20 and st["image_side"] == 16384,
       "daemon.status lists the limits in force (lowered by VKINRD_MAX_*)", st)

# a line over LIMIT_LINE_BYTES; the connection goes on
c.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"client":"' +
           b"x" * (64 << 20) + b'"}}\n')
r = c.read_reply()
tap.ok(limit_error(r, "LIMIT_LINE_BYTES", 64 << 20) and c.call("hello")["protocol"] == 1,
       "a line over 64 MiB: -32004 LIMIT_LINE_BYTES 67108864, then the next line is read", r)

# image limits, checked from the header before anything is inflated
r = c.request("job.submit", {"image": {"png": png(16385, 1)}, "width": 16})
r2 = c.request("job.submit", {"image": {"png": png(8192, 8193, idat=b"x" * 64)}, "width": 16})
tap.ok(limit_error(r, "IMAGE_MAX_SIDE", 16384) and limit_error(r2, "IMAGE_MAX_PIXELS", 64 << 20),
       "images over 16384 a side or 64 Mi pixels: -32004 IMAGE_MAX_SIDE / IMAGE_MAX_PIXELS",
       (r, r2))

# jobs per uid (any state), counted per submitter
small = png(8, 8)
name = "n" * 120
ids = [c.call("job.submit", {"image": {"png": small}, "width": 16, "epochs": 20000, "name": name})["job"]
       for _ in range(3)]
r = c.request("job.submit", {"image": {"png": small}, "width": 16})
NOBODY = r'''
import json, socket, sys, time
from rpc import Client
args = json.load(sys.stdin)
out = {}
c = Client()
out["submit"] = c.request("job.submit", args["submit"])
conns = []
for i in range(3):   # root holds 4; nobody's 2nd is the 6th in all; for its
                     # 3rd an idle one of root's gives way (root holds more);
                     # its 4th finds nobody holding more than it: refused
    try:
        k = Client(timeout=0.5)
        conns.append(k)
        try:    # a refused connection gets an error line at once
            out.setdefault("conns", []).append(k.readline())
            continue
        except socket.timeout:
            pass
        k.sock.settimeout(10)
        out["conns"].append(k.request("hello"))
    except Exception as e:
        out.setdefault("conns", []).append({"exception": str(e)})
print(json.dumps(out))
'''
def as_nobody(args):
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "python3", "-c", NOBODY], input=json.dumps(args), capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    if p.returncode:
        raise RuntimeError(p.stderr)
    return json.loads(p.stdout)

# connections per uid: root has c; 3 more are fine, the 5th is refused
extra = [Client(timeout=10) for _ in range(3)]
for k in extra:
    k.call("hello")
over = Client(timeout=10)
try:
    ro = over.readline()
    try:
        over.readline()
        closed = False
    except (EOFError, ConnectionError):
        closed = True
except Exception as e:
    ro, closed = {"exception": str(e)}, False
tap.ok(limit_error(r, "LIMIT_JOBS_PER_UID", 3) and "remove the ended ones" in r["error"]["message"],
       "a 4th job of one uid: -32004 LIMIT_JOBS_PER_UID 3", r)
tap.ok(limit_error(ro, "LIMIT_CONNECTIONS_PER_UID", 4) and ro.get("id") is None and closed,
       "a 5th connection of one uid: an error line LIMIT_CONNECTIONS_PER_UID 4, then closed", ro)
time.sleep(0.2)  # the refused connection is gone

nb = as_nobody({"submit": {"image": {"png": small}, "width": 16, "epochs": 20000, "name": name}})
tap.ok("result" in nb["submit"], "another uid has its own job quota", nb["submit"])
cn = nb["conns"]
tap.ok(len(cn) == 3 and all("result" in x for x in cn[:2]) and
       limit_error(cn[2], "LIMIT_CONNECTIONS", 6),
       "full in all: an idle connection of the uid holding the most gives way to "
       "another uid's; once both hold 3, LIMIT_CONNECTIONS 6", cn)
gone = extra[2].readline()
tap.ok(limit_error(gone, "LIMIT_CONNECTIONS", 6) and "make room" in gone["error"]["message"],
       "root's newest idle connection was told why it closed", gone)
for k in extra:
    k.close()

c.call("job.cancel", {"job": ids[2]})
c.call("job.remove", {"job": ids[2]})
r = c.request("job.submit", {"image": {"png": small}, "width": 16, "epochs": 20000, "name": name})
tap.ok("result" in r, "after job.remove the uid may submit again", r)
ids[2] = r.get("result", {}).get("job")

# a client that sends requests and never reads their answers: its requests
# stop being read, then it is dropped as stalled
flood = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
flood.connect(SOCK)
flood.settimeout(5)
req = b'{"jsonrpc":"2.0","id":1,"method":"job.list"}\n'
def send_all():
    try:
        for _ in range(100):
            flood.sendall(req * 1400)
    except OSError:
        pass
th = threading.Thread(target=send_all, daemon=True)
th.start()
th.join(20)
time.sleep(4)
got, eof = 0, False
try:
    while True:
        chunk = flood.recv(1 << 20)
        if not chunk:
            eof = True
            break
        got += len(chunk)
except ConnectionResetError:
    eof = True  # closed with our requests unread
except socket.timeout:
    pass
log = open(os.path.join(T, "daemon.log")).read()
tap.ok(eof and got < 4 << 20 and "has not moved for 3 s" in log,
       "a client that never reads: its output stays bounded, it is dropped as stalled, logged",
       (eof, got))
tap.ok(c.call("job.get", {"job": ids[0]})["state"] == "running" and c.call("hello")["protocol"] == 1,
       "the daemon and the running job go on")
tap.done()
EOF_PY
stop_daemon
tap_done
