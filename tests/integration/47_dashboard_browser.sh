#!/bin/bash
# 47_dashboard_browser.sh - `vkinrctl dashboard` in a real browser: a
# headless Chromium, driven through its DevTools protocol (cdp.py), opens
# the printed URL against the real daemon. The jobs appear, the stream is
# live, a job's PSNR chart gains points as its epochs arrive, its
# reconstruction and target show, the pause button pauses it in the daemon
# and the resume button queues it again, the state filter filters, and
# after a daemon restart the page says the daemon went away and then
# follows it again, with no script error. A request without the token
# is refused (the HTTP-level checks are 46_dashboard_http.sh's).
#
# With DASHBOARD_SHOTS=FOLDER it also waits for the batch to finish and
# writes dashboard.png there (docs/dashboard.png is one).
# run.sh: slow
. "$(dirname "$0")/lib.bash"
tap_plan 12
need_device
CTL=$BUILD/vkinrctl
PY=${VKINR_BROWSER_PYTHON:-/usr/bin/python3}
if ! command -v chromium >/dev/null || ! "$PY" -c 'import websocket' 2>/dev/null; then
	for i in $(seq 1 "$TAP_PLAN"); do echo "ok $i # SKIP needs chromium and python3-websocket"; done
	exit 0
fi
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
for i in 1 2 3 4 5 6; do "$MKSAMPLE" "$T/img$i.png" 32 32 "$i" >/dev/null; done
LONG=$("$CTL" submit -q --epochs 100000 --width 16 --name long "$T/img1.png")
"$CTL" submit -q --epochs ${BATCH_EPOCHS:-300} --width 16 "$T"/img[2-6].png >"$T/batch.ids"

start_dashboard
check "a request without the token is refused (403)" \
	eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "${URL%%\?*}")" = 403 ]'

# the daemon's command line, for the restart the browser part makes
echo "$VKINRD --socket $SOCK --state-dir $STATE --pack 1 -v" >"$T/daemon.cmd"
URL=$URL LONG=$LONG CTL=$CTL SHOTS=${DASHBOARD_SHOTS:-} \
	PYTHONPATH=$HERE SOCK=$SOCK T=$T DPID=$DPID TAP_START=$TAP_N \
	"$PY" - <<'EOF'
import os, signal, subprocess, sys, time
import cdp

n = int(os.environ["TAP_START"])
fails = 0
T, LONG, CTL = os.environ["T"], os.environ["LONG"], os.environ["CTL"]

def ok(name, cond, why=""):
    global n, fails
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, name), flush=True)
    if not cond:
        fails += 1
        if why:
            print("#   " + str(why).replace("\n", "\n#   "), flush=True)

def state(job):
    out = subprocess.run([CTL, "--json", "show", job], capture_output=True,
                         text=True).stdout
    return out.split('"state":"', 1)[1].split('"', 1)[0] if '"state":"' in out else "?"

def wait_state(job, want, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if state(job) in want:
            return True
        time.sleep(0.2)
    return False

row = "document.querySelector('tr[data-job=\"%s\"]')" % LONG
points = "Chart.getChart('c-psnr').data.datasets[0].data.length"
b = cdp.Browser()
try:
    b.open(os.environ["URL"])
    ok("the page loads and the six jobs appear",
       b.wait("document.querySelectorAll('#jobs tbody tr').length == 6"),
       b.eval("document.body.innerText.slice(0, 400)"))
    ok("the event stream is live",
       b.wait("document.getElementById('stream').textContent == 'stream: live'"))
    b.eval("dash.setFocus('%s')" % LONG)
    n1 = b.wait("%s > 0 && %s" % (points, points)) or 0
    n2 = b.wait("%s > %d && %s" % (points, n1, points)) or 0
    ok("the PSNR chart gains points as epochs arrive (%d, then %d)" % (n1, n2),
       n1 > 0 and n2 > n1)
    ok("the reconstruction and the target are shown",
       b.wait("document.getElementById('recon').naturalWidth == 32 && "
              "document.getElementById('target').naturalWidth == 32"),
       b.eval("document.getElementById('pictures').innerText"))
    b.eval("%s.querySelector('button.act-pause').click()" % row)
    ok("the pause button pauses the job in the daemon",
       wait_state(LONG, ("paused",)), state(LONG))
    ok("... the page shows it paused, with a resume button",
       b.wait("%s.dataset.state == 'paused' && !!%s.querySelector('button.act-resume')"
              % (row, row)))
    b.eval("%s.querySelector('button.act-resume').click()" % row)
    ok("the resume button queues it again",
       wait_state(LONG, ("queued", "running")), state(LONG))
    b.eval("document.getElementById('f-state').value = 'queued';"
           "document.getElementById('f-state').dispatchEvent(new Event('change'))")
    ok("the state filter shows the queued jobs alone",
       b.wait("[...document.querySelectorAll('#jobs tbody tr')].every("
              "(r) => r.dataset.state == 'queued')"))
    b.eval("document.getElementById('f-state').value = '';"
           "document.getElementById('f-state').dispatchEvent(new Event('change'))")

    # a daemon restart: SIGTERM, then the same command line again
    dpid = int(os.environ["DPID"])
    os.kill(dpid, signal.SIGTERM)
    gone = b.wait("document.getElementById('daemon').textContent.includes('vkinrd')", 30)
    for _ in range(300):
        if not os.path.exists("/proc/%d" % dpid):
            break
        time.sleep(0.1)
    with open(T + "/daemon.log", "a") as log:
        d = subprocess.Popen(open(T + "/daemon.cmd").read().split(),
                             stdout=log, stderr=log)
    with open(T + "/daemon2.pid", "w") as f:
        f.write(str(d.pid))
    back = b.wait("document.getElementById('daemon').textContent == 'daemon: connected'", 60)
    ok("after a daemon restart the page says so, then follows it again",
       gone and back, b.eval("document.getElementById('daemon').textContent"))
    if os.environ.get("SHOTS"):
        ids = open(T + "/batch.ids").read().split()
        # the long job steps aside while the batch runs (it is older)
        subprocess.run([CTL, "pause", LONG], capture_output=True)
        b.eval("dash.setFocus('%s')" % ids[-1])
        for j in ids:
            wait_state(j, ("done",), 300)
        subprocess.run([CTL, "resume", LONG], capture_output=True)
        wait_state(LONG, ("running",), 30)
        b.eval("dash.compare.add('%s'); dash.compare.add('%s'); dash.setFocus('%s')"
               % (ids[0], ids[1], LONG))
        time.sleep(3)
        b.screenshot(os.path.join(os.environ["SHOTS"], "dashboard.png"))
    errors = [c for c in b.console if c.startswith("exception")]
    ok("no script error on the page", not errors, errors)
finally:
    b.close()
sys.exit(fails)
EOF
rc=$?
TAP_N=$((TAP_N + 10))
[ $rc != 0 ] && TAP_FAILED=$((TAP_FAILED + rc))
[ -f "$T/daemon2.pid" ] && DPID=$(cat "$T/daemon2.pid")
kill -TERM "$DASH"
wait "$DASH"
check "the dashboard ends with exit 0 on SIGTERM" eval "[ $? = 0 ] || { cat '$T/dash.err'; false; }"
stop_daemon
tap_done
