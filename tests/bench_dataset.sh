#!/bin/bash
# bench_dataset.sh BUILD - fitting a dataset (`make bench-dataset`): N
# images of SIZE x SIZE at WIDTH, EPOCHS each, the default recipe, in one
# run side by side:
#   engine     `vkinrd --fit DIR --out OUT` (packs sized by the device)
#   daemon     the real daemon and client: `vkinrctl submit DIR --wait`,
#              with the median fixed cost of a job (submission to first
#              epoch, last epoch to done) from the daemon's records
#   alone      the same engine one image at a time (--pack 1), on the
#              first ALONE images
#   peer       PyTorch fitting the images as one batched program
#              (PEER=path/to/torch_convsiren_grouped.py, PEER_N at once)
# Each prints one line: images/s, mean and worst PSNR, TFLOP/s achieved.
# The images come from DATA (a folder of PNGs), else crops of Debian's
# wallpapers (tests/mkdataset.py). MODES picks the runs (default: all).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${N:-256} size=${SIZE:-32} width=${WIDTH:-32} epochs=${EPOCHS:-300}
alone=${ALONE:-8} modes=${MODES:-engine daemon alone peer}
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
daemon=
trap '[ -n "$daemon" ] && kill -TERM $daemon 2>/dev/null; rm -rf "$t"' EXIT

data=${DATA:-}
if [ -z "$data" ]; then
	data=$t/data
	/usr/bin/python3 "$here/mkdataset.py" "$data" "$n" "$size"
