"""users.py - requests and commands as another uid (users.bash made them):
setpriv switches uid and gid and clears the groups, so the daemon sees that
uid through SO_PEERCRED, as it would a real user."""
import json, os, subprocess

from rpc import CTL, SOCK

UIDS = [int(u) for u in os.environ.get("VKINRT_UIDS", "").split()]


def setpriv(uid):
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]


def env():
    return dict(os.environ, PYTHONDONTWRITEBYTECODE="1", VKINR_SOCKET=SOCK)


RUN = r'''
import json, sys
from rpc import Client
c = Client()
print(json.dumps([c.request(m, p) for m, p in json.load(sys.stdin)]))
'''


def as_uid(uid, reqs, timeout=120):
    """Runs [method, params] requests on one connection as uid; returns the
    replies (each {"result": ...} or {"error": ...})."""
    p = subprocess.run(setpriv(uid) + ["python3", "-c", RUN], input=json.dumps(reqs),
                       capture_output=True, text=True, timeout=timeout, env=env())
    if p.returncode:
        raise RuntimeError(p.stderr)
    return json.loads(p.stdout)


def call_as(uid, method, params=None):
    """One request as uid: its result, or raises with its error."""
    r = as_uid(uid, [[method, params]])[0]
    if "error" in r:
        raise RuntimeError(r["error"])
    return r["result"]


def ctl_as(uid, *args, timeout=120):
    """The real vkinrctl as uid, on the test's socket."""
    return subprocess.run(setpriv(uid) + [CTL] + [str(a) for a in args], env=env(),
                          capture_output=True, text=True, timeout=timeout)


def popen_as(uid, code, *args):
    """A python program as uid, in the background (stdout piped)."""
    return subprocess.Popen(setpriv(uid) + ["python3", "-c", code] + [str(a) for a in args],
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
