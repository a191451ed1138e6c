#!/bin/bash
# 13_profile.sh - VKINR_PROFILE=1 times every dispatch on the device and
# prints each pipeline's runs and time when the device closes: a pack's
# packed pipelines (_pk) and a single fit's own, one run a dispatch an
# epoch; without the switch nothing of it is printed.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device

mkdir "$T/in"
for i in 1 2 3; do "$MKSAMPLE" "$T/in/$i.png" 16 16 "$i" >/dev/null; done
VKINR_PROFILE=1 "$VKINRD" --fit "$T/in" --out "$T/out" --width 16 --epochs 4 -q \
	2>"$T/pack.err" >/dev/null
VKINR_PROFILE=1 "$VKINRD" --fit "$T/in/1.png" --width 16 --epochs 4 -q \
	--model "$T/one.safetensors" 2>"$T/one.err" >/dev/null
"$VKINRD" --fit "$T/in" --out "$T/out2" --width 16 --epochs 4 -q \
	2>"$T/plain.err" >/dev/null
run_py "$T/pack.err" "$T/one.err" "$T/plain.err" <<'EOF_PY'
import re, sys
from rpc import Tap
tap = Tap()
def lines(path):
    out = {}
    for l in open(path):
        m = re.match(r"vkinrd: profile (\S+) +(\d+) runs +([\d.]+) ms", l)
        if m:
            out[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return out, open(path).read()
pack, ptext = lines(sys.argv[1])
one, otext = lines(sys.argv[2])
plain, ltext = lines(sys.argv[3])
tap.ok("profile of" in ptext and pack.get("first_pk", (0,))[0] >= 4 and
       any(k.startswith("adam") for k in pack),
       "a pack's packed pipelines, the first layer's at least once an epoch", sorted(pack))
tap.ok(all(ms >= 0 for _, ms in pack.values()) and sum(ms for _, ms in pack.values()) > 0,
       "their times add up to some device time", pack)
tap.ok(one.get("first", (0,))[0] >= 4 and not any(k.endswith("_pk") for k in one),
       "a single fit's own pipelines, none packed", sorted(one))
tap.ok(not plain and "profile" not in ltext, "without VKINR_PROFILE nothing", ltext[-300:])
EOF_PY
