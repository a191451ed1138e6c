#!/bin/bash
# 36_recursive_folders.sh - a photo library sorted into folders by year,
# two of its images both called beach (2024/beach.png, 2025/beach.webp
# when cwebp is there, else .png), one four folders down, a hidden folder,
# a link back to the top (a loop for a naive walk) and a text file:
#   - `vkinrctl submit DIR` alone takes the top's image and names each
#     subfolder as left out, pointing at -r;
#   - `submit -r DIR --wait`: every image below, each job named by its
#     path below DIR (2024/beach, 2025/beach, 2025/deep/x/a), nothing
#     from the hidden folder or through the link, exit 0;
#   - the batch's export keeps the two beaches apart (2024_beach,
#     2025_beach);
#   - -r given after --from-file still searches the folder the list names;
#   - `vkinrd --fit -r DIR --out OUT` leaves OUT/2024/beach.png and
#     OUT/2025/beach.png (the subfolders made), and without -r only the
#     top's image; with --max-side 8 every output is scaled down.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import shutil, struct, subprocess
from rpc import *
tap = Tap()

def sample(path, w, h, seed):
    subprocess.run([os.environ["MKSAMPLE"], path, str(w), str(h), str(seed)],
                   check=True, stdout=subprocess.DEVNULL)

lib = os.path.join(T, "photos")
for sub in ("2024", "2025/deep/x", ".trash"):
    os.makedirs(os.path.join(lib, sub))
sample(os.path.join(lib, "top.png"), 16, 16, 1)
sample(os.path.join(lib, "2024", "beach.png"), 20, 16, 2)
beach25 = os.path.join(lib, "2025", "beach.png")
sample(beach25, 16, 20, 3)
if shutil.which("cwebp"):
    subprocess.run(["cwebp", "-quiet", "-lossless", beach25, "-o", beach25[:-4] + ".webp"],
                   check=True)
    os.unlink(beach25)
sample(os.path.join(lib, "2025", "deep", "x", "a.png"), 16, 16, 4)
sample(os.path.join(lib, ".trash", "old.png"), 16, 16, 5)
os.symlink(lib, os.path.join(lib, "2025", "again"))
open(os.path.join(lib, "notes.txt"), "w").write("not an image\n")

r = ctl("submit", lib, "-q", "--epochs", "1", "--width", "16")
c = Client(timeout=120)
names = sorted(j["name"] for j in c.call("job.list", {})["jobs"])
tap.ok(r.returncode == 0 and names == ["top"]
       and "left out %s/2024: a folder (-r searches the folders inside)" % lib in r.stderr,
       "submit DIR: the top's image alone, each subfolder named as left out, -r suggested",
       (r.returncode, names, r.stderr))
ctl("wait", *r.stdout.split()[:-1])
ctl("rm", "--state", "done")

r = ctl("submit", "-r", lib, "--epochs", "5", "--width", "16", "--wait")
print("# stderr:", r.stderr.strip().replace("\n", "\n# "))
jobs = {j["name"]: j for j in c.call("job.list", {})["jobs"]}
tap.ok(r.returncode == 0
       and sorted(jobs) == ["2024/beach", "2025/beach", "2025/deep/x/a", "top"]
       and all(j["state"] == "done" for j in jobs.values()),
       "submit -r DIR --wait: each image below, named by its path below DIR, done",
       (r.returncode, sorted(jobs), r.stderr))
size = lambda j: (j["image"]["width"], j["image"]["height"])
tap.ok(size(jobs["2024/beach"]) == (20, 16) and size(jobs["2025/beach"]) == (16, 20),
       "the two beaches are two jobs, each of its own image", jobs)
tap.ok("a hidden folder" in r.stderr and "a link to a folder" in r.stderr
       and "old" not in "".join(jobs),
       "the hidden folder and the link back to the top are left out, named", r.stderr)

out = os.path.join(T, "fitted")
r = ctl("export", jobs["top"]["batch"], "--dir", out)
made = sorted(os.listdir(out)) if os.path.isdir(out) else []
tap.ok(r.returncode == 0 and "2024_beach.safetensors" in made and "2025_beach.safetensors" in made
       and len(made) == 8,
       "export of the batch keeps the two beaches apart (2024_beach, 2025_beach)",
       (r.returncode, made, r.stderr))

ctl("rm", "--state", "done")
lst = os.path.join(T, "list.txt")
open(lst, "w").write(lib + "\n")
r = ctl("submit", "--from-file", lst, "-r", "-q", "--epochs", "1", "--width", "16")
names = sorted(j["name"] for j in c.call("job.list", {})["jobs"])
tap.ok(r.returncode == 0 and len(names) == 4 and "2025/deep/x/a" in names,
       "-r after --from-file: the folder the list names is searched too", (names, r.stderr))

v = os.environ["VKINRD"]
o1, o2 = os.path.join(T, "o1"), os.path.join(T, "o2")
r = subprocess.run([v, "--fit", lib, "-r", "--out", o1, "--epochs", "2", "--width", "16", "-q"],
                   capture_output=True, text=True, timeout=300)
found = sorted(os.path.relpath(os.path.join(p, f), o1)
               for p, _, fs in os.walk(o1) for f in fs if f.endswith(".png"))
tap.ok(r.returncode == 0 and found == ["2024/beach.png", "2025/beach.png",
                                       "2025/deep/x/a.png", "top.png"],
       "vkinrd --fit -r DIR --out OUT: OUT/2024/beach.png, OUT/2025/beach.png...",
       (r.returncode, r.stderr, found))
r = subprocess.run([v, "--fit", lib, "--out", o2, "--epochs", "2", "--width", "16", "-q"],
                   capture_output=True, text=True, timeout=300)
tap.ok(r.returncode == 0 and sorted(os.listdir(o2)) == ["top.png", "top.safetensors"],
       "without -r: the top's image alone", (r.returncode, r.stderr,
                                            os.listdir(o2) if os.path.isdir(o2) else None))
o3 = os.path.join(T, "o3")
r = subprocess.run([v, "--fit", lib, "-r", "--out", o3, "--max-side", "8", "--epochs", "1",
                    "--width", "16", "-q"], capture_output=True, text=True, timeout=300)
sizes = sorted(struct.unpack(">II", open(os.path.join(p, f), "rb").read(24)[16:24])
               for p, _, fs in os.walk(o3) for f in fs if f.endswith(".png"))
tap.ok(r.returncode == 0 and sizes == sorted([(8, 8), (8, 6), (6, 8), (8, 8)]),
       "--fit -r DIR --out OUT --max-side 8: every image scaled down, aspect kept",
       (r.returncode, r.stderr, sizes))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
