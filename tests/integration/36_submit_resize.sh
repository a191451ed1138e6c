#!/bin/bash
# 36_submit_resize.sh - `vkinrctl submit --max-side N` and `--resize WxH`:
# the daemon scales the decoded image down before it keeps it, so the job,
# its kept target and its reconstruction have the new size.
#   - a 200x150 image with --max-side 64 is a 64x48 job (aspect kept), its
#     target.png 64x48, and its export too;
#   - --resize 40x30 gives exactly that; one larger than the image is
#     refused, naming why (exit 3, no job); --resize with --max-side is a
#     usage error (exit 2);
#   - job.submit's "resize" out of range or of the wrong shape: -32602;
#   - --skip-done tells the scalings apart: the same image at the same
#     --max-side is skipped, at another one it is a new job.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import base64, struct, subprocess
from rpc import *
tap = Tap()
img = os.path.join(T, "photo.png")
subprocess.run([os.environ["MKSAMPLE"], img, "200", "150", "3"], check=True,
               stdout=subprocess.DEVNULL)
c = Client(timeout=120)

def png_size(path):
    return struct.unpack(">II", open(path, "rb").read(24)[16:24])

def job_of(r):
    ids = r.stdout.split()
    return c.call("job.get", {"job": ids[0]}) if r.returncode == 0 and ids else {}

j = job_of(ctl("submit", img, "-q", "--max-side", "64", "--epochs", "2", "--width", "16"))
kept = os.path.join(os.environ["STATE"], "jobs", str(j.get("id")), "target.png")
tap.ok(j.get("image") == {"width": 64, "height": 48} and png_size(kept) == (64, 48),
       "--max-side 64: a 64x48 job, its kept target 64x48", j)
ctl("wait", str(j["id"]))
recon = os.path.join(T, "r.png")
r = ctl("export", str(j["id"]), "--recon", recon, "--model", os.path.join(T, "m.safetensors"))
tap.ok(r.returncode == 0 and png_size(recon) == (64, 48),
       "its reconstruction is 64x48", (r.returncode, r.stderr))

j2 = job_of(ctl("submit", img, "-q", "--resize", "40x30", "--epochs", "1", "--width", "16"))
tap.ok(j2.get("image") == {"width": 40, "height": 30}, "--resize 40x30: exactly that", j2)

n = len(c.call("job.list", {})["jobs"])
r1 = ctl("submit", img, "--resize", "400x10", "--epochs", "1")
r2 = ctl("submit", img, "--resize", "40x30", "--max-side", "20", "--epochs", "1")
tap.ok(r1.returncode == 3 and "only scales down" in r1.stderr and r2.returncode == 2
       and "exclude each other" in r2.stderr and len(c.call("job.list", {})["jobs"]) == n,
       "--resize larger than the image: refused (exit 3); with --max-side: usage (exit 2)",
       (r1.returncode, r1.stderr, r2.returncode, r2.stderr))

b64 = base64.b64encode(open(img, "rb").read()).decode()
bad = [c.request("job.submit", {"image": {"png": b64}, "resize": v})
       for v in ({"max_side": 0}, {"width": 10}, {"width": 10, "height": 10, "max_side": 5},
                 {"max_side": 2.5}, {"size": 3}, 64)]
tap.ok(all(b.get("error", {}).get("code") == -32602 for b in bad),
       "job.submit's resize out of range or of the wrong shape: -32602", bad)

ctl("wait", str(j2["id"]))
r = ctl("submit", img, "-q", "--max-side", "64", "--epochs", "2", "--width", "16", "--skip-done")
tap.ok(r.returncode == 0 and r.stdout.split() == [str(j["id"])],
       "--skip-done: the same image at the same --max-side is skipped (the covering id)",
       (r.returncode, r.stdout, r.stderr))
r = ctl("submit", img, "-q", "--max-side", "32", "--epochs", "2", "--width", "16", "--skip-done")
j3 = job_of(r)
tap.ok(j3.get("id") not in (None, j["id"]) and j3.get("image") == {"width": 32, "height": 24},
       "... at another --max-side it is a new job (32x24)", (r.stdout, r.stderr, j3))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
