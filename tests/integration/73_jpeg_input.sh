#!/bin/bash
# 73_jpeg_input.sh - photos as people have them: a folder with a JPEG
# taken on its side (EXIF orientation 6), a .jpeg without EXIF, a 16-bit
# grey PNG, a grey 8-bit PNG, a text file, a hidden file, a subfolder and
# a corrupt JPEG, submitted as `vkinrctl submit DIR`. The images become
# jobs, turned upright (the target the daemon keeps is PIL's upright
# decoding of the JPEG, within JPEG rounding); every other entry is named
# on stderr with its reason; the corrupt JPEG is refused with libjpeg's
# words and fails only itself (exit 3, the others done); `vkinrd --fit`
# reads a JPEG too, the exported reconstruction is a PNG, and `vkinrctl
# infer --target` takes the JPEG as submit did (a PSNR back, exit 0).
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
need_pil
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import glob, subprocess
from rpc import *
from PIL import Image
tap = Tap()

d = os.path.join(T, "photos")
os.makedirs(os.path.join(d, "sub"))
# 32 wide, 16 tall as stored: the left half red, the right half blue, a
# green mark in the top-left corner; orientation 6 shows it turned right
# (16 wide, 32 tall, red on top, the mark at the top right).
img = Image.new("RGB", (32, 16), (220, 30, 30))
img.paste((30, 30, 220), (16, 0, 32, 16))
img.paste((30, 220, 30), (0, 0, 8, 8))
exif = Image.Exif()
exif[0x0112] = 6
img.save(os.path.join(d, "side.jpg"), quality=95, exif=exif.tobytes())
Image.new("RGB", (24, 20), (90, 140, 200)).save(os.path.join(d, "plain.JPEG"))
grey16 = Image.new("I;16", (20, 16))
grey16.putdata([(x * 3000 + y * 700) % 65536 for y in range(16) for x in range(20)])
grey16.save(os.path.join(d, "deep.png"))
Image.new("L", (16, 16), 77).save(os.path.join(d, "grey.png"))
jpg = open(os.path.join(d, "side.jpg"), "rb").read()
open(os.path.join(d, "broken.jpg"), "wb").write(jpg[:len(jpg) // 3])
open(os.path.join(d, "notes.txt"), "w").write("not an image\n")
open(os.path.join(d, ".hidden.png"), "w").write("x")

r = ctl("submit", d, "--epochs", "40", "--width", "16", "--wait")
print("# stderr:", r.stderr.replace("\n", "\n# "))
err = r.stderr
tap.ok(r.returncode == 3, "submit DIR --wait: exit 3 (one image refused)",
       (r.returncode, r.stdout, err))
tap.ok("broken.jpg" in err and "JPEG" in err and "libjpeg" in err
       and err.count("broken.jpg") == 1,
       "the corrupt JPEG is named once, with libjpeg's words", err)
tap.ok(all(("left out %s/%s: %s" % (d, f, why)) in err for f, why in [
       ("notes.txt", "not named .png, .jpg, .jpeg or .webp"),
       (".hidden.png", "a hidden file"),
       ("sub", "a folder")]),
       "every other entry of the folder is named with its reason", err)

c = Client()
jobs = {j["name"]: j for j in c.call("job.list", {})["jobs"]}
tap.ok(sorted(jobs) == ["deep", "grey", "plain", "side"]
       and all(j["state"] == "done" for j in jobs.values()),
       "the four images became jobs (named without .jpg/.JPEG) and are done",
       jobs)
side = jobs.get("side", {})
size = lambda j: (j.get("image", {}).get("width"), j.get("image", {}).get("height"))
tap.ok(size(side) == (16, 32) and size(jobs.get("deep", {})) == (20, 16),
       "the JPEG on its side is a 16x32 job (turned upright)",
       side)

# the target the daemon keeps: a PNG, the upright pixels
from PIL import ImageOps
want = ImageOps.exif_transpose(Image.open(os.path.join(d, "side.jpg"))).convert("RGB")
kept = glob.glob(os.path.join(os.environ["STATE"], "jobs", str(side.get("id")), "target.png"))
got = Image.open(kept[0]).convert("RGB") if kept else None
diff = max(max(abs(a - b) for a, b in zip(p, q))
           for p, q in zip(want.getdata(), got.getdata())) if got else 999
tap.ok(got is not None and got.size == (16, 32) and diff <= 3,
       "the kept target is a PNG of the upright JPEG (max difference %s)" % diff,
       kept)

r = ctl("export", str(side.get("id")), "--recon", os.path.join(T, "side-out.png"),
        "--model", os.path.join(T, "side.safetensors"))
out = os.path.join(T, "side-out.png")
ok = r.returncode == 0 and open(out, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
if ok:
    rec = Image.open(out).convert("RGB")
    top, bottom = rec.getpixel((4, 24 - 20)), rec.getpixel((8, 28))
    ok = rec.size == (16, 32) and top[0] > top[2] and bottom[2] > bottom[0]
tap.ok(ok, "export writes a PNG reconstruction, red on top as the photo shows",
       (r.returncode, r.stdout, r.stderr))

# infer --target takes what submit took: the JPEG itself
r = ctl("--json", "infer", os.path.join(T, "side.safetensors"), "-o",
        os.path.join(T, "side-infer.png"), "--target", os.path.join(d, "side.jpg"))
try:
    psnr = json.loads(r.stdout).get("psnr", 0)
except ValueError:
    psnr = 0
tap.ok(r.returncode == 0 and psnr > 5,
       "infer --target PHOTO.jpg: a PSNR against the upright JPEG, exit 0",
       (r.returncode, r.stdout, r.stderr))

# every EXIF orientation, 1 to 8: the kept target is PIL's upright image
t = os.path.join(T, "turns")
os.mkdir(t)
for o in range(1, 9):
    e = Image.Exif()
    e[0x0112] = o
    img.save(os.path.join(t, "o%d.jpg" % o), quality=95, exif=e.tobytes())
r = ctl("submit", t, "--epochs", "1", "--width", "16", "-q")
ids = r.stdout.split()[:8]
worst = 0
for o, i in zip(range(1, 9), ids):
    want = ImageOps.exif_transpose(Image.open(os.path.join(t, "o%d.jpg" % o))).convert("RGB")
    got = Image.open(os.path.join(os.environ["STATE"], "jobs", i, "target.png")).convert("RGB")
    worst = max(worst, 999 if got.size != want.size else
                max(max(abs(a - b) for a, b in zip(p, q))
                    for p, q in zip(want.getdata(), got.getdata())))
tap.ok(r.returncode == 0 and len(ids) == 8 and worst <= 3,
       "each of the 8 EXIF orientations is turned as PIL turns it (max difference %s)" % worst,
       (r.returncode, r.stdout, r.stderr))

Image.new("RGB", (16, 16), (200, 100, 50)).save(os.path.join(T, "f.jpg"))
r = subprocess.run([os.environ["VKINRD"], "--fit", os.path.join(T, "f.jpg"),
                    "--epochs", "3", "--width", "16", "-q", "--recon",
                    os.path.join(T, "f.png")], capture_output=True, text=True)
tap.ok(r.returncode == 0 and open(os.path.join(T, "f.png"), "rb").read(4) == b"\x89PNG",
       "vkinrd --fit reads a JPEG and writes a PNG", (r.returncode, r.stderr))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
