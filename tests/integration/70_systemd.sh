#!/bin/bash
# 70_systemd.sh - the systemd side: the units are valid and the system
# service's exposure (systemd-analyze security --offline=true) is at most
# 2.5; `make install` writes the units with ExecStart under PREFIX; socket
# activation for real (systemd-socket-activate holds the socket, the first
# client starts vkinrd on the passed fd and gets its hello); Type=notify
# (READY=1 once the device is up, STOPPING=1 on SIGTERM) through a path
# and through an abstract NOTIFY_SOCKET; the stop is clean and quick.
# The systemd-analyze checks are skipped where it is not installed
# (Debian package "systemd").
. "$(dirname "$0")/lib.bash"
tap_plan 12
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; TAP_FAILED=$((TAP_FAILED + 1)); fi; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
U=$ROOT/systemd

if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze security --offline=true --no-pager "$U/vkinrd.service" 2>&1)
	score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	echo "# exposure: ${score:-?}"
	[ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }'
	ok $? "systemd-analyze security: exposure ${score:-?} <= 2.5"
	mkdir -p "$T/sys" "$T/user"
	for f in vkinrd.service vkinrd.socket; do
		sed "s|/usr/local/bin/vkinrd|$VKINRD|" "$U/$f" >"$T/sys/$f"
		sed "s|/usr/local/bin/vkinrd|$VKINRD|" "$U/user/$f" >"$T/user/$f"
	done
	v=$(systemd-analyze verify --man=no "$T/sys/vkinrd.service" "$T/sys/vkinrd.socket" 2>&1)
	ok $? "systemd-analyze verify: the system units"
	[ -n "$v" ] && printf '%s\n' "$v" | sed 's/^/#   /'
	v=$(XDG_RUNTIME_DIR=$T/user systemd-analyze --user verify --man=no \
		"$T/user/vkinrd.service" "$T/user/vkinrd.socket" 2>&1)
	ok $? "systemd-analyze --user verify: the user units"
	[ -n "$v" ] && printf '%s\n' "$v" | sed 's/^/#   /'
else
	skip "systemd-analyze is not installed (Debian package systemd)"
	skip "systemd-analyze is not installed"
	skip "systemd-analyze is not installed"
fi

grep -qx 'ListenStream=/run/vkinrd/vkinrd.sock' "$U/vkinrd.socket" &&
	grep -qx 'SocketMode=0660' "$U/vkinrd.socket" &&
	grep -qx 'SocketGroup=vkinrd' "$U/vkinrd.socket" &&
	grep -qx 'ListenStream=%t/vkinrd.sock' "$U/user/vkinrd.socket" &&
	grep -qx 'Type=notify' "$U/vkinrd.service" &&
	grep -qx 'Type=notify' "$U/user/vkinrd.service" &&
	! grep -q '^MemoryDenyWriteExecute' "$U/vkinrd.service" "$U/user/vkinrd.service"
ok $? "units: socket paths, mode 0660 and group vkinrd, Type=notify, no MemoryDenyWriteExecute (JIT)"

# make install into a scratch root, without rebuilding the programs
make -s -C "$ROOT" install B="$BUILD" PREFIX=/opt/vk DESTDIR="$T/inst" \
	-o "$BUILD/vkinrd" -o "$BUILD/vkinrctl" >"$T/install.log" 2>&1 &&
	grep -qx 'ExecStart=/opt/vk/bin/vkinrd' "$T/inst/opt/vk/lib/systemd/system/vkinrd.service" &&
	grep -qx 'ExecStart=/opt/vk/bin/vkinrd' "$T/inst/opt/vk/lib/systemd/user/vkinrd.service" &&
	[ -f "$T/inst/opt/vk/lib/systemd/system/vkinrd.socket" ] &&
	[ -f "$T/inst/opt/vk/lib/systemd/user/vkinrd.socket" ] &&
	[ -f "$T/inst/opt/vk/lib/sysusers.d/vkinrd.conf" ]
ok $? "make install: units in PREFIX/lib/systemd/{system,user}, ExecStart=PREFIX/bin/vkinrd"
[ "$TAP_FAILED" != 0 ] && sed 's/^/#   /' "$T/install.log"

