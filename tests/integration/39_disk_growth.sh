#!/bin/bash
# 39_disk_growth.sh - the per-uid disk quota counts what running jobs
# write, not only what was sent (VKINRD_DISK_BYTES_PER_UID=800000, a
# checkpoint every 5 epochs, --pack 8). A done job of width 64 holds about
# 560 kB; a second one is accepted (what it sends is small), and once its
# first checkpoints (about 470 kB) take the uid past its quota it is
# paused, saying so with the figures, not left to fill the disk. Once the
# done job is removed, the daemon's retry queues it again by itself and
# it ends done, every epoch once.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
export VKINRD_CHECKPOINT_EPOCHS=5
VKINRD_DISK_BYTES_PER_UID=800000 PACK=8 start_daemon ||
	{ echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("s.png", 16, 16)
first = submit(c, img, epochs=10, width=64)
wait_state(c, first, ("done",))
grow = submit(c, img, epochs=300, width=64, seed=3)
j = wait_state(c, grow, ("paused", "done", "failed"), timeout=120)
tap.ok(j["state"] == "paused" and "quota" in (j.get("error") or "")
       and "LIMIT_DISK_BYTES_PER_UID" in j["error"] and j["epoch"] < 300,
       "a running job that takes its uid past its disk quota is paused: %s"
       % (j.get("error") or "")[:200], j)
time.sleep(4)
tap.ok(c.call("job.get", {"job": grow})["state"] == "paused",
       "it stays paused while the uid is over its quota")
c.call("job.remove", {"job": first})
epochs, states, _ = follow(c, grow, timeout=240)
hist = [json.loads(l)["epoch"] for l in open(os.path.join(os.environ["STATE"], "jobs", grow,
                                                          "metrics.ndjson"))]
tap.ok(states[-1:] == ["done"] and hist == list(range(1, 301)),
       "once the done job is removed, it is queued again by itself and ends done, every epoch once",
       (states, hist[-3:], c.call("job.get", {"job": grow}).get("error")))
tap.done()
EOF_PY
stop_daemon
tap_done
