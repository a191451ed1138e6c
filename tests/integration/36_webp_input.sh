#!/bin/bash
# 36_webp_input.sh - WebP, the format GNOME's backgrounds come in, made by
# Debian's cwebp from a real photograph (plasma-workspace-wallpapers; a
# generated image without it): a lossy file, a lossless one and one with
# an alpha channel in a folder beside a PNG, submitted as `vkinrctl
# submit DIR --wait`. Each becomes a job whose kept target is the image
# as Debian's dwebp decodes it, alpha dropped;
# a cut WebP is refused with libwebp's words and fails only itself (exit
# 3). Files a stranger might send, against the bytes they cost:
#   - a 1 KiB lossy WebP whose header was rewritten to 16383x4096: refused
#     at once, from its size, as truncated or lying;
#   - a lossless WebP of one colour, 4096x4096 in a hundred bytes:
#     refused, and told to send a PNG;
#   - an animation (img2webp): refused, one frame is asked for;
#   - garbage after a RIFF/WEBP header: refused as corrupt;
# no job is made of any of them and the daemon serves on. `vkinrd --fit`
# reads a WebP (alone and in a folder --out) and refuses the cut one with
# the same words; `vkinrctl infer --target` takes the WebP.
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
for tool in cwebp dwebp img2webp; do
	if ! command -v $tool >/dev/null; then
		for i in $(seq 1 "$TAP_PLAN"); do echo "ok $i # SKIP no $tool (Debian's webp; tests/deps.sh)"; done
		exit 0
	fi
done
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import base64, struct, subprocess, time, zlib
from rpc import *
tap = Tap()

def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, timeout=120, **kw)

def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))

def png_rgba(path, w, h):
    """An RGBA PNG (alpha falling from left to right), without PIL."""
    rows = b"".join(b"\0" + b"".join(bytes(((x * 7 + y * 3) % 256, (x * 13) % 256,
                                             (y * 17) % 256, 255 - x * 255 // w))
                                     for x in range(w)) for y in range(h))
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" +
                           chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) +
                           chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))

def ppm(path):
    """dwebp -ppm's output: (w, h, bytes)."""
    data = open(path, "rb").read()
    parts = data.split(maxsplit=4)
    return int(parts[1]), int(parts[2]), parts[4]

def target_of(job):
    """The daemon's kept target, decoded by dwebp's twin: the PNG via cwebp
    -lossless and dwebp -ppm, so that no PIL is needed."""
    kept = os.path.join(os.environ["STATE"], "jobs", str(job), "target.png")
    ll = os.path.join(T, "kept-%s.webp" % job)
    out = os.path.join(T, "kept-%s.ppm" % job)
    run("cwebp", "-quiet", "-lossless", "-exact", kept, "-o", ll)
    run("dwebp", "-quiet", ll, "-ppm", "-o", out)
    return ppm(out)

def dwebp(path):
    out = path + ".ppm"
    run("dwebp", "-quiet", path, "-ppm", "-o", out)
    return ppm(out)

d = os.path.join(T, "backgrounds")
os.mkdir(d)
photo = "/usr/share/wallpapers/Autumn/contents/images/640x480.jpg"
if os.path.exists(photo):
    src = photo
else:  # a generated image when the wallpapers are not installed
    src = os.path.join(T, "src.png")
    subprocess.run([os.environ["MKSAMPLE"], src, "640", "480", "5"], check=True,
                   stdout=subprocess.DEVNULL)
run("cwebp", "-quiet", "-resize", "48", "36", src, "-o", os.path.join(d, "lossy.webp"))
run("cwebp", "-quiet", "-lossless", "-resize", "40", "30", src, "-o", os.path.join(d, "exact.webp"))
png_rgba(os.path.join(T, "alpha.png"), 32, 24)
run("cwebp", "-quiet", "-q", "90", os.path.join(T, "alpha.png"), "-o", os.path.join(d, "alpha.webp"))
subprocess.run([os.environ["MKSAMPLE"], os.path.join(d, "plain.png"), "24", "24", "2"],
               check=True, stdout=subprocess.DEVNULL)
