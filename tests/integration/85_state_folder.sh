#!/bin/bash
# 85_state_folder.sh - the state folder is the daemon's alone.
#   - a second daemon on the same state folder (another socket) refuses to
#     start, naming the first one's pid; the first goes on serving, and the
#     job ids stay unique;
#   - a state folder that others can write, or one below a folder others
#     can write (not sticky), or one another uid owns, is refused with a
#     message naming the path;
#   - a job folder that a previous occupant replaced by a symbolic link
#     fails that job alone, and job.remove of it deletes only the link,
#     never the files it pointed at;
#   - with the running daemon's lock file deleted, a second daemon still
#     refuses (the folder itself is locked), saying another one uses it,
#     and the first goes on serving.
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }

# refused: runs vkinrd on the given state folder; true when it exits non-
# zero within 30 s; its output is in $T/refused.log
refused() {
	timeout 30 "$VKINRD" --socket "$T/other.sock" --state-dir "$1" \
		>"$T/refused.log" 2>&1
	local rc=$?
	[ $rc != 0 ] && [ $rc != 124 ]
}

if refused "$STATE" && grep -q "pid $DPID" "$T/refused.log" &&
	[ ! -e "$T/other.sock" ]; then
	echo "ok 1 - a second daemon on the same state folder refuses, naming the first's pid"
else
	echo "not ok 1 - a second daemon on the same state folder refuses, naming the first's pid"
	sed 's/^/#   /' "$T/refused.log"; TAP_FAILED=1
fi
TAP_N=1
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("s.png", 16, 16)
a = submit(c, img, epochs=2, width=16)
b = submit(c, img, epochs=2, width=16)
tap.ok(c.call("hello")["version"] and a != b, "the first daemon goes on serving, ids unique", (a, b))
tap.done()
EOF_PY
TAP_N=2

open_dir=$T/open; mkdir -p "$open_dir/state" && chmod 0777 "$open_dir/state"
if refused "$open_dir/state" && grep -q "$open_dir/state is writable by others" "$T/refused.log"; then
	echo "ok 3 - a state folder others can write is refused, naming it"
else
	echo "not ok 3 - a state folder others can write is refused, naming it"
	sed 's/^/#   /' "$T/refused.log"; TAP_FAILED=1
fi
chmod 0700 "$open_dir/state"; chmod 0777 "$open_dir"
if refused "$open_dir/state" && grep -q "$open_dir is writable by others" "$T/refused.log"; then
	echo "ok 4 - a state folder below a folder others can write is refused, naming it"
else
	echo "not ok 4 - a state folder below a folder others can write is refused, naming it"
	sed 's/^/#   /' "$T/refused.log"; TAP_FAILED=1
fi
# accepted: vkinrd on the given state folder starts serving (its socket
# appears and it still runs), and is stopped then; the wait was refused's
# whole 30 s timeout before
accepted() {
	"$VKINRD" --socket "$T/other.sock" --state-dir "$1" >"$T/refused.log" 2>&1 &
	local p=$! up=0
	for _ in $(seq 300); do
		[ -S "$T/other.sock" ] && break
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	[ -S "$T/other.sock" ] && kill -0 "$p" 2>/dev/null && up=1
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	rm -f "$T/other.sock"
	[ $up = 1 ]
}
chmod +t "$open_dir"
if accepted "$open_dir/state" && ! grep -q "refusing" "$T/refused.log"; then
	echo "ok 5 - a sticky folder above (like /tmp) is accepted"
else
	echo "not ok 5 - a sticky folder above (like /tmp) is accepted"
	sed 's/^/#   /' "$T/refused.log"; TAP_FAILED=1
fi
chmod 0700 "$open_dir"
if [ "$(id -u)" != 0 ]; then
	echo "ok 6 # SKIP not root: cannot give a folder to another uid"
else
	mkdir -p "$T/theirs" && chown 65534 "$T/theirs"
	if refused "$T/theirs" && grep -q "$T/theirs belongs to uid 65534" "$T/refused.log"; then
		echo "ok 6 - a state folder another uid owns is refused, naming it and the owner"
	else
		echo "not ok 6 - a state folder another uid owns is refused, naming it and the owner"
		sed 's/^/#   /' "$T/refused.log"; TAP_FAILED=1
	fi
fi
TAP_N=6

# a job folder replaced by a link to a folder outside, while stopped
stop_daemon
mkdir -p "$T/outside" && echo precious >"$T/outside/request.json" &&
	echo precious >"$T/outside/keep"
rm -rf "$STATE/jobs/1" && ln -s "$T/outside" "$STATE/jobs/1"
start_daemon || { echo "not ok 7 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
j = c.request("job.get", {"job": "1"})
other = c.call("job.get", {"job": "2"})
tap.ok("result" in j and j["result"]["state"] == "failed" and "symbolic link" in j["result"]["error"]
       and other["state"] != "failed",
       "a job folder that is a symbolic link fails that job alone, saying why", (j, other))
r = c.call("job.remove", {"job": "1"})
out = os.path.join(T, "outside")
tap.ok(sorted(os.listdir(out)) == ["keep", "request.json"] and not os.path.lexists(
       os.path.join(os.environ["STATE"], "jobs", "1")),
       "job.remove deletes the link, not the files it points at", os.listdir(out))
tap.done()
EOF_PY
TAP_N=8

rm -f "$STATE/lock"
if refused "$STATE" && grep -q "another vkinrd is using the state folder $STATE" "$T/refused.log" &&
	[ ! -e "$T/other.sock" ]; then
	echo "ok 9 - the lock file deleted, a second daemon still refuses, saying why"
else
	echo "not ok 9 - the lock file deleted, a second daemon still refuses, saying why"
	sed 's/^/#   /' "$T/refused.log"; TAP_FAILED=1
fi
TAP_N=9
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
tap.ok(c.call("hello")["version"] and c.call("job.get", {"job": "2"})["id"] == "2",
       "and the first daemon goes on serving")
tap.done()
EOF_PY
stop_daemon
tap_done
