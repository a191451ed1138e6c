#!/bin/bash
# 07b_list_filter.sh - job.list {"jobs": [...]} lists only the jobs named
# (as strings or numbers, in the order asked, ids of no job left out),
# what `vkinrctl wait` of many jobs asks for every 0.2 s instead of the
# daemon's whole history; a "jobs" that is not an array of ids is
# refused with -32602.
. "$(dirname "$0")/lib.bash"
tap_plan 4
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("a.png", 8, 8)
ids = [submit(c, img, epochs=1, width=16) for _ in range(4)]
got = [j["id"] for j in c.call("job.list", {"jobs": [ids[2], int(ids[0]), "999"]})["jobs"]]
tap.ok(got == [ids[2], ids[0]], "only the jobs named, in the order asked", got)
tap.ok(len(c.call("job.list")["jobs"]) == 4, "without it, every job")
for bad in ("1", [{"id": 1}]):
    try:
        c.call("job.list", {"jobs": bad})
        tap.ok(False, "refused: %r" % (bad,))
    except RuntimeError as e:
        tap.ok("-32602" in str(e) and '"jobs"' in str(e), "refused: %r" % (bad,), str(e))
tap.done()
EOF_PY
