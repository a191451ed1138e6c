#!/bin/bash
# 13_pack_timings.sh - `vkinrd --fit DIR --timings` times a pack's epoch
# (issue 30): the summary says how many pack epochs ran, the mean pack
# epoch on the host's clock, its GPU passes pass by pass (timestamps the
# packed programs carry for their fits) adding up to pack_gpu_ms, and the
# host's clock by phase; without --timings none of it is there.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device

mkdir "$T/in"
for i in 1 2 3; do "$MKSAMPLE" "$T/in/$i.png" 16 16 "$i" >/dev/null; done
"$VKINRD" --fit "$T/in" --out "$T/out" --width 16 --epochs 4 --json --timings -q |
	tail -1 >"$T/with.json"
"$VKINRD" --fit "$T/in" --out "$T/out2" --width 16 --epochs 4 --json -q |
	tail -1 >"$T/without.json"
run_py "$T/with.json" "$T/without.json" <<'EOF_PY'
import json, sys
from rpc import Tap
tap = Tap()
r = json.load(open(sys.argv[1]))
plain = json.load(open(sys.argv[2]))
passes = ["first", "activate", "dwconv", "pw_forward", "head", "pw_grad_weight",
          "pw_grad_data", "dwconv_back", "reduce", "optimizer"]
tap.ok(r.get("images") == 3 and r.get("pack_epochs") == 4 and r.get("pack_epoch_ms", 0) > 0,
       "the summary counts the pack's epochs and their mean host time", r)
pm = r.get("pass_ms", {})
tap.ok(sorted(pm) == sorted(passes) and pm["pw_forward"] > 0 and pm["optimizer"] > 0 and
       abs(sum(pm.values()) - r.get("pack_gpu_ms", -1)) < 1e-2,
       "the GPU time of each pass, from the packed programs, adding up to pack_gpu_ms", r)
ph = r.get("phase_ms", {})
tap.ok(sorted(ph) == sorted(["begin", "epoch_run", "measure", "optim_run", "after"]) and
       ph["epoch_run"] > 0 and sum(ph.values()) <= r["pack_epoch_ms"] * 1.01 + 0.01,
       "the host's clock by phase, within the pack epoch's", ph)
tap.ok(not any(k in plain for k in ("pack_epochs", "pass_ms", "phase_ms")) and plain.get("images") == 3,
       "without --timings the summary has none of it", plain)
EOF_PY
