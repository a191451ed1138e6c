#!/usr/bin/env python3
"""bench_precision.py - where an epoch's mean goes, and what each precision
gives at the end of a job.

Two parts, both through `vkinrd --fit ... --json -q`:

1. Timing (--time-image): each mode of --time-modes fitted alone, one
   after the other, for --time-epochs. For each it prints the median
   epoch, the mean (the training loop's wall time over its epochs: what a
   user waits for), and what the mean pays above the median: the epochs
   that evaluate the weight average, the fp32 tail of `auto`, the epoch
   that rebuilds the fit in fp32, and the first epoch.
2. Quality (--images): every image, epoch count (--epochs) and mode
   (--modes), run --jobs at a time (the PSNR does not depend on timing),
   printing the exported model's PSNR (rendered in fp32) beside fp32's.

A mode is fp32, fp16, auto, or auto:F (auto with the last fraction F of
the epochs in fp32, through VKINR_FP32_FINISH), optionally followed by
/N: the weight average evaluated every N epochs (VKINR_AVERAGE_EVERY;
--average-every N sets it for every run).

  --vkinrd PATH  (default build/vkinrd)
  --width N      (default 512)
  --extra "OPTS" more vkinrd options for every run
  --json FILE    every run's summary as JSON lines
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys


def run(vkinrd, image, width, epochs, mode, every, extra):
    env = dict(os.environ)
    if "/" in mode:
        mode, every = mode.split("/")
    precision = mode
    if mode.startswith("auto:"):
        precision, env["VKINR_FP32_FINISH"] = "auto", mode[5:]
    if every:
        env["VKINR_AVERAGE_EVERY"] = str(every)
    cmd = [vkinrd, "--fit", image, "--width", str(width), "--epochs",
           str(epochs), "--precision", precision, "--json", "-q"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench_precision: {' '.join(cmd)}: {p.stderr.strip()}")
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return [l for l in lines if "epoch" in l], lines[-1]


def timing(history, summary, epochs, finish):
    ms = [h["ms"] for h in history]
    med = statistics.median(ms[10:] if len(ms) > 20 else ms)
    mean = summary["ms_per_epoch_mean"]
    evals = [h["ms"] for h in history if "psnr_average" in h]
    tail_from = epochs - int(-(-epochs * finish // 1)) + 1 if finish else None
    tail = [h["ms"] for h in history
            if tail_from and h["epoch"] > tail_from and "psnr_average" not in h]
    switch = [h["ms"] for h in history if tail_from and h["epoch"] == tail_from]
    n = len(ms)
    return {
        "median": med, "mean": mean,
        "eval_excess_pct": 100 * sum(e - med for e in evals) / (n * med),
        "evals": len(evals),
        "eval_ms": statistics.median(evals) if evals else 0,
        "tail_excess_pct": 100 * sum(t - med for t in tail) / (n * med),
        "tail_ms": statistics.median(tail) if tail else 0,
        "switch_ms": switch[0] if switch else 0,
        "first_ms": ms[0],
        "psnr": summary["psnr"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vkinrd", default="build/vkinrd")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--time-image")
    ap.add_argument("--time-epochs", type=int, default=2000)
    ap.add_argument("--time-modes", default="fp16,auto")
    ap.add_argument("--images", default="")
    ap.add_argument("--epochs", default="400,2000")
    ap.add_argument("--modes", default="fp32,fp16,auto")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--average-every", type=int, default=0)
    ap.add_argument("--extra", default="")
    ap.add_argument("--json")
    a = ap.parse_args()
    extra = a.extra.split()
    out = open(a.json, "a") if a.json else None

    if a.time_image:
        print(f"timing: {a.time_image}, width {a.width}, {a.time_epochs} "
              "epochs, alone")
        print(f"{'mode':10} {'median':>7} {'mean':>7} {'mean/med':>8} "
              f"{'evals':>5} {'eval ms':>7} {'eval %':>6} {'tail ms':>7} "
              f"{'tail %':>6} {'switch':>7} {'first':>7} {'PSNR':>7}")
        for mode in a.time_modes.split(","):
            h, s = run(a.vkinrd, a.time_image, a.width, a.time_epochs, mode,
                       a.average_every, extra)
            base = mode.split("/")[0]
            finish = (float(base[5:]) if base.startswith("auto:") else
                      0.1 if base == "auto" else 0)
            t = timing(h, s, a.time_epochs, finish)
            if out:
                out.write(json.dumps({"part": "timing", "mode": mode, **t,
                                      "summary": s}) + "\n")
                out.flush()
            print(f"{mode:10} {t['median']:7.2f} {t['mean']:7.2f} "
                  f"{t['mean'] / t['median']:8.3f} {t['evals']:5d} "
                  f"{t['eval_ms']:7.2f} {t['eval_excess_pct']:6.2f} "
                  f"{t['tail_ms']:7.2f} {t['tail_excess_pct']:6.2f} "
                  f"{t['switch_ms']:7.1f} {t['first_ms']:7.1f} "
                  f"{t['psnr']:7.2f}", flush=True)

    images = [i for i in a.images.split(",") if i]
    if not images:
        return
    modes = a.modes.split(",")
    epochs = [int(e) for e in a.epochs.split(",")]
    work = [(i, e, m) for i in images for e in epochs for m in modes]
    done = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(run, a.vkinrd, w[0], a.width, w[1], w[2],
                               a.average_every, extra): w for w in work}
        for f in concurrent.futures.as_completed(futures):
            w = futures[f]
            done[w] = f.result()[1]
            if out:  # as each ends, so that a cut run keeps what it had
                out.write(json.dumps({"part": "quality", "image": w[0],
                                      "epochs": w[1], "mode": w[2],
                                      "psnr": done[w]["psnr"]}) + "\n")
                out.flush()
    print(f"\nquality: width {a.width}, the exported model's PSNR "
          "(fp32 render); in brackets the difference from fp32")
    print(f"{'image':28} {'epochs':>6} " +
          " ".join(f"{m:>16}" for m in modes))
    for i in images:
        for e in epochs:
            ref = done[(i, e, "fp32")]["psnr"] if "fp32" in modes else None
            cells = []
            for m in modes:
                p = done[(i, e, m)]["psnr"]
                cells.append(f"{p:7.2f} ({p - ref:+6.2f})" if ref
                             else f"{p:16.2f}")
            print(f"{os.path.basename(i)[-28:]:28} {e:6d} " + " ".join(
                f"{c:>16}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
