#!/bin/bash
# 91_clear_errors.sh - each failure names the path and the cause:
#   - a job whose folder is deleted while it runs fails, its error naming
#     the file it could not write and "No such file or directory"; the
#     daemon goes on;
#   - vkinrd with an empty --socket, or a --socket in a missing folder,
#     refuses, naming the option or the folder and the cause;
#   - vkinrctl with an empty --socket, or one in a missing folder, says so.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
export VKINRD_CHECKPOINT_EPOCHS=3
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import shutil
import time
from rpc import *
tap = Tap()
c = Client()
job = submit(c, sample("d.png", 16, 16), epochs=20000, width=16)
wait_epoch(c, job, 2)
folder = os.path.join(os.environ["STATE"], "jobs", job)
# the daemon may write a file while the folder is being emptied: again
for attempt in range(100):
    try:
        shutil.rmtree(folder)
        break
    except OSError:
        time.sleep(0.05)
j = wait_state(c, job, ("failed",), timeout=60)
tap.ok(j["state"] == "failed" and folder in j.get("error", "")
       and "No such file or directory" in j["error"] and c.call("hello")["protocol"] == 1,
       "a job whose folder was deleted fails naming the path and the cause", j)
tap.done()
EOF_PY
TAP_N=1
out=$("$VKINRD" --socket "" --state-dir "$T/s2" 2>&1); rc=$?
out2=$(timeout 30 "$VKINRD" --socket "$T/no/such/sock" --state-dir "$T/s2" 2>&1)
if [ $rc = 2 ] && [[ $out == *"--socket needs a path"* ]] &&
	[[ $out2 == *"cannot create the folder $T/no/such for the socket"*"No such file or directory"* ]]; then
	echo "ok 2 - vkinrd: an empty --socket, or one in a missing folder, is refused saying why"
else
	echo "not ok 2 - vkinrd: an empty --socket, or one in a missing folder, is refused saying why"
	echo "# $out / $out2"; TAP_FAILED=1
fi
out=$("$BUILD/vkinrctl" --socket "" list 2>&1)
if [[ $out == *"the socket path is empty"* ]]; then
	echo "ok 3 - vkinrctl: an empty --socket is named as such"
else
	echo "not ok 3 - vkinrctl: an empty --socket is named as such"; echo "# $out"; TAP_FAILED=1
fi
out=$("$BUILD/vkinrctl" --socket "$T/no/such/sock" list 2>&1)
if [[ $out == *"its folder $T/no/such: No such file or directory"* ]]; then
	echo "ok 4 - vkinrctl: a --socket in a missing folder names the folder and the cause"
else
	echo "not ok 4 - vkinrctl: a --socket in a missing folder names the folder and the cause"
	echo "# $out"; TAP_FAILED=1
fi
stop_daemon
tap_done
