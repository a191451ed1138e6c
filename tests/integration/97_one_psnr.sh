#!/bin/bash
# 97_one_psnr.sh - one PSNR everywhere: what list, show, wait, watch's
# last line, export and --json call the PSNR is that of the weights an
# export writes (a done job's exported model; a paused job's best model,
# never its last live epoch); the live figure is labelled live; metrics
# and plot carry the model's PSNR as a series of its own.
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
export VKINR_SOCKET=$SOCK
CTL=$BUILD/vkinrctl
"$MKSAMPLE" "$T/s.png" 24 24
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }

# jpath FILE EXPR: a value of the JSON in FILE (j), printed
jpath() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

job=$("$CTL" submit -q --epochs 60 --width 16 --seed 2 "$T/s.png")
"$CTL" watch "$job" >"$T/watch.txt"
"$CTL" wait "$job" >"$T/wait.txt"
"$CTL" export "$job" --model "$T/m.safetensors" --recon "$T/m.png" >"$T/export.txt"
"$CTL" --json show "$job" >"$T/show.json"
"$CTL" list >"$T/list.txt"
psnr=$(jpath "$T/show.json" '"%.2f" % j["psnr"]')
check "a done job: json psnr is the exported model's (model_psnr), live_psnr apart" \
	python3 -c "import json; j=json.load(open('$T/show.json'))
assert j['psnr'] == j['model_psnr'] == j['best_psnr'], j
assert isinstance(j['live_psnr'], float), j"
same_everywhere() {
	grep -q "(PSNR $psnr dB)" "$T/export.txt" &&
	grep -Eq "^job $job s: done at epoch 60/60, psnr $psnr dB$" "$T/wait.txt" &&
	tail -1 "$T/watch.txt" | grep -Eq "done at epoch 60/60, psnr $psnr dB$" &&
	grep -Eq "^$job +s +done .* $psnr " "$T/list.txt" &&
	"$CTL" show "$job" | grep -Eq "^  psnr +$psnr dB \(live [0-9.]+ dB\)$"
}
check "export, wait, watch's last line, list and show give one PSNR ($psnr)" \
	same_everywhere
check "no command names a second, best PSNR" \
	bash -c "! grep -i best '$T/wait.txt' '$T/watch.txt' '$T/list.txt'"

# a paused job: the best model's PSNR, not its last epoch's
"$CTL" metrics --csv "$job" >"$T/metrics.csv"
check "metrics: the model's psnr, never falling, and live_psnr as columns" \
	python3 -c "import csv
rows = list(csv.DictReader(open('$T/metrics.csv')))
p = [float(r['psnr']) for r in rows]; l = [float(r['live_psnr']) for r in rows]
assert len(rows) == 60 and p == sorted(p) and all(a >= b - 1e-9 for a, b in zip(p, l)), (p, l)"
"$CTL" --json metrics "$job" >"$T/metrics.json"
check "metrics --json: psnr and live_psnr in every row" \
	python3 -c "import json; h=json.load(open('$T/metrics.json'))['jobs'][0]['history']
assert len(h) == 60 and all('psnr' in r and 'live_psnr' in r for r in h)"
"$CTL" plot "$job" -o "$T/p.svg" >/dev/null
check "plot: the model's PSNR and the live PSNR each have a panel" \
	bash -c "grep -q '>psnr (dB)<' '$T/p.svg' && grep -q '>live psnr (dB)<' '$T/p.svg'"

slow=$("$CTL" submit -q --epochs 100000 --width 16 --seed 2 "$T/s.png")
for _ in $(seq 1 200); do
	"$CTL" --json show "$slow" >"$T/slow.json"
	[ "$(jpath "$T/slow.json" 'j["epoch"]')" -ge 30 ] && break
	sleep 0.05
done
"$CTL" pause "$slow" >/dev/null
"$CTL" --json show "$slow" >"$T/slow.json"
"$CTL" metrics --csv "$slow" >"$T/slow.csv"
check "a paused job's psnr is its best model's, live_psnr its last epoch's" \
	python3 -c "import csv, json
j = json.load(open('$T/slow.json'))
rows = list(csv.DictReader(open('$T/slow.csv')))
assert abs(j['psnr'] - max(float(r['psnr']) for r in rows)) < 1e-3, j
assert abs(j['live_psnr'] - float(rows[-1]['live_psnr'])) < 1e-3, j"
"$CTL" list --format id,psnr,live >"$T/list2.txt"
check "list: PSNR is the model's, LIVE the last epoch's" \
	python3 -c "import json
j = json.load(open('$T/slow.json'))
for line in open('$T/list2.txt'):
    f = line.split()
    if f[0] == '$slow':
        assert f[1] == '%.2f' % j['psnr'] and f[2] == '%.2f' % j['live_psnr'], f
        break
else:
    raise SystemExit('no row')"
"$CTL" cancel "$slow" >/dev/null
stop_daemon
tap_done
