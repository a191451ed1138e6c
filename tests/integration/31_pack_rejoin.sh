#!/bin/bash
# 31_pack_rejoin.sh - a job that rejoins a pack another user's jobs fill
# (issue 31, item 4: "never lets a job's own epoch time grow more than a
# bounded factor because another user's jobs joined"). Real uids
# (users.bash: vkinrt1 fills the pack, vkinrt2 is the victim), one worker
# with --pack 64.
#  1. The victim's job (32x32, width 16) trains alone, is paused, and
#     while it waits uid A's 40 long jobs (16x16, width 16) fill the pack
#     and train; then the victim is resumed and rejoins it. Admission
#     sends A's newest jobs back to the queue (worker_admit.c: the pack's
#     work at most WORKER_PACK_FAIR = 3 times each uid's, each uid keeping
#     its oldest job), so at most 3 of A's stay beside it (asserted), and
#     each job sent back says why in its log. The victim's epoch against
#     its epoch alone is asserted within 10x: before, it shared the pack
#     with all 40 (81x here, 12.6 against 1022.8 ms; its cancel took
#     0.9 s); now 4.7-8.6x on this 2-core lavapipe machine (79-93 ms),
#     where a pack of any two fits already costs 4-5 times one alone (the
#     victim beside one other 16x16 job: 54-68 ms, before this change as
#     after), so the bound on the work (3x) is not the bound on the time. Its cancel is answered within 2 s (0.02-0.14 s). The
#     figures are printed, with the pack's own (the daemon's log); the
#     sanitizer build (VKINR_SANITIZED) prints them but skips the timing
#     checks. Then a job of B (16x16) beside A's one 64x64 job, which
#     cannot be sent back (it is A's oldest), would be short of its
#     share: it waits, saying why once, and runs once A's job leaves.
#  2. The daemon stops in under 10 s with 30 of A's jobs running.
#  3. With a pack budget of VKINRD_PACK_MEMORY_BYTES (24 MiB) that A's
#     jobs fill, the victim rejoins all the same: the memory of the jobs
#     sent back counts as free (the pack frees their fits before it loads
#     a joiner), and the device memory stays within the budget.
# run.sh: alone (normal build)
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/users.bash"
tap_plan 8
need_device
need_users 2
PACK=64 start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
tap = Tap()
A, B = UIDS
c = Client()
timing = not os.environ.get("VKINR_SANITIZED")
vimg = png_b64(sample("v.png", 32, 32))
simg = png_b64(sample("s.png", 16, 16))

v = call_as(B, "job.submit", {"image": {"png": vimg}, "epochs": 1000000, "width": 16})["job"]
wait_epoch(c, v, 5, timeout=120)
alone = epoch_ms(c, v, 4)
call_as(B, "job.pause", {"job": v})
as_uid(A, [["job.submit", {"image": {"png": simg}, "epochs": 1000000, "width": 16}]] * 40)
end = time.time() + 120
while running_of(c, A, 2) < 40 and time.time() < end:  # loaded and training
    time.sleep(0.25)
filled = running_of(c, A, 2)
call_as(B, "job.resume", {"job": v})
wait_state(c, v, ("running",))
wait_epoch(c, v, c.call("job.get", {"job": v})["epoch"] + 3, timeout=120)
time.sleep(1)
most = [0]
def watch():
    most[0] = max(most[0], running_of(c, A))
rejoined = epoch_ms(c, v, 6, watch)
CONTROL = r'''
import json, sys, time
from rpc import Client
c = Client()
t = time.time()
k = c.call("job.cancel", {"job": sys.argv[1]})
print(json.dumps([k, time.time() - t]))
'''
k, cancel_s = json.loads(popen_as(B, CONTROL, v).communicate()[0])
sent_back = []
for j in c.call("job.list")["jobs"]:
    if j["uid"] != A:
        continue
    ev = [json.loads(l)["text"] for l in
          open(os.path.join(os.environ["STATE"], "jobs", j["id"], "events.ndjson"))]
    sent_back += [e for e in ev if e.startswith("back to the queue from the pack")]
print("# victim (uid %d, 32x32 width 16): %.1f ms an epoch alone, %.1f ms (%.2fx) after it"
      " rejoined a pack of uid %d's %d jobs (at most %d of them beside it then);"
      " %d of A's jobs sent back; cancel answered in %.2f s"
      % (B, alone, rejoined, rejoined / alone, A, filled, most[0], len(sent_back), cancel_s))
print("# %s" % sent_back[:1])
def timed(cond, what, detail):
    if timing:
        tap.ok(cond, what, detail)
    else:
        tap.n += 1
        print("ok %d # SKIP %s: timings mean nothing in the sanitizer build" % (tap.n, what))
