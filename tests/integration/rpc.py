"""rpc.py - a tiny JSON-RPC client for the integration tests, and TAP.

Speaks the daemon's wire protocol directly (one JSON object a line) so the
tests check the protocol itself, not a client library.
"""
import base64, json, os, socket, subprocess, sys, time

SOCK = os.environ.get("SOCK")
T = os.environ.get("T")
CTL = os.path.join(os.path.dirname(os.environ.get("VKINRD", "")), "vkinrctl")


def ctl(*args, text=True, timeout=300):
    """Runs the real vkinrctl (the build's, next to vkinrd) on the test's
    socket; returns the CompletedProcess (stdout, stderr captured)."""
    return subprocess.run([CTL] + [str(a) for a in args],
                          env=dict(os.environ, VKINR_SOCKET=SOCK),
                          capture_output=True, text=text, timeout=timeout)


class Tap:
    def __init__(self):
        self.n = int(os.environ.get("TAP_START", "0"))
        self.failed = 0

    def ok(self, cond, what, detail=None):
        self.n += 1
        print(("ok %d - %s" if cond else "not ok %d - %s") % (self.n, what), flush=True)
        if not cond:
            self.failed += 1
            if detail is not None:
                print("#   " + str(detail)[:2000].replace("\n", "\n#   "), flush=True)
        return cond

    def done(self):
        sys.exit(min(self.failed, 100))


class Client:
    def __init__(self, path=None, timeout=60):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path or SOCK)
        self.buf = b""
        self.next_id = 1
        self.notes = []  # notifications read while waiting for replies

    def send_raw(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def readline(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("connection closed by the daemon")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def read_reply(self, rid=None):
        while True:
            msg = self.readline()
            if "method" in msg and "id" not in msg:
                self.notes.append(msg)
                continue
            if rid is None or msg.get("id") == rid:
                return msg

    def request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg) + "\n")
        return self.read_reply(rid)

    def call(self, method, params=None):
        r = self.request(method, params)
        if "error" in r:
            raise RuntimeError("%s: %s" % (method, r["error"]))
        return r["result"]

    def next_note(self):
        if self.notes:
            return self.notes.pop(0)
        while True:
            msg = self.readline()
            if "method" in msg and "id" not in msg:
                return msg

    def close(self):
        self.sock.close()


def png_b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def sample(name, w, h):
    path = os.path.join(T, name)
    subprocess.run([os.environ["MKSAMPLE"], path, str(w), str(h)], check=True)
    return path


def submit(c, img, **kw):
    params = {"image": {"png": png_b64(img)}}
    params.update(kw)
    return c.call("job.submit", params)["job"]


def follow(c, job, timeout=120, subscribe=True):
    """Subscribes (unless done already) and reads until the job ends;
    returns (epochs, states, metrics)."""
    if subscribe:
        c.call("job.subscribe", {"job": job})
    epochs, states, metrics = [], [], []
    end = time.time() + timeout
    while time.time() < end:
        n = c.next_note()
        p = n["params"]
        if p.get("job") != job:
            continue
        if n["method"] == "job.progress":
            epochs.append(p["epoch"])
            metrics.append(p)
        elif n["method"] == "job.state":
            states.append(p["state"])
            if p["state"] in ("done", "failed", "cancelled"):
                break
    return epochs, states, metrics


def wait_epoch(c, job, epoch, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        j = c.call("job.get", {"job": job})
        if j["epoch"] >= epoch or j["state"] in ("done", "failed", "cancelled"):
            return j
        time.sleep(0.05)
    return c.call("job.get", {"job": job})


def epoch_ms(c, job, seconds, watch=None):
    """A running job's ms an epoch over the next seconds (watch, when
    given, is called every 0.25 s meanwhile)."""
    a = c.call("job.get", {"job": job}); t = time.time()
    end = t + seconds
    while time.time() < end:
        if watch:
            watch()
        time.sleep(0.25)
    b = c.call("job.get", {"job": job})
    return 1000 * (time.time() - t) / max(1, b["epoch"] - a["epoch"])


def running_of(c, uid, epochs=0):
    """How many of uid's jobs are running, at epoch epochs or past it."""
    return sum(1 for j in c.call("job.list")["jobs"]
               if j["uid"] == uid and j["state"] == "running" and j["epoch"] >= epochs)


def wait_state(c, job, states, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        j = c.call("job.get", {"job": job})
        if j["state"] in states:
            return j
        time.sleep(0.1)
    return c.call("job.get", {"job": job})


def wait_unlocked(state, timeout=60):
    """Waits until no process holds the state folder's lock (a flock on
    the folder itself): a daemon killed with SIGKILL holds it until its
    last thread has exited, which a sanitizer build on a loaded machine
    takes a while to do (its main thread may already be a zombie)."""
    import fcntl
    end = time.time() + timeout
    while time.time() < end:
        try:
            fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            time.sleep(0.05)
        finally:
            os.close(fd)
    return False


def connect_retry(timeout=10):
    end = time.time() + timeout
    while True:
        try:
            return Client()
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.1)
