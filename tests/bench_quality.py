#!/usr/bin/env python3
"""bench_quality.py - the benchmark behind `make bench-quality`: which
training recipe gives the best picture for the epochs and the seconds spent.

It fits real photographs (Debian's plasma-workspace-wallpapers, centre
cropped and downscaled to --size, installed when missing and run as root)
with each candidate recipe at each width, reads vkinrd's per-epoch JSON
lines and prints two tables of PSNR, averaged over the images: at fixed
epochs, and at fixed seconds of training (the best PSNR reached by then).
The recipe the defaults give is named "default"; the others spell out their
options, so a table row says exactly what ran.

  --vkinrd PATH      the vkinrd binary (default build/vkinrd)
  --widths LIST      e.g. 16,32,64 (default 16,32,64,128,256,512)
  --epochs LIST      epochs to report; the largest is the run's length
  --seconds LIST     seconds to report (default: none on a CPU device)
  --images LIST      wallpaper names (default FallenLeaf,Path,BytheWater,
                     ColorfulCups)
  --size N           photos are N x N (default 512)
  --recipes LIST     recipe names (see RECIPES; default: CANDIDATES)
  --jobs N           fits run at once (default 1: timings stay honest)
  --json FILE        also write every run's summary as JSON lines

The photos are decoded with PIL (Debian's python3-pil); when the running
interpreter lacks it the script starts again under /usr/bin/python3.
"""
import argparse
import concurrent.futures
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

# name -> vkinrd options. "default" must stay empty: it is what a user gets.
def recipe(optimizer, schedule, lr, average="none", *more):
    return ["--optimizer", optimizer, "--schedule", schedule, "--lr", lr,
            "--average", average, "--warmup", "50", "--plateau", "0",
            "--lr-min", "0.1"] + list(more)


RECIPES = {
    "default": [],
    "adam-const-1e-4": recipe("adam", "constant", "1e-4"),
    "adam-const-1e-3": recipe("adam", "constant", "1e-3"),
    "adam-cos-1e-3": recipe("adam", "cosine", "1e-3"),
    "adam-cos-3e-3": recipe("adam", "cosine", "3e-3"),
    "adam-cos-3e-3-ema": recipe("adam", "cosine", "3e-3", "ema"),
    "adam-lin-3e-3": recipe("adam", "linear", "3e-3"),
    "muon-cos-1e-3": recipe("muon", "cosine", "1e-3"),
    "muon-cos-3e-3": recipe("muon", "cosine", "3e-3"),
    "muon-cos-3e-3-ema": recipe("muon", "cosine", "3e-3", "ema"),
    "muon-cos-1e-2": recipe("muon", "cosine", "1e-2"),
    "muon-cos-2e-3-ema": recipe("muon", "cosine", "2e-3", "ema"),
    "muon-cos-3e-3-ema-w10": recipe("muon", "cosine", "3e-3", "ema",
                                    "--warmup", "10"),
    "muon-cos-2e-3-ema-w10": recipe("muon", "cosine", "2e-3", "ema",
                                    "--warmup", "10"),
    "muon-lin-3e-3-ema-w10": recipe("muon", "linear", "3e-3", "ema",
                                    "--warmup", "10"),
    # the default's loss changed: the MSE alone, or with one other term
    # (the default adds chroma 0.5)
    "default-mse": ["--chroma", "0"],
    "default-ssim-0.02": ["--chroma", "0", "--ssim", "0.02"],
    "default-ssim-0.1": ["--chroma", "0", "--ssim", "0.1"],
    "default-grad-0.5": ["--chroma", "0", "--grad", "0.5"],
    "default-chroma-1": ["--chroma", "1"],
    # the default's learning rate scaled, at each width (a recipe may be a
    # function of the width), and its warmup lengthened
    "default-lr-x0.5": lambda w: ["--lr", f"{0.5 * default_lr(w):.6g}"],
    "default-lr-x1.5": lambda w: ["--lr", f"{1.5 * default_lr(w):.6g}"],
    "default-lr-x2": lambda w: ["--lr", f"{2 * default_lr(w):.6g}"],
    "default-w50": ["--warmup", "50"],
    "default-lr-x2-w50": lambda w: ["--lr", f"{2 * default_lr(w):.6g}",
                                    "--warmup", "50"],
}


