#!/bin/bash
# 31_state_moved_worker.sh - what the worker writes after the state folder
# was moved goes to the folder it locked, never by path into the one now
# at its place (issue 31, item 10, left over: "a worker can write one
# checkpoint by path into a moved state folder"; 31_state_moved covers
# the loop and the lock).
#   - a pack of 16 jobs checkpoints at every epoch (--pack 16,
#     VKINRD_CHECKPOINT_EPOCHS=1); a copy of the state folder, made while
#     they train, is swapped in at its path (two renames), so every job's
#     folder exists there too, while 200 submissions keep the loop busy
#     (before it notices, it writes their files, and the worker its
#     checkpoints);
#   - the daemon exits non-zero, saying the folder is not the one it
#     locked, and no file of the copy was changed or added meanwhile (the
#     loop and the worker reach the state folder through the descriptor
#     of the folder they locked, not by its path);
#   - a daemon started on the folder moved away goes on with the jobs (how
#     many have a newer checkpoint there is printed: it depends on how
#     soon the daemon noticed).
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
export VKINRD_CHECKPOINT_EPOCHS=1
PACK=16 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
c = Client()
img = png_b64(sample("s.png", 16, 16))
jobs = [c.call("job.submit", {"image": {"png": img}, "epochs": 1000000, "width": 16, "seed": i})["job"]
        for i in range(16)]
for j in jobs:
    wait_epoch(c, j, 3, timeout=120)
open(os.path.join(T, "jobs"), "w").write(" ".join(jobs))
state = os.environ["STATE"]
subprocess.run(["cp", "-a", state, os.path.join(T, "copy")])
with open(os.path.join(T, "before"), "w") as f:
    subprocess.run("cd %s/copy && find . -type f -print0 | sort -z | xargs -0 md5sum" % T,
                   shell=True, stdout=f)
# the loop kept busy by a flood of submissions (each one's files written)
# while the pack checkpoints, and the copy swapped in meanwhile
flood = Client()
line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "job.submit",
                   "params": {"image": {"png": img}, "epochs": 5, "width": 16}}) + "\n"
flood.send_raw(line * 200)
os.rename(state, os.path.join(T, "moved"))
os.rename(os.path.join(T, "copy"), state)
EOF_PY
A=$DPID
gone=
for _ in $(seq 1 100); do
	kill -0 "$A" 2>/dev/null || { gone=1; break; }
	sleep 0.1
done
[ -n "$gone" ] || kill -9 "$A"
wait "$A"; rc=$?
DPID=
check "the daemon exits non-zero once its state folder is swapped (rc $rc)" \
	test -n "$gone" -a "$rc" != 0 -a -n "$(grep -E "state folder $STATE is (no longer the folder this daemon locked|gone)" "$T/daemon.log")"
(cd "$STATE" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$T/after"
changed=$(diff "$T/before" "$T/after" | grep -E '^[<>]' | awk '{print $3}' | sort -u | tr '\n' ' ')
echo "# files of the copy changed or added after the swap: ${changed:-none}"
echo "# of them checkpoints (the worker's): $(echo "$changed" | tr ' ' '\n' | grep -c checkpoint)"
check "nothing was written into the folder now at the path" test -z "$changed"
newer=0
for j in $(cat "$T/jobs"); do
	[ "$T/moved/jobs/$j/checkpoint.safetensors" -nt "$STATE/jobs/$j/checkpoint.safetensors" ] &&
		newer=$((newer + 1))
done
# (how many, depends on how soon the daemon noticed: a figure, not a check)
echo "# $newer of 16 jobs have a newer checkpoint in the folder moved away"
rm -rf "$STATE"
SOCK=$T/moved.sock STATE=$T/moved start_daemon || echo "# the daemon on the moved folder did not start"
SOCK=$T/moved.sock run_py <<'EOF_PY'
from rpc import *
tap = Tap()
jobs = open(os.path.join(T, "jobs")).read().split()
c = Client()
js = [c.call("job.get", {"job": j}) for j in jobs]
tap.ok(all(j["state"] in ("queued", "running") and j["epoch"] >= 3 for j in js),
       "a daemon on the moved folder has every job, to go on with",
       [(j["state"], j["epoch"]) for j in js])
tap.done()
EOF_PY
TAP_N=3
stop_daemon
tap_done
