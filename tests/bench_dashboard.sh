#!/bin/bash
# bench_dashboard.sh BUILD - what `vkinrctl dashboard` costs the daemon:
# the epoch time of the same tiny job (16x16, width 16, on the first
# device: lavapipe here) with no dashboard, with a dashboard following
# every job (JOBS of them, 100 by default) and a page's event stream open,
# and the same with the page's picture refreshed every 4 s (a job.export
# each: a render, which the daemon bounds to 15% of a worker's time).
# The three alternate, ROUNDS times each, so a drift of the machine's load
# falls on all of them; each round is one job of EPOCHS epochs, submitted
# once the dashboard has settled (followed every job, replayed their
# histories: its start is not what is measured), whose
# per-epoch times (vkinrctl metrics --csv, the first 10 left out) are
# pooled per mode. Prints the median and mean epoch time per mode.
#
#   tests/bench_dashboard.sh [BUILD]   (JOBS=100 ROUNDS=3 EPOCHS=300)
set -eu
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
JOBS=${JOBS:-100} ROUNDS=${ROUNDS:-3} EPOCHS=${EPOCHS:-300}
CTL=$B/vkinrctl
T=$(mktemp -d /tmp/vkinrd-bench-dash.XXXXXX)
DPID= DASH= STREAM= PICS=
stop_dash() {
	# the dashboard's own CPU time (user + system, clock ticks), kept
	[ -n "$DASH" ] && [ -r "/proc/$DASH/stat" ] &&
		awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$DASH/stat" >>"$T/dash_cpu"
	for p in $PICS $STREAM $DASH; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	DASH= STREAM= PICS=
}
trap 'stop_dash; [ -n "$DPID" ] && kill "$DPID"; wait; rm -rf "$T"' EXIT
export VKINR_SOCKET=$T/sock
"$B/vkinrd" --socket "$VKINR_SOCKET" --state-dir "$T/state" >"$T/daemon.log" 2>&1 &
DPID=$!
for _ in $(seq 300); do "$CTL" status >/dev/null 2>&1 && break; sleep 0.1; done
"$B/tools/mksample" "$T/a.png" 16 16 >/dev/null

# the population the dashboard follows: JOBS - 1 short jobs, done
for i in $(seq $((JOBS - 1))); do cp "$T/a.png" "$T/p$i.png"; done
"$CTL" submit -q --epochs 20 --width 16 "$T"/p*.png >/dev/null
"$CTL" wait "$("$CTL" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][-1]["id"])')" >/dev/null

start_dash() { # $1: "pics" to fetch the picture every 4 s too
	"$CTL" dashboard --port 0 >"$T/dash.out" 2>&1 &
	DASH=$!
	for _ in $(seq 100); do grep -q token= "$T/dash.out" && break; sleep 0.1; done
	URL=$(grep -o 'http://127.0.0.1:[0-9]*/?token=[0-9a-f]*' "$T/dash.out")
	BASE=${URL%/\?token=*} TOKEN=${URL##*token=}
	curl -s -N "$BASE/api/events?token=$TOKEN" >/dev/null &
	STREAM=$!
	if [ "${1:-}" = pics ]; then
		rm -f "$T/pics.job"
		(while :; do [ -s "$T/pics.job" ] &&
			curl -s -o /dev/null "$BASE/api/preview?job=$(cat "$T/pics.job")&token=$TOKEN"
			sleep 4; done) &
		PICS=$!
	fi
	for _ in $(seq 100); do
		[ "$(curl -s "$BASE/api/jobs?token=$TOKEN" | grep -o '"id"' | wc -l)" -ge "$((JOBS - 1))" ] && break
		sleep 0.2
	done
	sleep 2
}

: >"$T/times"
for r in $(seq "$ROUNDS"); do
	for mode in none dashboard dashboard+pictures; do
		# the dashboard first, settled (every job followed, its
		# history replayed), then the job it watches run
		case $mode in
		dashboard) start_dash ;;
		dashboard+pictures) start_dash pics ;;
		esac
		job=$("$CTL" submit -q --epochs "$EPOCHS" --width 16 --seed "$r" "$T/a.png")
		[ -n "$PICS" ] && echo "$job" >"$T/pics.job"
		t0=$(date +%s.%N)
		"$CTL" wait "$job" >/dev/null
		[ -n "$DASH" ] && echo "$t0 $(date +%s.%N)" >>"$T/dash_wall"
		stop_dash
		"$CTL" metrics --csv "$job" | awk -F, -v m="$mode" -v r="$r" 'NR > 1 && $3 > 10 { print m, r, $7 }' >>"$T/times"
		echo "round $r, $mode: job $job done" >&2
	done
done
echo "epoch time of a 16x16 job at width 16, $ROUNDS rounds of $EPOCHS epochs, $JOBS jobs in the daemon"
python3 - "$T/times" <<'EOF'
import statistics, sys
by, rounds = {}, {}
for line in open(sys.argv[1]):
    m, r, ms = line.split()
    by.setdefault(m, []).append(float(ms))
    rounds.setdefault(m, {}).setdefault(r, []).append(float(ms))
base = statistics.median(by["none"])
print("%-20s %7s %10s %8s %8s  %s" % ("mode", "epochs", "median ms", "mean ms",
                                     "vs none", "rounds' medians, min to max"))
for m in ("none", "dashboard", "dashboard+pictures"):
    v = by.get(m, [])
    if v:
        med = statistics.median(v)
        per = [statistics.median(x) for x in rounds[m].values()]
        print("%-20s %7d %10.2f %8.2f %+7.1f%%  %.2f to %.2f" % (
            m, len(v), med, statistics.mean(v), 100 * (med / base - 1),
            min(per), max(per)))
EOF
if [ -s "$T/dash_cpu" ]; then
	awk '{ s += $2 - $1 } END { printf "%.1f", s }' "$T/dash_wall" >"$T/wall"
	awk -v wall="$(cat "$T/wall")" '{ s += $1 } END {
		printf "the dashboard process: %.2f s of CPU in %.1f s of its jobs (%.1f%% of one core)\n", s, wall, 100 * s / wall }' "$T/dash_cpu"
fi
