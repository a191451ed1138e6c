#!/bin/bash
# 02_two_subscribers.sh - two clients follow the same job, one from the
# start and one that subscribes midway (its history is replayed): both see
# the same epochs with the same metrics, each once, then the same end;
# psnr_best, the best model's PSNR, in the live and the replayed epochs.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
img = sample("b.png", 24, 24)
a, b = Client(), Client()
job = submit(a, img, epochs=60, width=16, seed=5)
a.call("job.subscribe", {"job": job})
wait_epoch(b, job, 20)
ea, sa, ma = follow(a, job, subscribe=False)
eb, sb, mb = follow(b, job)
tap.ok(ea == list(range(1, 61)), "first subscriber: epochs 1..60 once", ea)
tap.ok(eb == list(range(1, 61)), "late subscriber: replay + live, 1..60 once", eb)
tap.ok([m["psnr"] for m in ma] == [m["psnr"] for m in mb]
       and [m["mse"] for m in ma] == [m["mse"] for m in mb], "same metrics for both")
tap.ok(sa[-1] == sb[-1] == "done", "both see done", (sa, sb))
best, running = [m.get("psnr_best") for m in mb], []
for m in ma:
    running.append(max(running[-1:] + [m["psnr"], m.get("psnr_average", 0)]))
tap.ok([m.get("psnr_best") for m in ma] == best and
       all(abs(x - y) < 1e-9 for x, y in zip(best, running)),
       "psnr_best: the running maximum, replayed the same", (best, running))
tap.done()
EOF_PY
stop_daemon
tap_done
