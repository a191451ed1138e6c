#!/bin/bash
# 31_state_moved.sh - a daemon whose state folder is moved away stops
# writing by its path (issue 31, item 10: "moving the state folder away
# and making a new one at its path let a second daemon start there while
# the first went on writing into the new folder").
#   - with a job running, the folder is renamed and a new empty one made
#     at its path: the daemon exits non-zero within a few seconds, its log
#     saying the folder is no longer the one it locked;
#   - nothing was written into the new folder;
#   - a second daemon starts on the path and serves;
#   - a daemon on the moved folder finds the job and goes on with it.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
need_pil
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
c = Client()
img = sample("s.png", 16, 16)
job = submit(c, img, epochs=10000, width=16)
j = wait_epoch(c, job, 1)
open(os.path.join(T, "job"), "w").write(job)
print("# job %s at epoch %d" % (job, j["epoch"]))
EOF_PY
mv "$STATE" "$T/moved"
mkdir -m 0700 "$STATE"
A=$DPID
gone=
for _ in $(seq 1 100); do
	kill -0 "$A" 2>/dev/null || { gone=1; break; }
	sleep 0.1
done
[ -n "$gone" ] || kill -9 "$A"
wait "$A"; rc=$?
DPID=
check "the daemon exits non-zero once its state folder is moved away (rc $rc)" \
	test -n "$gone" -a "$rc" != 0
# "gone" when it looked between the mv and the mkdir
check "its log says the folder is no longer the one it locked" \
	grep -Eq "state folder $STATE is (no longer the folder this daemon locked|gone)" "$T/daemon.log"
check "nothing was written into the new folder" test -z "$(ls -A "$STATE")"
start_daemon || echo "# the second daemon did not start"
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
h = connect_retry().call("hello")
tap.ok(h.get("daemon") == "vkinrd", "a second daemon starts on the path and serves", h)
tap.done()
EOF_PY
TAP_N=4
stop_daemon
SOCK=$T/moved.sock STATE=$T/moved start_daemon || echo "# the daemon on the moved folder did not start"
SOCK=$T/moved.sock run_py <<'EOF_PY'
from rpc import *
tap = Tap()
job = open(os.path.join(T, "job")).read()
j = Client().call("job.get", {"job": job})
tap.ok(j.get("width") == 16 and j.get("state") in ("queued", "running"),
       "the moved folder's daemon has the job, to go on with", j)
tap.done()
EOF_PY
stop_daemon
tap_done
