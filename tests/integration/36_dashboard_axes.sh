#!/bin/bash
# 36_dashboard_axes.sh - the dashboard's curves against the wall clock,
# and axis ticks that read well on short runs. The server's history and
# progress carry each epoch's wall-clock "time" (the metrics' own, to the
# millisecond); in a headless Chromium (cdp.py) the x axis offers the
# wall clock: its labels are local times of day, rising, each its own,
# and a job that ran after another is drawn to its right. On runs of one
# and three epochs no axis of any chart repeats a label, the epoch axis
# has whole epochs only, and neither it nor the time axes go below 0.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
CTL=$BUILD/vkinrctl
export VKINR_SOCKET=$SOCK
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
"$MKSAMPLE" "$T/a.png" 16 16 >/dev/null
A=$("$CTL" submit -q --epochs 3 --width 16 --name three "$T/a.png")
"$CTL" wait "$A" >/dev/null
sleep 2.2 # the second job's epochs two seconds later on the clock
B=$("$CTL" submit -q --epochs 1 --width 16 --name one "$T/a.png")
"$CTL" wait "$B" >/dev/null

start_dashboard
"$CTL" --json metrics "$A" >"$T/metrics.json"
for _ in $(seq 100); do
	curl -s "$BASE/api/history?job=$A&token=$TOKEN" >"$T/hist.json"
	grep -q '"time":\[[0-9]' "$T/hist.json" && break
	sleep 0.1
done
check "api/history: each epoch's wall-clock time, as the metrics have it" \
	python3 -c "
import json
h = json.load(open('$T/hist.json'))
m = [r['time'] for r in json.load(open('$T/metrics.json'))['jobs'][0]['history']]
assert len(h['time']) == 3 and all(abs(a - b) < 2e-3 for a, b in zip(h['time'], m)), (h, m)"

PY=${VKINR_BROWSER_PYTHON:-/usr/bin/python3}
if ! command -v chromium >/dev/null || ! "$PY" -c 'import websocket' 2>/dev/null; then
	for i in 2 3 4 5; do echo "ok $i # SKIP needs chromium and python3-websocket"; done
	kill "$DASH"; wait "$DASH" 2>/dev/null
	stop_daemon
	exit 0
fi
URL=$URL A=$A B=$B TAP_START=$TAP_N PYTHONPATH=$HERE "$PY" - <<'EOF'
import json, os, re, sys, time
import cdp

n = int(os.environ["TAP_START"])
fails = 0
A, B = os.environ["A"], os.environ["B"]

def ok(name, cond, why=""):
    global n, fails
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, name), flush=True)
    if not cond:
        fails += 1
        print("#   " + str(why).replace("\n", "\n#   "), flush=True)

LABELS = ("JSON.stringify(Object.fromEntries(['c-psnr', 'c-mse', 'c-lr', 'c-band'].map((c) => [c, "
          "Object.fromEntries(Object.entries(Chart.getChart(c).scales).map(([k, s]) => "
          "[k, s.ticks.map((t) => t.label)]))])))")

def axis(x):
    b.eval("document.getElementById('x-axis').value = '%s';"
           "document.getElementById('x-axis').dispatchEvent(new Event('change'))" % x)
    time.sleep(0.8)
    return json.loads(b.eval(LABELS))

def points(job_index):
    return b.eval("Chart.getChart('c-psnr').data.datasets[%d].data.map((p) => p.x)" % job_index)

b = cdp.Browser()
try:
    b.open(os.environ["URL"])
    b.wait("document.querySelectorAll('#jobs tbody tr').length == 2")
    b.eval("dash.compare.add('%s'); dash.setFocus('%s')" % (B, A))
    b.wait("Chart.getChart('c-psnr').data.datasets.length == 4 && "
           "Chart.getChart('c-psnr').data.datasets[0].data.length == 3")
    options = b.eval("[...document.getElementById('x-axis').options].map((o) => o.value)")
    lab = axis("time")
    xs = [l for l in lab["c-psnr"]["x"] if l]
    ok("the x axis offers the wall clock: local times of day, rising, each its own",
       "time" in options and len(xs) >= 3 and all(re.fullmatch(r"\d\d:\d\d:\d\d", l) for l in xs)
       and xs == sorted(set(xs)) and b.eval("Chart.getChart('c-psnr').options.scales.x.title.text").startswith("wall-clock"),
       (options, xs))
    pa, pb = points(0), points(2)
    ok("... the job that ran later is drawn to the right of the first",
       len(pa) == 3 and len(pb) == 1 and max(pa) + 1.5 < min(pb), (pa, pb))

    def tidy(lab, xkind):
        bad = []
        for chart, scales in lab.items():
            for k, labels in scales.items():
                shown = [l for l in labels if l]
                if len(shown) != len(set(shown)):
                    bad.append((chart, k, "repeats", labels))
                if k == "x" and xkind in ("epoch", "t") and any(l.startswith("-") for l in shown):
                    bad.append((chart, k, "below 0", labels))
                if k == "x" and xkind == "epoch" and chart != "c-band" and not all(re.fullmatch(r"\d+", l) for l in shown):
                    bad.append((chart, k, "not whole epochs", labels))
        return bad

    bad = []
    for focus, others in ((A, []), (B, [])):
        b.eval("dash.compare.clear(); dash.setFocus('%s')" % focus)
        time.sleep(0.5)
        for x in ("epoch", "t", "time"):
            bad += [(focus, x) + t for t in tidy(axis(x), x)]
    ok("runs of one and three epochs: no repeated label on any axis, whole epochs, nothing below 0",
       not bad, bad)
    errors = [c for c in b.console if c.startswith("exception")]
    ok("no script error on the page", not errors, errors)
finally:
    b.close()
sys.exit(fails)
EOF
[ $? != 0 ] && TAP_FAILED=1
kill "$DASH"; wait "$DASH" 2>/dev/null
stop_daemon
tap_done