tap.ok(filled == 40, "uid A's 40 jobs fill the pack and train while the victim is paused (%d)"
       % filled)
timed(rejoined <= 10 * alone, "the victim's epochs after it rejoins are at most 10x longer than "
      "alone, not 81x (%.1f ms against %.1f alone)" % (rejoined, alone), (alone, rejoined))
tap.ok(0 < most[0] <= 3 and len(sent_back) >= 40 - most[0],
       "A's newest jobs go back to the queue (%d), each saying why, and A keeps 1 to 3 in the "
       "pack (%d)" % (len(sent_back), most[0]), (most, sent_back[:3]))
timed(cancel_s < 2, "the victim's cancel is answered within 2 s (%.2f s)" % cancel_s, k)
tap.ok(k["state"] == "cancelled", "cancelled", k)
# a job that sending others back cannot give its share waits, saying why
for j in c.call("job.list")["jobs"]:
    if j["state"] in ("queued", "running"):
        c.request("job.cancel", {"job": j["id"]})
big = call_as(A, "job.submit", {"image": {"png": png_b64(sample("b.png", 64, 64))},
                                "epochs": 1000000, "width": 16})["job"]
wait_epoch(c, big, 2, timeout=120)
small = call_as(B, "job.submit", {"image": {"png": simg}, "epochs": 5, "width": 16})["job"]
time.sleep(1.5)
small_state = c.call("job.get", {"job": small})["state"]
ev = [json.loads(l)["text"] for l in
      open(os.path.join(os.environ["STATE"], "jobs", small, "events.ndjson"))]
waits = [e for e in ev if e.startswith("waits:")]
print("# uid %d's 16x16 job beside uid %d's 64x64 one: %s" % (B, A, waits[:1]))
call_as(A, "job.cancel", {"job": big})
done = wait_state(c, small, ("done",), timeout=120)
tap.ok(small_state == "queued" and len(waits) == 1 and "would not make up for it" in waits[0]
       and done["state"] == "done",
       "a job short of its share beside another uid's single large job waits, saying why once, "
       "and runs once that one leaves", (small_state, ev))
# the daemon stops with A's jobs in the pack and queued
as_uid(A, [["job.submit", {"image": {"png": simg}, "epochs": 1000000, "width": 16}]] * 30)
wait_epoch(c, c.call("job.list")["jobs"][-30]["id"], 2, timeout=120)
tap.done()
EOF_PY
TAP_N=6
t0=$(date +%s.%N)
stop_daemon
t=$(echo "$(date +%s.%N) - $t0" | bc)
echo "# the daemon stopped in $t s, with A's 30 jobs in the pack and queued"
grep -o 'a pack of up to.*' "$T/daemon.log" | sed 's/^/# /'
check "SIGTERM stops the daemon within 10 s" test "$(echo "$t < 10" | bc)" = 1
rm -rf "$STATE"
# 24 MiB: five of the small fits (3 MiB each on lavapipe) beside the pack's own
VKINRD_PACK_MEMORY_BYTES=25165824 PACK=64 start_daemon ||
	{ echo "not ok 8 - daemon restarts"; exit 1; }
open_to_users
run_py <<'EOF_PY'
from rpc import *
from users import *
tap = Tap()
A, B = UIDS
c = Client()
vimg = png_b64(sample("v.png", 32, 32))
simg = png_b64(sample("s.png", 16, 16))
v = call_as(B, "job.submit", {"image": {"png": vimg}, "epochs": 1000000, "width": 16})["job"]
wait_epoch(c, v, 5, timeout=120)
call_as(B, "job.pause", {"job": v})
as_uid(A, [["job.submit", {"image": {"png": simg}, "epochs": 1000000, "width": 16}]] * 12)
end = time.time() + 60
while running_of(c, A) < 5 and time.time() < end:
    time.sleep(0.25)
filled = running_of(c, A)
call_as(B, "job.resume", {"job": v})
wait_state(c, v, ("running",), timeout=60)
e = c.call("job.get", {"job": v})["epoch"]
wait_epoch(c, v, e + 3, timeout=60)
d = c.call("daemon.status")["devices"][0]
print("# a pack budget of 24 MiB that uid %d's %d jobs fill: the victim rejoins beside %d of"
      " them, %.1f MiB in use" % (A, filled, running_of(c, A), d["gpu_bytes"] / 2**20))
tap.ok(filled >= 4 and 0 < running_of(c, A) <= 3 and d["gpu_bytes"] <= 25165824,
       "a pack whose memory another uid's jobs fill takes the rejoining victim, sending that "
       "uid's newest back (the memory they free counted)", (filled, d))
tap.done()
EOF_PY
TAP_N=8
stop_daemon
tap_done
