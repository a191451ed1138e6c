#!/bin/bash
# 36_dashboard_batch_ended.sh - the dashboard's batch panel counts a job
# that ended at its final PSNR after its last epoch, as `plot --summary`
# does (36_plot_summary_ended): found on the walk through the README, its
# mean over epochs fell each time a good job stopped early (at
# --target-psnr, or a shorter run) and ended at the worst job's PSNR.
# One batch of two jobs (job.submit's "batch"): a quick one fitted well
# (60 epochs), a long one whose tiny learning rate keeps it low (120).
# The data the panel draws from (the dashboard's /api/jobs and
# /api/history, as curl gets them) is fed to the page's own batchBand()
# (web/dashboard.js, run by node): the mean never falls, and its last
# point is the mean of the jobs' final PSNRs, both counted. The page in a
# browser is 47_dashboard_browser.sh.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
CTL=$BUILD/vkinrctl
if ! command -v curl >/dev/null || ! command -v node >/dev/null; then
	for i in $(seq 1 "$TAP_PLAN"); do echo "ok $i # SKIP needs curl and node"; done
	exit 0
fi
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
run_py <<'EOF_PY'
import base64, os, subprocess
from rpc import *
c = Client(timeout=120)
ids = []
for name, seed, epochs, lr in (("good", "1", 60, None), ("slow", "2", 120, 1e-5)):
    img = os.path.join(T, name + ".png")
    subprocess.run([os.environ["MKSAMPLE"], img, "16", "16", seed], check=True,
                   capture_output=True)
    p = {"image": {"png": base64.b64encode(open(img, "rb").read()).decode()},
         "epochs": epochs, "width": 16, "name": name, "batch": "b00e4d0"}
    if lr:
        p["lr"] = lr
    ids.append(c.call("job.submit", p)["job"])
ctl("wait", *ids, timeout=600)
open(os.path.join(T, "ids"), "w").write(" ".join(ids))
EOF_PY
start_dashboard
# the jobs and their whole histories, once the dashboard has read them
for _ in $(seq 300); do
	n=0
	for id in $(cat "$T/ids"); do
		curl -s "$BASE/api/history?job=$id&token=$TOKEN" >"$T/h$id.json"
		grep -q '"epoch":\[1,' "$T/h$id.json" && n=$((n + 1))
	done
	[ "$n" = 2 ] && break
	sleep 0.1
done
curl -s "$BASE/api/jobs?token=$TOKEN" >"$T/jobs.json"
check "the data: both jobs done, in one batch, the good one's history ending at epoch 60" \
	python3 -c 'import json, sys
jobs = {j["name"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
h = json.load(open(sys.argv[2] + "/h%s.json" % jobs["good"]["id"]))
assert jobs["good"]["state"] == jobs["slow"]["state"] == "done", jobs
assert jobs["good"]["batch"] == jobs["slow"]["batch"] == "b00e4d0", jobs
assert h["epoch"][-1] == 60, h["epoch"][-3:]' "$T/jobs.json" "$T"
cat >"$T/band.js" <<'EOF_JS'
// the page's own functions, taken from web/dashboard.js, on the data
const fs = require('fs'), [src, dir] = process.argv.slice(2);
const page = fs.readFileSync(src, 'utf8');
const fn = (name) => { const m = page.match(new RegExp('^function ' + name + '\\(.*?^}', 'ms')); if (!m) throw new Error('no ' + name + ' in the page'); return m[0]; };
const { valueAt, batchBand } = new Function(fn('valueAt') + '\n' + fn('batchBand') + '\nreturn { valueAt, batchBand };')();
const jobs = JSON.parse(fs.readFileSync(dir + '/jobs.json', 'utf8')).jobs;
const hist = new Map(jobs.map((j) => [String(j.id), JSON.parse(fs.readFileSync(dir + '/h' + j.id + '.json', 'utf8'))]));
const last = Math.max(...jobs.map((j) => j.epoch));
const band = batchBand(jobs, hist, last);
console.log(JSON.stringify({ last, finals: jobs.map((j) => j.psnr), mean: band.mean.map((p) => p.y), sd: band.hi.map((p, i) => p.y - band.mean[i].y) }));
EOF_JS
node "$T/band.js" "$ROOT/web/dashboard.js" "$T" >"$T/band.json" 2>"$T/band.err"
check "the panel's mean over epochs does not fall when the good job ends at epoch 60" \
	python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))
m = b["mean"]
assert len(m) == 120, len(m)
assert all(y >= x - 1e-9 for x, y in zip(m, m[1:])), max(x - y for x, y in zip(m, m[1:]))' "$T/band.json"
check "... and ends at the two final PSNRs' mean, both counted (a spread)" \
	python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))
f = b["finals"]
print("# last mean", b["mean"][-1], "finals", f)
assert abs(b["mean"][-1] - sum(f) / 2) < 1e-3 and b["sd"][-1] > 0.5, (b["mean"][-1], f, b["sd"][-1])' "$T/band.json"
[ "$TAP_FAILED" != 0 ] && sed 's/^/#   /' "$T/band.err"
kill -TERM "$DASH" 2>/dev/null
wait "$DASH" 2>/dev/null
stop_daemon
tap_done
