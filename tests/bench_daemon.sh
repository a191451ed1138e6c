#!/bin/bash
# bench_daemon.sh BUILD - what the daemon costs, for issue 3's figures:
#  1. the same fit through `vkinrd --fit` and through the daemon, alone and
#     with 50 clients watching it (median epoch time, and epochs per second
#     of running time, which includes the daemon's checkpoints and metrics,
#     and the mean epoch that gives);
#  2. the daemon's memory (VmRSS) before and after 1000 connections that
#     connect, say hello and leave, and after a job with a 100k-epoch
#     history has run and been replayed to a subscriber.
#   SIZE (256), WIDTH (default of the device), EPOCHS (300),
#   LONG_EPOCHS (100000) for the history job (8x8 pixels, width 16).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
size=${SIZE:-256} epochs=${EPOCHS:-300} long=${LONG_EPOCHS:-100000}
width=(${WIDTH:+--width $WIDTH})
t=$(mktemp -d)
sock=$t/sock
daemon=
trap '[ -n "$daemon" ] && { kill -TERM $daemon; wait $daemon; } 2>/dev/null; rm -rf "$t"' EXIT
ctl() { "$build/vkinrctl" --socket "$sock" "$@"; }
median_ms() { # NDJSON on stdin: the median "ms" of epochs after the 10th
	python3 -c '
import json, sys
ms = [json.loads(l)["ms"] for l in sys.stdin if "\"epoch\"" in l and "\"done\"" not in l]
ms = sorted(ms[10:] or ms)
print("%.3f" % ms[len(ms) // 2])'
}
rss() { awk '/VmRSS/ {print $2}' /proc/$daemon/status; }

"$build/tools/mksample" "$t/img.png" "$size" "$size" 1
"$build/tools/mksample" "$t/tiny.png" 8 8 2

fit_json=$("$build/vkinrd" --fit "$t/img.png" --yes --epochs "$epochs" "${width[@]}" --json -q)
fit_ms=$(echo "$fit_json" | median_ms)
fit_eps=$(echo "$fit_json" | tail -1 | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.2f" % (r["epochs"] / r["seconds"]))')

"$build/vkinrd" --socket "$sock" --state-dir "$t/state" 2>"$t/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done

# one job through the daemon, with `watchers` extra clients watching it
through_daemon() {
	local watchers=$1 id pids=()
	id=$(ctl submit "$t/img.png" --epochs "$epochs" "${width[@]}" -q)
	for _ in $(seq "$watchers"); do ctl --json watch "$id" >/dev/null 2>&1 & pids+=($!); done
	ctl --json watch "$id" >"$t/watch.ndjson" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	local ms eps
	ms=$(grep '"job.progress"' "$t/watch.ndjson" | median_ms)
	eps=$(ctl --json show "$id" | python3 -c 'import json,sys; j=json.load(sys.stdin); j=j.get("job", j); print("%.2f" % (j["epoch"] / j["seconds"]))')
	echo "$ms $eps"
}
read -r d0_ms d0_eps < <(through_daemon 0)
read -r d50_ms d50_eps < <(through_daemon 50)

rss_start=$(rss)
python3 - "$sock" <<'PY'
import socket, sys
for _ in range(1000):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"hello"}\n')
    s.recv(65536)
    s.close()
PY
rss_connects=$(rss)
id=$(ctl submit "$t/tiny.png" --epochs "$long" --width 16 -q)
ctl wait "$id" >/dev/null
rss_history=$(rss)
ctl --json watch "$id" | grep -c '"job.progress"' >"$t/replayed" || true
rss_replay=$(rss)

python3 - <<PY
import json
r = {"device": "$("$build/vkinrd" --devices | head -1)", "size": $size, "epochs": $epochs,
     "fit_ms": $fit_ms, "daemon_ms": $d0_ms, "daemon_50_watchers_ms": $d50_ms,
     "fit_epochs_per_s": $fit_eps, "daemon_epochs_per_s": $d0_eps,
     "daemon_50_watchers_epochs_per_s": $d50_eps,
     "rss_kib": {"start": $rss_start, "after_1000_connects": $rss_connects,
                 "after_${long}_epoch_job": $rss_history, "after_replay": $rss_replay},
     "replayed_epochs": int(open("$t/replayed").read() or 0)}
# the mean epoch a user waits for: the running time over the epochs
for k in ("fit", "daemon", "daemon_50_watchers"):
    r[k + "_mean_ms"] = round(1e3 / r[k + "_epochs_per_s"], 3)
print(json.dumps(r))
print("epoch ms, median / mean: --fit %.2f / %.2f, daemon %.2f / %.2f, "
      "daemon with 50 watchers %.2f / %.2f" % (
          r["fit_ms"], r["fit_mean_ms"], r["daemon_ms"], r["daemon_mean_ms"],
          r["daemon_50_watchers_ms"], r["daemon_50_watchers_mean_ms"]))
print("daemon vs --fit: median epoch %+.1f%%, throughput %+.1f%%" % (
    100 * (r["daemon_ms"] / r["fit_ms"] - 1), 100 * (r["fit_epochs_per_s"] / r["daemon_epochs_per_s"] - 1)))
print("50 watchers vs none: median epoch %+.1f%%, throughput %+.1f%%" % (
    100 * (r["daemon_50_watchers_ms"] / r["daemon_ms"] - 1),
    100 * (r["daemon_epochs_per_s"] / r["daemon_50_watchers_epochs_per_s"] - 1)))
PY