fi
mkdir -p "$t/in" "$t/one"
# the first n (and ALONE) images, linked (no pipes: pipefail and SIGPIPE)
files=("$data"/*.png)
for f in "${files[@]:0:$n}"; do ln -s "$(readlink -f "$f")" "$t/in/"; done
for f in "${files[@]:0:$alone}"; do ln -s "$(readlink -f "$f")" "$t/one/"; done
count=$(ls "$t/in" | wc -l)
echo "dataset: $count images of ${size}x${size}, width $width, $epochs epochs" \
	"on $("$build/vkinrd" --devices | head -1)"

# warm-up: a small pack of the same images, so that the driver has
# compiled the packed pipelines (made at a pack's first step) before any
# mode is timed (WARM=0 leaves it out)
if [ "${WARM:-1}" = 1 ]; then
	mkdir -p "$t/warm"
	for f in "${files[@]:0:4}"; do ln -s "$(readlink -f "$f")" "$t/warm/"; done
	"$build/vkinrd" --fit "$t/warm" --out "$t/out-warm" --width "$width" \
		--epochs 3 -q >/dev/null 2>&1 || true
fi

summary() { # the engine's summary line -> one line of figures
	python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin if "\"images_per_s\"" in l][-1]
print("%-8s %5d images  %8.2f images/s  %7.2f s  mean %.2f dB  worst %.2f  %.2f TFLOP/s  pack %d  (build %.1f s, epochs %.1f s, outputs %.1f s)" % (
    sys.argv[1], r["images"], r["images_per_s"], r["seconds"], r["mean_psnr"],
    r["worst_psnr"], r["tflops"], r["pack"], r["join_s"], r["step_s"], r["finish_s"]))
# the host time of a job, where the build says it
n = max(r["images"], 1)
if "buffers_s" in r:
    print("         a job: decode %.2f ms, buffers %.2f ms, programs %.2f ms, "
          "precision change %.2f ms, outputs %.2f ms; epochs %.2f ms" % tuple(
              1e3 * r[k] / n for k in ("decode_s", "buffers_s", "programs_s",
                                      "switch_s", "finish_s", "step_s")))
# a pack epoch (--timings): the host clock, the GPU passes, the phases
if "pack_epoch_ms" in r:
    print("         a pack epoch: %.2f ms on the host clock, %.2f ms of GPU passes (%s); phases %s" % (
        r["pack_epoch_ms"], r["pack_gpu_ms"],
        ", ".join("%s %.2f" % kv for kv in r["pass_ms"].items() if kv[1] > 0),
        ", ".join("%s %.2f" % kv for kv in r.get("phase_ms", {}).items())))' "$1"
}

for mode in $modes; do
	case $mode in
	engine)
		"$build/vkinrd" --fit "$t/in" --out "$t/out-engine" --width "$width" \
			--epochs "$epochs" --json --timings -q ${PACK:+--pack $PACK} |
			summary engine ;;
	alone)
		"$build/vkinrd" --fit "$t/one" --out "$t/out-alone" --width "$width" \
			--epochs "$epochs" --json -q --pack 1 | summary alone ;;
	daemon)
		sock=$t/sock
		"$build/vkinrd" --socket "$sock" --state-dir "$t/state" \
			${PACK:+--pack $PACK} 2>"$t/daemon.log" &
		daemon=$!
		for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
		"$build/vkinrctl" --socket "$sock" status >/dev/null
		start=$(date +%s.%N)
		"$build/vkinrctl" --socket "$sock" submit "$t/in" --width "$width" \
			--epochs "$epochs" --wait -q >/dev/null
		end=$(date +%s.%N)
		"$build/vkinrctl" --socket "$sock" --json list >"$t/list.json"
		python3 - "$t/list.json" "$start" "$end" "$t/state/jobs" <<'PY'
import json, os, sys
data = json.load(open(sys.argv[1]))
jobs = data["jobs"] if isinstance(data, dict) else data
secs = float(sys.argv[3]) - float(sys.argv[2])
done = [j for j in jobs if j.get("state") == "done"]
ps = [j.get("psnr") or 0 for j in done]
print("%-8s %5d images  %8.2f images/s  %7.2f s  mean %.2f dB  worst %.2f" % (
    "daemon", len(done), len(done) / secs, secs, sum(ps) / max(len(ps), 1),
    min(ps) if ps else 0))
# the epochs' own time of each job, from its records; the job whose
# epochs took longest was in the pack throughout, so the rest of the run
# is what the daemon spent besides training: its cost a job
trained = []
for j in done:
    path = os.path.join(sys.argv[4], j["id"], "metrics.ndjson")
    try:
        trained.append(sum(json.loads(l).get("ms", 0) for l in open(path)) / 1e3)
    except OSError:
        pass
if trained and done:
    most = max(trained)
    print("         epochs %.2f s (the longest job's), the rest %.2f s: %.2f ms a job" % (
        most, secs - most, 1e3 * (secs - most) / len(done)))
# when the jobs were stored, began and ended (the daemon's clock)
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")
times = [(j["created"], j["started"], j["finished"]) for j in done
         if all(isinstance(j.get(k), (int, float)) for k in ("created", "started", "finished"))]
if times:
    c0 = min(t[0] for t in times)
    print("         submitted over %.2f s; first start %.2f s, last start %.2f s, "
          "last end %.2f s after the first submission; median wait to start %.1f ms" % (
              max(t[0] for t in times) - c0, min(t[1] for t in times) - c0,
              max(t[1] for t in times) - c0, max(t[2] for t in times) - c0,
              1e3 * median([t[1] - t[0] for t in times])))
PY
		grep -E "fixed cost|pack of" "$t/daemon.log" | tail -3 || true
		# the CPU seconds of the daemon's threads (the loop is the
		# process's first thread): who was busy
		python3 - "$daemon" <<'PY' || true
import os, sys
pid, tick = sys.argv[1], os.sysconf("SC_CLK_TCK")
rows = []
for tid in sorted(os.listdir("/proc/%s/task" % pid), key=int):
    try:
        stat = open("/proc/%s/task/%s/stat" % (pid, tid)).read()
    except OSError:
        continue
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    f = stat[stat.rindex(")") + 2:].split()
    cpu = (int(f[11]) + int(f[12])) / tick
    rows.append(("loop" if tid == pid else name, cpu))
print("         CPU seconds by thread: " + ", ".join(
    "%s %.2f" % r for r in rows if r[1] >= 0.01 or r[0] == "loop"))
PY
		kill -TERM $daemon; wait $daemon 2>/dev/null || true; daemon= ;;
	peer)
		[ -n "${PEER:-}" ] || { echo "peer     skipped (PEER=path/to/torch_convsiren_grouped.py)"; continue; }
		python3 "$PEER" --images "$t/in" --n "${PEER_N:-$count}" --nf "$width" \
			--epochs "$epochs" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read().strip().splitlines()[-1])
print("%-8s %5d images  %8.2f images/s  %7.2f s  mean %.2f dB  worst %.2f  (%.3f ms an epoch)" % (
    "peer", r["n"], r["images_per_s"], r["total_s"], r["psnr_mean"], r["psnr_min"],
    r["ms_per_epoch_median"]))' ;;
	esac
done