def default_lr(width):
    """vkinrd's default peak learning rate at a width (nn_default_lr)."""
    measured = [(16, 6e-3), (32, 6e-3), (64, 6e-3 * 0.5 ** 0.5), (128, 3e-3),
                (256, 1.5e-3 * 3 * 0.5 ** 0.5 / 2), (512, 7.5e-4)]
    if width <= measured[0][0]:
        return measured[0][1]
    for (w0, r0), (w1, r1) in zip(measured, measured[1:]):
        if width <= w1:
            t = math.log(width / w0) / math.log(w1 / w0)
            return math.exp(math.log(r0) + t * math.log(r1 / r0))
    return measured[-1][1] * measured[-1][0] / width


def recipe_options(name, width):
    options = RECIPES[name]
    return options(width) if callable(options) else options
# what runs when --recipes is not given: the default against the
# alternatives it was chosen over
CANDIDATES = ["default", "adam-const-1e-4", "adam-const-1e-3",
              "adam-cos-1e-3", "adam-cos-3e-3", "muon-cos-1e-3",
              "muon-cos-3e-3-ema", "muon-cos-2e-3-ema-w10"]
IMAGES = ["FallenLeaf", "Path", "BytheWater", "ColorfulCups"]
# VKINR_WALLPAPERS: another folder laid out the same (a copy taken to a
# machine without the package)
WALLPAPERS = os.environ.get("VKINR_WALLPAPERS", "/usr/share/wallpapers")


def ints(text):
    return [int(x) for x in text.split(",") if x]


def floats(text):
    return [float(x) for x in text.split(",") if x]


def ensure_pil():
    try:
        import PIL  # noqa: F401
        return
    except ImportError:
        pass
    system = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(system) and \
            os.path.exists(system) and subprocess.call(
                [system, "-c", "import PIL"], stderr=subprocess.DEVNULL) == 0:
        os.execv(system, [system] + sys.argv)
    apt_install("python3-pil")
    if os.path.realpath(sys.executable) != os.path.realpath(system):
        os.execv(system, [system] + sys.argv)