TAP_N=$n
if ! command -v systemd-socket-activate >/dev/null; then
	for i in $(seq $((n + 1)) 12); do echo "ok $i # SKIP systemd-socket-activate is not installed (Debian package systemd)"; done
	tap_done
fi
need_device_rest() {
	if ! "$VKINRD" --devices 2>/dev/null | grep -q '^[0-9]'; then
		for i in $(seq $((n + 1)) 12); do echo "ok $i # SKIP no Vulkan device"; done
		tap_done
	fi
}
need_device_rest
run_py <<'EOF_PY'
import signal, socket, subprocess
from rpc import *
tap = Tap()
state = os.environ["STATE"]
log = open(os.path.join(T, "daemon.log"), "a")

def notify_socket(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(addr)
    s.settimeout(30)
    return s

def wait_gone(p, limit):
    try:
        p.wait(timeout=limit)
        return True
    except subprocess.TimeoutExpired:
        return False

# socket activation: the activator listens; the daemon starts on connect
nsock_path = os.path.join(T, "notify")
ns = notify_socket(nsock_path)
env = dict(os.environ, NOTIFY_SOCKET=nsock_path)
env.pop("VKINR_SOCKET", None)
# the activator passes on only the variables named with -E
act = subprocess.Popen(["systemd-socket-activate", "-l", SOCK, "-E", "NOTIFY_SOCKET",
                        os.environ["VKINRD"],
                        "--state-dir", state, "-v"], env=env, stdout=log, stderr=log)
end = time.time() + 10
while not os.path.exists(SOCK) and time.time() < end:
    time.sleep(0.05)
t0 = time.time()
c = connect_retry()
h = c.call("hello")
tap.ok(h.get("daemon") == "vkinrd" and h.get("protocol") == 1,
       "socket activation: the first client starts vkinrd and gets its hello", h)
msgs = []
try:
    while not any(b"READY=1" in m for m in msgs):
        msgs.append(ns.recv(4096))
except socket.timeout:
    pass
tap.ok(any(b"READY=1" in m for m in msgs), "Type=notify: READY=1 once the device is up",
       msgs)
st = c.call("daemon.status")
dev_up = all(d["state"] in ("idle", "running") for d in st["devices"])
logtext = open(os.path.join(T, "daemon.log")).read()
tap.ok(dev_up and "the socket from systemd" in logtext,
       "it serves on the passed fd; its devices are up at READY", st["devices"])
job = submit(c, sample("s.png", 16, 16), epochs=4000, width=16)
wait_epoch(c, job, 2)
t1 = time.time()
act.send_signal(signal.SIGTERM)
try:
    while not any(b"STOPPING=1" in m for m in msgs):
        msgs.append(ns.recv(4096))
except socket.timeout:
    pass
gone = wait_gone(act, 15)
took = time.time() - t1
jst = json.load(open(os.path.join(state, "jobs", job, "state.json")))
tap.ok(any(b"STOPPING=1" in m for m in msgs) and gone and act.returncode == 0 and took < 10
       and jst["state"] == "queued",
       "SIGTERM: STOPPING=1, the running job checkpointed and queued, exit 0 in %.1f s" % took,
       (msgs, act.returncode, jst.get("state")))
if not gone:
    act.kill()

# a second start, on its own socket, notifying an abstract socket
name = "vkinrd-test-%d" % os.getpid()
ns2 = notify_socket("\0" + name)
env = dict(os.environ, NOTIFY_SOCKET="@" + name)
sock2 = os.path.join(T, "sock2")
d = subprocess.Popen([os.environ["VKINRD"], "--socket", sock2, "--state-dir", state, "-v"],
                     env=env, stdout=log, stderr=log)
got = b""
try:
    got = ns2.recv(4096)
except socket.timeout:
    pass
c2 = Client(sock2)
j = c2.call("job.get", {"job": job})
tap.ok(b"READY=1" in got, "abstract NOTIFY_SOCKET (@name): READY=1", got)
d.send_signal(signal.SIGTERM)
tap.ok(wait_gone(d, 15) and d.returncode == 0, "stops cleanly", d.returncode)
tap.ok(j["state"] in ("queued", "running") and j["epoch"] >= 2,
       "the job stopped by SIGTERM was there after the restart", j)
tap.done()
EOF_PY
tap_done
