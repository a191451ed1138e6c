#!/bin/bash
# 36_webp_orientation.sh - a WebP photo is fitted upright, as a JPEG is
# (issue 36: EXIF orientation through libexif): lossless WebPs made by
# Debian's cwebp from a 24x16 picture with a mark in one corner, given an
# EXIF chunk by webpmux with each orientation 1 to 8 (the TIFF data
# alone, as the WebP container specifies), become jobs whose kept
# target is the picture turned as PIL turns it (16x24 for 5 to 8), pixel
# for pixel; the same with the chunk written "Exif\0\0" first, as some
# writers do; a WebP with an EXIF chunk libexif cannot read, and one
# without any, are fitted as stored; `vkinrd --fit` reads the turned WebP
# upright too. The JPEG decoder reads its orientation through the same
# code (73_jpeg_input checks it).
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
need_pil
for tool in cwebp webpmux; do
	if ! command -v $tool >/dev/null; then
		for i in $(seq 1 "$TAP_PLAN"); do echo "ok $i # SKIP no $tool (Debian's webp; tests/deps.sh)"; done
		exit 0
	fi
done
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import subprocess
from PIL import Image
from rpc import *
tap = Tap()
d = os.path.join(T, "turns")
os.mkdir(d)
img = Image.new("RGB", (24, 16), (40, 60, 200))
for y in range(16):
    for x in range(24):
        img.putpixel((x, y), (x * 10, y * 15, 200 - x * 4))
for y in range(4):
    for x in range(6):
        img.putpixel((x, y), (20, 230, 20))  # the mark: top left
img.save(os.path.join(T, "base.png"))
subprocess.run(["cwebp", "-quiet", "-lossless", os.path.join(T, "base.png"),
                "-o", os.path.join(T, "base.webp")], check=True)

def with_exif(name, payload):
    p = os.path.join(T, name + ".exif")
    open(p, "wb").write(payload)
    subprocess.run(["webpmux", "-set", "exif", p, os.path.join(T, "base.webp"),
                    "-o", os.path.join(d, name + ".webp")], check=True,
                   capture_output=True)

for o in range(1, 9):
    e = Image.Exif()
    e[0x0112] = o
    raw = e.tobytes()
    raw = raw[6:] if raw.startswith(b"Exif\x00\x00") else raw
    with_exif("o%d" % o, raw)
    if o == 6:
        with_exif("p6", b"Exif\x00\x00" + raw)
with_exif("junk", b"II*\x00" + b"\xff" * 40)
os.rename(os.path.join(T, "base.webp"), os.path.join(d, "plain.webp"))

turn = {1: None, 2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM,
        5: Image.TRANSPOSE, 6: Image.ROTATE_270, 7: Image.TRANSVERSE, 8: Image.ROTATE_90}
def upright(o):
    return img if turn[o] is None else img.transpose(turn[o])

r = ctl("submit", d, "--epochs", "1", "--width", "16", "--wait")
c = Client()
jobs = {j["name"]: j for j in c.call("job.list", {})["jobs"]}
def kept(name):
    j = jobs.get(name)
    if not j:
        return None
    return Image.open(os.path.join(os.environ["STATE"], "jobs", str(j["id"]), "target.png")).convert("RGB")
def same(a, b):
    return a is not None and a.size == b.size and list(a.getdata()) == list(b.getdata())

tap.ok(r.returncode == 0 and len(jobs) == 11 and all(j["state"] == "done" for j in jobs.values()),
       "the 11 WebPs became jobs and are done", (r.returncode, r.stderr, sorted(jobs)))
bad = [o for o in range(1, 9) if not same(kept("o%d" % o), upright(o))]
tap.ok(not bad and jobs["o6"]["image"] == {"width": 16, "height": 24},
       "each of the 8 EXIF orientations is turned as PIL turns it, pixel for pixel", bad)
tap.ok(same(kept("p6"), upright(6)), "an EXIF chunk written with \"Exif\\0\\0\" first is read too")
tap.ok(same(kept("junk"), img) and same(kept("plain"), img),
       "an EXIF chunk libexif cannot read, and none, leave the picture as stored")

out = os.path.join(T, "fit.png")
r = subprocess.run([os.environ["VKINRD"], "--fit", os.path.join(d, "o8.webp"), "--epochs", "1",
                    "--width", "16", "--recon", out], capture_output=True, text=True, timeout=300)
size = Image.open(out).size if r.returncode == 0 and os.path.exists(out) else None
tap.ok(size == (16, 24), "vkinrd --fit reads the turned WebP upright (a 16x24 reconstruction)",
       (r.returncode, r.stderr[-500:], size))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
