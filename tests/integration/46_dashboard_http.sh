#!/bin/bash
# 46_dashboard_http.sh - `vkinrctl dashboard` at the HTTP level (curl),
# against the real daemon: the page and Chart.js are served with the token
# only; a wrong token, a foreign Host (DNS rebinding), a foreign Origin, a
# POST with the token outside its header, a GET to a POST route and a large
# body are refused; no CORS header is ever sent; another uid is refused
# even with the token; pause and resume go through the daemon; the jobs
# and their epochs are there as JSON and as an event stream; streams that
# leave mid-way cost nothing; a daemon restart is said and then followed
# again, as is a failed job that is resumed; SIGTERM ends it with exit 0. The browser's side is
# 47_dashboard_browser.sh.
# run.sh: long
. "$(dirname "$0")/lib.bash"
tap_plan 27
need_device
CTL=$BUILD/vkinrctl
if ! command -v curl >/dev/null; then
	for i in $(seq 1 "$TAP_PLAN"); do echo "ok $i # SKIP no curl"; done
	exit 0
fi
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
export VKINR_SOCKET=$SOCK
"$MKSAMPLE" "$T/a.png" 16 16 >/dev/null
JOB=$("$CTL" submit -q --epochs 100000 --width 16 "$T/a.png")

start_dashboard
WRONG=$(echo "$TOKEN" | tr 0-9a-f 1-9a-f0)

code() { curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' "$@"; }
is() { local want=$1; shift; local got; got=$(code "$@"); [ "$got" = "$want" ] || { echo "got $got"; cat "$T/body"; return 1; }; }

check "it prints a URL on 127.0.0.1 with a token" test -n "$TOKEN"
check "the page without the token: 403" is 403 "$BASE/"
check "... with a wrong token of the same length: 403" is 403 "$BASE/?token=$WRONG"
check "... with the token: 200, its links carry the token" \
	eval 'is 200 "$URL" && grep -q "chart.js?token=$TOKEN" "$T/body"'
check "Chart.js is Debian's, served from the program" \
	eval 'is 200 "$BASE/chart.js?token=$TOKEN" && cmp "$T/body" /usr/share/javascript/chart.js/chart.min.js'
check "no CORS header, a CSP and nosniff" \
	eval '! grep -qi "^access-control" "$T/headers" && grep -qi "^content-security-policy:.*default-src .none." "$T/headers" && grep -qi "^x-content-type-options: nosniff" "$T/headers"'
check "a Host that is not the loopback (DNS rebinding): 403" \
	is 403 -H "Host: evil.example:${BASE##*:}" "$BASE/api/jobs?token=$TOKEN"
check "an Origin of another site: 403" \
	is 403 -H "Origin: http://evil.example" "$BASE/api/jobs?token=$TOKEN"
check "... and Sec-Fetch-Site cross-site: 403" \
	is 403 -H "Sec-Fetch-Site: cross-site" "$BASE/api/jobs?token=$TOKEN"
check "localhost as the Host, with its own Origin: 200" \
	is 200 -H "Host: localhost:9999" -H "Origin: http://localhost:9999" "$BASE/api/jobs?token=$TOKEN"
check "POST with the token in the query only: 403" \
	is 403 -X POST "$BASE/api/pause?job=$JOB&token=$TOKEN"
check "GET of a POST route: 405" \
	is 405 -H "X-Vkinr-Token: $TOKEN" "$BASE/api/pause?job=$JOB"
head -c 100000 /dev/zero >"$T/big"
check "a body over the limit: 413" \
	is 413 -X POST -H "X-Vkinr-Token: $TOKEN" --data-binary @"$T/big" "$BASE/api/pause?job=$JOB"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
	nobody() { runuser -u nobody -- curl -s -o /dev/null -w '%{http_code}' "$@"; }
	check "another uid without the token: 403" eval '[ "$(nobody "$BASE/")" = 403 ]'
	check "another uid with the token: 403 all the same" eval '[ "$(nobody "$URL")" = 403 ]'
else
	skip "another uid: needs root and runuser"
	skip "another uid: needs root and runuser"
fi

# the jobs and their epochs
for _ in $(seq 300); do
	curl -s "$BASE/api/history?job=$JOB&token=$TOKEN" | grep -q '"epoch":\[1,2,3' && break
	sleep 0.1
done
n_points() { curl -s "$BASE/api/history?job=$JOB&token=$TOKEN" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["epoch"]))'; }
n1=$(n_points); sleep 1.5; n2=$(n_points)
check "the job's epochs are there and grow ($n1, then $n2)" test "$n2" -gt "$n1"
# streams that go away mid-way, ten of them
for _ in $(seq 10); do curl -s -N --max-time 0.5 "$BASE/api/events?token=$TOKEN" >/dev/null; done
timeout 3 curl -s -N "$BASE/api/events?token=$TOKEN" >"$T/events" 2>/dev/null
check "after ten streams that left: a stream replays the history, then progress" \
	eval 'grep -q "^event: reset" "$T/events" && grep -q "^event: history" "$T/events" && grep -q "^event: progress" "$T/events"'