lossy = open(os.path.join(d, "lossy.webp"), "rb").read()
open(os.path.join(d, "cut.webp"), "wb").write(lossy[:len(lossy) // 2])

r = ctl("submit", d, "--epochs", "20", "--width", "16", "--wait")
print("# stderr:", r.stderr.strip().replace("\n", "\n# "))
err = r.stderr
tap.ok(r.returncode == 3 and "cut.webp" in err and "WebP" in err and "libwebp" in err
       and err.count("cut.webp") == 1,
       "submit DIR --wait: exit 3, the cut WebP named once with libwebp's words",
       (r.returncode, r.stdout, err))

c = Client(timeout=120)
jobs = {j["name"]: j for j in c.call("job.list", {})["jobs"]}
size = lambda j: (j.get("image", {}).get("width"), j.get("image", {}).get("height"))
tap.ok(sorted(jobs) == ["alpha", "exact", "lossy", "plain"]
       and all(j["state"] == "done" for j in jobs.values())
       and size(jobs["lossy"]) == (48, 36) and size(jobs["exact"]) == (40, 30)
       and size(jobs["alpha"]) == (32, 24),
       "the three WebPs and the PNG became jobs of their sizes, named without "
       ".webp, and are done", jobs)

bad = []
for name in ("lossy", "exact", "alpha"):
    want = dwebp(os.path.join(d, name + ".webp"))
    got = target_of(jobs[name]["id"])
    if want[:2] != got[:2] or want[2][:want[0] * want[1] * 3] != got[2][:got[0] * got[1] * 3]:
        bad.append(name)
tap.ok(not bad, "each kept target is the WebP's pixels as dwebp decodes them "
       "(alpha dropped)", bad)

def send(data):
    t = time.time()
    r = c.request("job.submit", {"image": {"webp": base64.b64encode(data).decode()},
                                 "epochs": 2, "width": 16})
    return r, time.time() - t

def refused(r, *words):
    e = r.get("error", {})
    return e.get("code") == -32003 and all(w in e.get("message", "") for w in words)

# a simple lossy file: RIFF, "VP8 ", the frame tag (3 bytes), the start
# code (3), then 14-bit width and height (2 bytes each)
small = os.path.join(T, "small.webp")
run("cwebp", "-quiet", "-resize", "32", "24", src, "-o", small)
data = bytearray(open(small, "rb").read())
ok = data[12:16] == b"VP8 " and data[23:26] == b"\x9d\x01\x2a"
data[26:30] = struct.pack("<HH", 16383, 4096)
r, secs = send(bytes(data))
tap.ok(ok and len(data) < 1200 and refused(r, "16383x4096", "at least 32768 bytes")
       and secs < 5,
       "%d bytes of lossy WebP saying 16383x4096: refused from its size in %.1f s"
       % (len(data), secs), r)

flat = os.path.join(T, "flat.png")  # grey, one colour
row = b"\0" + b"\x80" * 4096
open(flat, "wb").write(b"\x89PNG\r\n\x1a\n" +
                       chunk(b"IHDR", struct.pack(">IIBBBBB", 4096, 4096, 8, 0, 0, 0, 0)) +
                       chunk(b"IDAT", zlib.compress(row * 4096)) + chunk(b"IEND", b""))
run("cwebp", "-quiet", "-lossless", flat, "-o", flat + ".webp")
data = open(flat + ".webp", "rb").read()
r, secs = send(data)
tap.ok(len(data) < 2000 and refused(r, "4096x4096", "lossless", "PNG") and secs < 5,
       "a %d-byte lossless WebP of one colour, 4096x4096: refused, PNG suggested" % len(data), r)

frames = []
for i in range(2):
    f = os.path.join(T, "frame%d.png" % i)
    subprocess.run([os.environ["MKSAMPLE"], f, "16", "16", str(i + 1)], check=True,
                   stdout=subprocess.DEVNULL)
    frames.append(f)
run("img2webp", "-lossless", *frames, "-o", os.path.join(T, "anim.webp"))
r, _ = send(open(os.path.join(T, "anim.webp"), "rb").read())
tap.ok(refused(r, "animation"), "an animated WebP: refused, one frame asked for", r)

junk = b"RIFF" + struct.pack("<I", 4 + 200) + b"WEBP" + bytes(range(200))
r, _ = send(junk)
tap.ok(refused(r, "WebP"), "garbage after a RIFF/WEBP header: refused as a bad WebP", r)

jobs_after = c.call("job.list", {})["jobs"]
tap.ok(len(jobs_after) == 4 and c.call("hello")["protocol"] >= 1,
       "no job made of any of them, the daemon serves", len(jobs_after))

# the foreground fit: one WebP, a folder with WebPs, the cut one
v = os.environ["VKINRD"]
r = run(v, "--fit", os.path.join(d, "lossy.webp"), "--epochs", "2", "--width", "16", "-q",
        "--recon", os.path.join(T, "lossy-out.png"), text=True)
out = os.path.join(T, "many")
r2 = run(v, "--fit", d, "--out", out, "--epochs", "2", "--width", "16", "-q", text=True)
made = sorted(os.listdir(out)) if os.path.isdir(out) else []
tap.ok(r.returncode == 0 and open(os.path.join(T, "lossy-out.png"), "rb").read(4) == b"\x89PNG"
       and r2.returncode == 1 and "cut.webp" in r2.stderr and "libwebp" in r2.stderr
       and made == sorted(n + e for n in ("alpha", "exact", "lossy", "plain")
                          for e in (".png", ".safetensors")),
       "vkinrd --fit reads a WebP, and a folder's WebPs with --out; the cut one "
       "refused with libwebp's words", (r.returncode, r.stderr, r2.returncode, r2.stderr, made))

r = ctl("export", str(jobs["exact"]["id"]), "--model", os.path.join(T, "exact.safetensors"),
        "--recon", os.path.join(T, "exact.recon.png"))
r = ctl("--json", "infer", os.path.join(T, "exact.safetensors"), "-o",
        os.path.join(T, "exact-infer.png"), "--target", os.path.join(d, "exact.webp"))
try:
    psnr = json.loads(r.stdout).get("psnr", 0)
except ValueError:
    psnr = 0
tap.ok(r.returncode == 0 and abs(psnr - jobs["exact"]["psnr"]) < 0.05,
       "infer --target IMG.webp: the job's PSNR against the WebP (%.2f dB)" % psnr,
       (r.returncode, r.stdout, r.stderr))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
