#!/bin/bash
# 60_batch_folder.sh - a folder of five small images as one batch, the way
# the README tells people to: `vkinrctl submit DIR -q` (the job ids, then
# `batch ID`), `wait`, the batch's
# CSV summary (five rows with PSNRs), `export` of the batch into the folder
# the images came from (NAME.recon.png beside NAME.png, which stays as it
# was), and `infer --target` of every exported model giving the job's PSNR back (within 0.05 dB). Two workers share the
# device, so the batch is also spread over them.
. "$(dirname "$0")/lib.bash"
tap_plan 12
need_device
start_daemon --device 0 --device 0 || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import csv, io, subprocess
from rpc import *
tap = Tap()
CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"])

def ctl(*args, stdin=None):
    return subprocess.run([CTL] + list(args), env=ENV, input=stdin,
                          capture_output=True, text=True, timeout=120)

imgs = os.path.join(T, "photos")
os.mkdir(imgs)
sizes = {"beach": (24, 24), "cat": (32, 28), "dog": (28, 36),
         "hill": (40, 40), "tree": (36, 24)}
for i, (name, (w, h)) in enumerate(sorted(sizes.items())):
    subprocess.run([os.environ["MKSAMPLE"], os.path.join(imgs, name + ".png"),
                    str(w), str(h), str(i + 1)], check=True,
                   stdout=subprocess.DEVNULL)
open(os.path.join(imgs, "notes.txt"), "w").write("not an image\n")

r = ctl("submit", imgs, "-q", "--epochs", "30", "--width", "16", "--seed", "3")
lines = r.stdout.splitlines()
ids = lines[:-1]
tap.ok(r.returncode == 0 and len(ids) == 5 and all(i.isdigit() for i in ids)
       and lines[-1].startswith("batch b"),
       "submit DIR -q: exit 0, five job ids and 'batch ID', nothing else",
       (r.returncode, r.stdout, r.stderr))

c = Client()
batch = c.call("job.get", {"job": ids[0]})["batch"]
jobs = [c.call("job.get", {"job": i}) for i in ids]
tap.ok(batch and all(j["batch"] == batch for j in jobs)
       and sorted(j["name"] for j in jobs) == sorted(sizes),
       "the five jobs share one batch id and are named after the images", jobs)

r = ctl("wait", *ids)
tap.ok(r.returncode == 0, "wait: exit 0 once all are done", (r.returncode, r.stderr))
jobs = {j["name"]: j for j in (c.call("job.get", {"job": i}) for i in ids)}
tap.ok(all(j["state"] == "done" and j["epoch"] == 30 for j in jobs.values()),
       "every job done at epoch 30", jobs)
tap.ok(all(j["device"] and j["seconds"] > 0 and j["target_psnr"] is None
           for j in jobs.values()),
       "each job records its device and its training seconds", jobs)

r = ctl("list", "--batch", batch, "--csv")
rows = list(csv.DictReader(io.StringIO(r.stdout)))
tap.ok(r.returncode == 0 and len(rows) == 5, "list --batch B --csv: five rows",
       (r.returncode, r.stdout, r.stderr))
def num(x):
    try:
        return float(x)
    except ValueError:
        return float("nan")
tap.ok(all(row["batch"] == batch and row["state"] == "done"
           and num(row["psnr"]) > 5 and num(row["best_psnr"]) >= num(row["psnr"]) - 1e-9
           and abs(num(row["psnr"]) - jobs[row["name"]]["psnr"]) < 1e-3
           and num(row["seconds"]) > 0 and row["device"]
           and (int(row["width"]), int(row["height"])) == sizes[row["name"]]
           for row in rows),
       "each row: batch, done, size, PSNR and best PSNR, seconds, device", rows)

# exported into the very folder the images came from (issue 11, item 1)
out = imgs
def sources():
    return {n: open(os.path.join(imgs, n + ".png"), "rb").read() for n in sizes}
before = sources()
r = ctl("export", batch, "--dir", out)
files = sorted(f for f in os.listdir(out) if f != "notes.txt")
want = sorted([n + ".safetensors" for n in sizes] + [n + ".recon.png" for n in sizes]
              + [n + ".png" for n in sizes])
tap.ok(r.returncode == 0 and files == want and sources() == before,
       "export B --dir SOURCES: NAME.safetensors and NAME.recon.png, the images untouched",
       (r.returncode, r.stderr, files))
tap.ok(all(open(os.path.join(out, n + ".recon.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
           for n in sizes), "the exported reconstructions are PNGs")

results = {}
for name in sorted(sizes):
    r = ctl("--json", "infer", os.path.join(out, name + ".safetensors"),
            "-o", os.path.join(T, name + ".infer.png"),
            "--target", os.path.join(imgs, name + ".png"))
    results[name] = (r.returncode, json.loads(r.stdout)["psnr"] if r.returncode == 0 else r.stderr)
tap.ok(all(rc == 0 for rc, _ in results.values()), "infer --target of each model: exit 0", results)
tap.ok(all(rc == 0 and abs(p - jobs[n]["model_psnr"]) < 0.05
           for n, (rc, p) in results.items()),
       "infer gives each exported model's PSNR back (within 0.05 dB)",
       {n: (p, jobs[n]["model_psnr"]) for n, (_, p) in results.items()})
tap.ok(all(rc == 0 and abs(p - jobs[n]["psnr"]) < 0.05
           for n, (rc, p) in results.items()),
       "... which is the job's last PSNR (within 0.05 dB)",
       {n: (p, jobs[n]["psnr"]) for n, (_, p) in results.items()})
tap.done()
EOF_PY
stop_daemon
tap_done