# pause and resume, through the daemon as this user
check "POST pause with the token header: 200, paused" \
	eval 'is 200 -X POST -H "X-Vkinr-Token: $TOKEN" "$BASE/api/pause?job=$JOB" && grep -q "\"state\":\"paused\"" "$T/body"'
check "... the daemon says paused" eval '"$CTL" show "$JOB" | grep -q paused'
check "POST resume: running again" \
	eval 'is 200 -X POST -H "X-Vkinr-Token: $TOKEN" "$BASE/api/resume?job=$JOB" && grep -q "\"state\":\"queued\|\"state\":\"running" "$T/body"'

# a daemon restart, with a stream open across it
curl -s -N --max-time 120 "$BASE/api/events?token=$TOKEN" >"$T/restart" 2>/dev/null &
STREAM=$!
sleep 1
stop_daemon
gone=
for _ in $(seq 100); do
	curl -s "$BASE/api/jobs?token=$TOKEN" | grep -q '"connected":false' && { gone=1; break; }
	sleep 0.1
done
check "with the daemon gone it says so, and still serves" test -n "$gone"
start_daemon
back=
for _ in $(seq 300); do
	curl -s "$BASE/api/jobs?token=$TOKEN" | grep -q '"connected":true' && { back=1; break; }
	sleep 0.1
done
# the stream said the daemon was gone, then carried the job's epochs again
restart_seen() {
	python3 - "$1" <<'EOF'
import sys
text = open(sys.argv[1]).read()
gone = text.find('"connected":false')
assert gone >= 0 and "event: progress" in text[gone:], text[-300:]
EOF
}
# until an epoch came after the restart (a loaded sanitizer build takes
# seconds to load the job again), 60 s at most
for _ in $(seq 600); do
	restart_seen "$T/restart" 2>/dev/null && break
	sleep 0.1
done
kill "$STREAM" 2>/dev/null
wait "$STREAM" 2>/dev/null
check "after the restart it follows the daemon again, the stream too" \
	eval '[ -n "$back" ] && restart_seen "$T/restart"'

check "POST cancel: cancelled" \
	eval 'is 200 -X POST -H "X-Vkinr-Token: $TOKEN" "$BASE/api/cancel?job=$JOB" && grep -q "\"state\":\"cancelled\"" "$T/body"'
check "... resuming it now: 409, the daemon's refusal in words" \
	eval 'is 409 -X POST -H "X-Vkinr-Token: $TOKEN" "$BASE/api/resume?job=$JOB" && grep -q "\"code\":-32002" "$T/body"'

# a job that fails (a device lost, again and again: VKINR_FAULT) and is
# resumed runs again on the same connection: it is followed again
stop_daemon
VKINR_FAULT=device_lost:100 VKINRD_CHECKPOINT_EPOCHS=5 start_daemon
FAILS=$("$CTL" submit -q --epochs 100000 --width 16 "$T/a.png")
for _ in $(seq 600); do
	curl -s "$BASE/api/jobs?token=$TOKEN" | python3 -c '
import json, sys
jobs = {j["id"]: j for j in json.load(sys.stdin)["jobs"]}
sys.exit(jobs.get(sys.argv[1], {}).get("state") != "failed")' "$FAILS" && break
	sleep 0.1
done
last_epoch() { curl -s "$BASE/api/history?job=$FAILS&token=$TOKEN" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"][-1])'; }
e1=$(last_epoch)
curl -s -o /dev/null -X POST -H "X-Vkinr-Token: $TOKEN" "$BASE/api/resume?job=$FAILS"
e2=$e1
for _ in $(seq 200); do e2=$(last_epoch); [ "$e2" -gt "$e1" ] && break; sleep 0.1; done
check "a failed job resumed is followed again (epoch $e1, then $e2)" test "$e2" -gt "$e1"

kill -TERM "$DASH"
wait "$DASH"
check "SIGTERM: exit 0 (no leak under the sanitizer)" eval "[ $? = 0 ] || { cat '$T/dash.err'; false; }"
check "--port out of range: usage error" eval '"$CTL" dashboard --port 70000 2>/dev/null; [ $? = 2 ]'
tap_done
