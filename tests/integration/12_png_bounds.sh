#!/bin/bash
# 12_png_bounds.sh - PNGs that carry more than their image, made byte by
# byte (hostile_images.py), against the real daemon and `vkinrd --fit`:
#   - a private chunk, a text chunk, and bytes after IEND, each over
#     IMAGE_MAX_CHUNK (8 MiB): refused as over that limit (-32004 naming
#     it), no job made, the daemon serving;
#   - a 32x32 PNG with a 1 MiB private chunk and 1 MiB after its end is
#     accepted, and the job keeps the decoded image as a plain PNG (a few
#     KiB, the same pixels, no other chunk), not the 2 MiB sent; a 16-bit
#     grey PNG is kept as 16-bit grey, every sample the same;
#   - both jobs train from what was kept; after a restart they are still
#     done, their targets unchanged, and export still works;
#   - `vkinrd --fit DIR` refuses the over-limit files, naming the limit,
#     and fits the others.
. "$(dirname "$0")/lib.bash"
tap_plan 8
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import base64, subprocess
from rpc import *
from hostile_images import *
tap = Tap()
c = Client(timeout=120)
MiB = 1 << 20

def send(data, **kw):
    params = {"image": {"png": base64.b64encode(data).decode()}, "epochs": 20, "width": 16}
    params.update(kw)
    return c.request("job.submit", params)

big = 9 * MiB
bad = {
    "private": png_rgb(32, 32, before_idat=[(b"prIv", bytes(big))]),
    "text": png_rgb(32, 32, before_idat=[(b"tEXt", b"Comment\0" + b"x" * big)]),
    "trailing": png_rgb(32, 32, after_iend=bytes(big)),
}
wrong = []
for name, data in bad.items():
    r = send(data)
    e = r.get("error", {})
    if not (e.get("code") == -32004 and e.get("data", {}).get("limit") == "IMAGE_MAX_CHUNK"
            and "8388608 bytes" in e.get("message", "")):
        wrong.append((name, r))
tap.ok(not wrong, "a 9 MiB private chunk, text chunk and tail after IEND: "
       "each refused, naming IMAGE_MAX_CHUNK", wrong)
tap.ok(c.call("daemon.status")["jobs"]["total"] == 0 and c.call("hello")["protocol"] >= 1,
       "no job made of them; the daemon serves")

pixel = lambda x, y: (x * 8, y * 8, (x * y) % 256)
sent = png_rgb(32, 32, pixel, before_idat=[(b"prIv", bytes(MiB))], after_iend=bytes(MiB))
a = send(sent, name="padded")["result"]["job"]
grey = png_grey16(20, 12)
b = send(grey, name="deep")["result"]["job"]
state = os.environ["STATE"]
target = lambda j: open(os.path.join(state, "jobs", j, "target.png"), "rb").read()
ta, tb = target(a), target(b)
w, h, depth, ctype, kinds, rows = png_read(ta)
want = [[v for x in range(32) for v in pixel(x, y)] for y in range(32)]
tap.ok(len(sent) > 2 * MiB and len(ta) < 8192 and (w, h, depth, ctype) == (32, 32, 8, 2)
       and "prIv" not in kinds and rows == want,
       "the %d-byte submission is kept as a %d-byte PNG of the same pixels, "
       "its chunks %s" % (len(sent), len(ta), kinds), (w, h, depth, ctype, kinds))
gw, gh, gdepth, gctype, _, grows = png_read(tb)
tap.ok((gw, gh, gdepth, gctype) == (20, 12, 16, 0) and grows == png_read(grey)[5],
       "a 16-bit grey PNG is kept as 16-bit grey, every sample the same",
       (gw, gh, gdepth, gctype))

ends = [follow(c, j)[1][-1:] for j in (a, b)]
tap.ok(ends == [["done"], ["done"]], "both jobs train from what was kept", ends)
tap.done()
EOF_PY
stop_daemon
start_daemon || { echo "not ok 6 - daemon restarts"; exit 1; }
TAP_N=5
run_py <<'EOF_PY'
import subprocess
from rpc import *
from hostile_images import *
tap = Tap()
c = connect_retry()
state = os.environ["STATE"]
jobs = {j["name"]: j for j in c.call("job.list", {})["jobs"]}
ok = sorted(jobs) == ["deep", "padded"] and all(j["state"] == "done" for j in jobs.values())
out = os.path.join(T, "padded-out.png")
r = ctl("export", jobs.get("padded", {}).get("id", "1"), "--recon", out,
        "--model", os.path.join(T, "padded.safetensors"))
t = open(os.path.join(state, "jobs", jobs["padded"]["id"], "target.png"), "rb").read() if ok else b""
tap.ok(ok and r.returncode == 0 and png_read(open(out, "rb").read())[:2] == (32, 32)
       and png_read(t)[:4] == (32, 32, 8, 2),
       "after a restart both jobs are done, the target kept, export works",
       (jobs, r.returncode, r.stderr))

d = os.path.join(T, "many")
os.mkdir(d)
MiB = 1 << 20
open(os.path.join(d, "private.png"), "wb").write(png_rgb(16, 16, before_idat=[(b"prIv", bytes(9 * MiB))]))
open(os.path.join(d, "tail.png"), "wb").write(png_rgb(16, 16, after_iend=bytes(9 * MiB)))
open(os.path.join(d, "good.png"), "wb").write(png_rgb(16, 16))
outdir = os.path.join(T, "fitout")
r = subprocess.run([os.environ["VKINRD"], "--fit", d, "--out", outdir, "--epochs", "2",
                    "--width", "16", "-q"], capture_output=True, text=True, timeout=300)
err = r.stderr
tap.ok(r.returncode != 0 and "private.png: the PNG's prIv chunk is 9437184 bytes, over the limit of 8388608" in err
       and "tail.png: the PNG has 9437184 bytes after its end" in err
       and sorted(os.listdir(outdir)) == ["good.png", "good.safetensors"],
       "vkinrd --fit DIR refuses both, naming the limit, and fits the other",
       (r.returncode, err, os.listdir(outdir) if os.path.isdir(outdir) else None))
tap.ok(c.call("hello")["protocol"] >= 1, "the daemon still answers")
tap.done()
EOF_PY
stop_daemon
tap_done
