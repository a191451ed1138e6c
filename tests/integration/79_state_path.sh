#!/bin/bash
# 79_state_path.sh - the state folder's path is resolved once and only
# the real path is used (issue 24, item 8):
#   - a --state-dir through a symbolic link that another uid (nobody)
#     owns is refused, naming the link and its owner;
#   - through a link of our own, the daemon runs in the real folder: its
#     log line and daemon.status name the real path; once the link is
#     pointed at another folder, new jobs still land in the real folder
#     and job.remove removes the job's folder there (nothing is created
#     or removed in the other one).
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
	for i in 1 2 3 4; do echo "ok $i # SKIP needs root and the uid nobody"; done
	exit 0
fi
mkdir -m 0700 "$T/real" "$T/other"
ln -s "$T/real" "$T/theirs"
chown -h nobody "$T/theirs"
timeout 30 "$VKINRD" --socket "$T/x.sock" --state-dir "$T/theirs" >"$T/refused.log" 2>&1
rc=$?
check "a link another uid owns is refused, naming it and its owner" \
	eval "[ $rc != 0 ] && [ $rc != 124 ] && grep -q 'theirs is a symbolic link that belongs to uid $(id -u nobody)' '$T/refused.log' && [ ! -e '$T/x.sock' ]"
ln -s "$T/real" "$T/mine"
STATE=$T/mine
start_daemon || { echo "not ok 2 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
real = os.path.join(T, "real")
st = c.call("daemon.status")
log = open(os.path.join(T, "daemon.log")).read()
tap.ok(st["state_dir"] == real and ("state in %s:" % real) in log,
       "through a link of ours: daemon.status and the log name the real folder",
       (st["state_dir"], log[-400:]))
img = sample("p.png", 16, 16)
a = submit(c, img, epochs=2, width=16)
follow(c, a)
os.unlink(os.path.join(T, "mine"))
os.symlink(os.path.join(T, "other"), os.path.join(T, "mine"))
b = submit(c, img, epochs=2, width=16)
follow(c, b)
tap.ok(os.path.isdir(os.path.join(real, "jobs", b)) and os.listdir(os.path.join(T, "other")) == [],
       "the link pointed elsewhere: a new job still lands in the real folder",
       (os.listdir(real), os.listdir(os.path.join(T, "other"))))
os.makedirs(os.path.join(T, "other", "jobs", a))
c.call("job.remove", {"job": a})
tap.ok(not os.path.exists(os.path.join(real, "jobs", a))
       and os.path.isdir(os.path.join(T, "other", "jobs", a)),
       "job.remove removes the folder in the real state folder, not where the link points now",
       (os.listdir(os.path.join(real, "jobs")), os.listdir(os.path.join(T, "other", "jobs"))))
tap.done()
EOF_PY
tap_done