def apt_install(package):
    if os.geteuid() != 0:
        sys.exit(f"bench-quality: needs Debian's {package}: "
                 f"sudo apt-get install {package}")
    print(f"bench-quality: installing {package}", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.call(["apt-get", "install", "-y", "-qq",
                        "--no-install-recommends", package], env=env) != 0:
        subprocess.check_call(["apt-get", "update", "-qq"], env=env)
        subprocess.check_call(["apt-get", "install", "-y", "-qq",
                               "--no-install-recommends", package], env=env)


def photo(name, size, folder):
    """The wallpaper's smallest picture that covers size, centre cropped to
    a square and downscaled to size x size, as a PNG."""
    from PIL import Image
    files = glob.glob(f"{WALLPAPERS}/{name}/contents/images/*.jpg")
    if not files:
        apt_install("plasma-workspace-wallpapers")
        files = glob.glob(f"{WALLPAPERS}/{name}/contents/images/*.jpg")
    if not files:
        sys.exit(f"bench-quality: no wallpaper named {name} in {WALLPAPERS}")

    def short_side(path):
        w, h = os.path.basename(path).split(".")[0].split("x")
        return min(int(w), int(h))
    big = [f for f in files if short_side(f) >= size]
    path = min(big, key=short_side) if big else max(files, key=short_side)
    im = Image.open(path).convert("RGB")
    w, h = im.size
    s = min(w, h)
    im = im.crop(((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s))
    out = os.path.join(folder, f"{name}_{size}.png")
    im.resize((size, size), Image.LANCZOS).save(out)
    return out


def fit(vkinrd, image, width, epochs, recipe):
    cmd = [vkinrd, "--fit", image, "--width", str(width), "--epochs",
           str(epochs), "--json", "-q"] + recipe_options(recipe, width)
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return {"error": run.stderr.strip().splitlines()[-1:] or ["failed"],
                "cmd": " ".join(cmd)}
    lines = [json.loads(l) for l in run.stdout.splitlines() if l.strip()]
    history = [l for l in lines if "epoch" in l]
    summary = lines[-1]
    # the first epoch pays for pipeline compiles: time it as the median
    ms = sorted(l["ms"] for l in history)
    median = ms[len(ms) // 2] if ms else 0
    clock, curve = 0.0, []
    for i, l in enumerate(history):
        clock += (median if i == 0 else l["ms"]) / 1e3
        # what is reported and exported: the best model so far (older
        # vkinrd: the better of the live and averaged weights)
        curve.append((l["epoch"], clock, l.get("psnr_best", max(
            l["psnr"], l.get("psnr_average", 0)))))
    return {"curve": curve, "summary": summary}


def at_epoch(curve, epoch):
    for e, _, p in curve:
        if e == epoch:
            return p
    return float("nan")


def at_seconds(curve, seconds):
    best = float("nan")
    for _, t, p in curve:
        if t > seconds:
            break
        best = p if best != best or p > best else best
    return best


def mean(values):
    values = [v for v in values if v == v]
    return sum(values) / len(values) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vkinrd", default="build/vkinrd")
    ap.add_argument("--widths", type=ints, default=[16, 32, 64, 128, 256, 512])
    ap.add_argument("--epochs", type=ints, default=[100, 300, 1000])
    ap.add_argument("--seconds", type=floats, default=None)
    ap.add_argument("--images", default=",".join(IMAGES))
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--recipes", default=",".join(CANDIDATES))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    recipes = [r for r in args.recipes.split(",") if r]
    for r in recipes:
        if r not in RECIPES:
            sys.exit(f"bench-quality: unknown recipe {r}; known: "
                     + ", ".join(RECIPES))
    if not os.access(args.vkinrd, os.X_OK):
        sys.exit(f"bench-quality: {args.vkinrd} is not an executable "
                 "(build it, or pass --vkinrd PATH)")
    ensure_pil()
    folder = tempfile.mkdtemp(prefix="bench-quality-")
    try:
        images = [photo(n, args.size, folder) for n in args.images.split(",")]
        run_all(args, recipes, images)
    finally:
        shutil.rmtree(folder)


def run_all(args, recipes, images):
    epochs = max(args.epochs)
    jobs = [(w, r, img) for w in args.widths for r in recipes for img in images]
    results = {}
    out = open(args.json, "w") if args.json else None
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(fit, args.vkinrd, img, w, epochs, r): (w, r, img)
                   for w, r, img in jobs}
        for f in concurrent.futures.as_completed(futures):
            w, r, img = futures[f]
            res = f.result()
            results[(w, r, img)] = res
            name = os.path.basename(img)
            if "error" in res:
                print(f"bench-quality: width {w} {r} {name}: "
                      f"{res['error'][0]}", file=sys.stderr)
                continue
            last = res["curve"][-1]
            print(f"  width {w:4} {r:22} {name:22} {last[2]:6.2f} dB "
                  f"{last[1]:7.1f} s", file=sys.stderr)
            if out:
                out.write(json.dumps({"width": w, "recipe": r, "image": name,
                                      "curve": res["curve"]}) + "\n")
    if out:
        out.close()
    seconds = args.seconds
    if seconds is None:
        # a tenth, a third and all of the default recipe's median run time
        t = mean([res["curve"][-1][1] for res in results.values()
                  if "curve" in res])
        seconds = [round(t * f, 1) for f in (0.1, 0.33, 1.0)] if t == t else []
    print_table("PSNR (dB) after N epochs, mean over "
                f"{len(images)} photos of {args.size}x{args.size}",
                args, recipes, images, results,
                [(f"{e} ep", lambda c, e=e: at_epoch(c, e)) for e in args.epochs])
    print_table("best PSNR (dB) within N seconds of training",
                args, recipes, images, results,
                [(f"{s:g} s", lambda c, s=s: at_seconds(c, s)) for s in seconds])


def print_table(title, args, recipes, images, results, columns):
    print()
    print(title)
    head = f"{'width':>5} {'recipe':22}" + "".join(f"{n:>10}" for n, _ in columns)
    print(head)
    for w in args.widths:
        rows = []
        for r in recipes:
            cells = []
            for _, fn in columns:
                cells.append(mean([fn(results[(w, r, i)]["curve"])
                                   for i in images
                                   if "curve" in results[(w, r, i)]]))
            rows.append((r, cells))
        best = [max((c[k] for _, c in rows if c[k] == c[k]), default=None)
                for k in range(len(columns))]
        for r, cells in rows:
            text = "".join(
                f"{c:9.2f}{'*' if best[k] is not None and c == best[k] else ' '}"
                for k, c in enumerate(cells))
            print(f"{w:5} {r:22}{text}")
    print("(* the best at that width)")


if __name__ == "__main__":
    main()
