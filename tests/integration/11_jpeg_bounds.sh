#!/bin/bash
# 11_jpeg_bounds.sh - JPEGs a stranger might send, made byte by byte
# (hostile_images.py), against the real daemon: decoding costs no more
# than the bytes sent allow, and libjpeg's leniency is off.
#   - 600 bytes whose header says 16384x4096 pixels (no scan data):
#     refused at once from the size, as truncated or lying (-32003);
#   - a valid progressive file of 124 KiB with 883 scans, each walking
#     all of its 512 Ki blocks: refused for its scans, in seconds;
#   - a baseline file cut inside its scan (and, with PIL, a photo-like
#     one and a progressive one cut the same way): refused with libjpeg's
#     "Premature end of JPEG file" instead of being filled with grey;
#   - no job is made of any of it, a whole flat JPEG is still accepted,
#     and `vkinrd --fit` refuses the cut file with the same words.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import base64, io, random, subprocess, time
from rpc import *
from hostile_images import *
tap = Tap()
c = Client(timeout=120)

def send(data):
    t = time.time()
    r = c.request("job.submit", {"image": {"jpeg": base64.b64encode(data).decode()},
                                 "epochs": 2, "width": 16})
    return r, time.time() - t

def refused(r, *words):
    e = r.get("error", {})
    return e.get("code") == -32003 and all(w in e.get("message", "") for w in words)

lie = jpeg_without_scan_data(jpeg_restate_size(jpeg_flat_baseline(16, 16), 16384, 4096))
r, secs = send(lie)
tap.ok(len(lie) < 1200 and refused(r, "16384x4096", "at least 262144 bytes", "has %d" % len(lie))
       and secs < 5,
       "%d bytes saying 16384x4096 pixels: refused from its size in %.1f s" % (len(lie), secs), r)

many = jpeg_many_scans(8192, 4096)
r, secs = send(many)
tap.ok(refused(r, "more than 100 scans") and secs < 10,
       "a %d KiB progressive JPEG of 883 scans: refused for its scans in %.1f s"
       % (len(many) >> 10, secs), r)

flat = jpeg_flat_baseline(512, 512)
cut = flat[:len(flat) * 2 // 3]
r, _ = send(cut)
tap.ok(refused(r, "truncated or corrupt", "Premature end of JPEG file"),
       "a baseline JPEG cut inside its scan: refused with libjpeg's words", r)

try:
    from PIL import Image
except ImportError:
    Image = None
if Image is None:
    tap.ok(True, "# SKIP python3-pil is not installed (tests/deps.sh)")
else:
    random.seed(7)
    img = Image.new("RGB", (128, 96))
    img.putdata([(random.randrange(256), random.randrange(256), random.randrange(256))
                 for _ in range(128 * 96)])
    bad = []
    for kw in ({}, {"progressive": True}):
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=90, **kw)
        data = buf.getvalue()
        # well inside the (first) scan, and one byte short of the end
        for end in (jpeg_scan_start(data) + 200, len(data) - 1):
            r, _ = send(data[:end])
            if not refused(r, "Premature end of JPEG file"):
                bad.append((kw, end, len(data), r))
    tap.ok(not bad, "PIL's baseline and progressive JPEGs, cut: each refused", bad)

ok = c.request("job.submit", {"image": {"jpeg": base64.b64encode(jpeg_flat_baseline(24, 16)).decode()},
                              "epochs": 2, "width": 16})
jobs = c.call("job.list", {})["jobs"]
tap.ok("result" in ok and len(jobs) == 1 and c.call("hello")["protocol"] >= 1,
       "no job made of any of them; a whole JPEG is still accepted, the daemon serves",
       (ok, jobs))

path = os.path.join(T, "cut.jpg")
open(path, "wb").write(cut)
r = subprocess.run([os.environ["VKINRD"], "--fit", path, "--epochs", "1", "--width", "16", "-q",
                    "--recon", os.path.join(T, "cut.png")],
                   capture_output=True, text=True, timeout=120)
tap.ok(r.returncode != 0 and "Premature end of JPEG file" in r.stderr
       and not os.path.exists(os.path.join(T, "cut.png")),
       "vkinrd --fit refuses the cut JPEG with the same words", (r.returncode, r.stderr))
tap.ok(os.path.exists("/proc/%s" % os.environ["DPID"]), "the daemon is still up")
tap.done()
EOF_PY
stop_daemon
tap_done
