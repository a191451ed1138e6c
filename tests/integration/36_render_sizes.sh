#!/bin/bash
# 36_render_sizes.sh - `vkinrctl infer` at any size, through the daemon:
# --scale 1 writes the same PNG as a plain infer (bit for bit); --scale 3
# is 3W x 3H and its pixels at the trained pixels' centres (3x + 1, 3y + 1)
# are those of the scale-1 render; --size renders a size that is not an
# integer scale, --crop a region of the same pixels; model.render says
# what it made; a package whose stored width was edited by hand is
# refused with a sentence saying so (exit 1, nothing written); views
# outside the image are refused (-32602, exit 2 from the client's checks).
. "$(dirname "$0")/lib.bash"
tap_plan 9
export PATH=/usr/bin:$PATH
if ! python3 -c 'import PIL, numpy' 2>/dev/null; then
	for i in $(seq 1 9); do echo "ok $i # SKIP needs python3 with PIL and numpy"; done
	exit 0
fi
need_device
"$MKSAMPLE" "$T/img.png" 30 22 5 >/dev/null
"$VKINRD" --fit "$T/img.png" --width 16 --epochs 30 --lr 1e-3 -q \
	--model "$T/m.safetensors" --recon "$T/r.png" >/dev/null 2>&1 ||
	{ echo "not ok 1 - the fit"; exit 1; }
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import os, subprocess, json, struct
import numpy as np
from PIL import Image
from rpc import *
tap = Tap()
CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"])
M = os.path.join(T, "m.safetensors")

def infer(*args, model=M):
    return subprocess.run([CTL, "--json", "infer", model] + list(args), env=ENV,
                          capture_output=True, text=True, timeout=300)

def pixels(name):
    return np.asarray(Image.open(os.path.join(T, name)).convert("RGB"), dtype=np.int16)

p = lambda n: os.path.join(T, n)
a, b = infer("-o", p("plain.png")), infer("-o", p("one.png"), "--scale", "1")
tap.ok(a.returncode == 0 and b.returncode == 0 and
       open(p("plain.png"), "rb").read() == open(p("one.png"), "rb").read(),
       "--scale 1 writes the plain render's PNG, byte for byte", (a.stderr, b.stderr))
r = infer("-o", p("three.png"), "--scale", "3")
info = json.loads(r.stdout) if r.returncode == 0 else {}
one, three = pixels("plain.png"), pixels("three.png") if r.returncode == 0 else None
tap.ok(r.returncode == 0 and three.shape == (66, 90, 3) and
       info.get("scale") == 3 and info.get("resampled") is False and
       info.get("width") == 90 and info.get("height") == 66,
       "--scale 3 renders 90x66, an exact evaluation", (r.stdout, r.stderr))
centres = three[1::3, 1::3] if three is not None else None
tap.ok(centres is not None and np.array_equal(centres, one),
       "at scale 3 the pixels at the trained centres are the scale-1 render's",
       None if centres is None else int(np.abs(centres - one).max()))
tap.ok(three is not None and np.abs(three[0::3, 0::3] - one).mean() > 0.2,
       "and the pixels between them are new (not copies)")
r = infer("-o", p("crop.png"), "--scale", "3", "--crop", "40x20+25+31")
tap.ok(r.returncode == 0 and three is not None and
       np.array_equal(pixels("crop.png"), three[31:51, 25:65]),
       "--crop 40x20+25+31 is that region of the scale-3 render", r.stderr)
r = infer("-o", p("size.png"), "--size", "100x40")
info = json.loads(r.stdout) if r.returncode == 0 else {}
tap.ok(r.returncode == 0 and pixels("size.png").shape == (40, 100, 3) and
       info.get("scale") == 4 and info.get("resampled") is True,
       "--size 100x40: the next integer scale (4), box-filtered", (r.stdout, r.stderr))
# the stored width edited by hand (the header's JSON rewritten)
raw = open(M, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
head["__metadata__"]["width"] = "44"
h = json.dumps(head).encode()
h += b" " * (-len(h) % 8)
open(p("edited.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + raw[8 + n:])
r = infer("-o", p("edited.png"), model=p("edited.safetensors"))
tap.ok(r.returncode != 0 and "edited" in r.stderr and "size_check" in r.stderr
       and not os.path.exists(p("edited.png")),
       "a package whose width was edited is refused, saying so", (r.returncode, r.stderr))
# the protocol: a view outside the image
c = Client()
b64 = base64.b64encode(raw).decode()
e = c.request("model.render", {"model": {"safetensors": b64}, "scale": 2,
                            "crop": {"x": 50, "y": 0, "width": 20, "height": 4}})
tap.ok(e.get("error", {}).get("code") == -32602 and "within" in e["error"]["message"],
       "model.render refuses a crop outside the render (-32602)", e.get("error"))
r = infer("-o", p("x.png"), "--scale", "2", "--size", "3x3")
r2 = infer("-o", p("x.png"), "--crop", "bad")
tap.ok(r.returncode == 2 and r2.returncode == 2 and "--crop takes" in r2.stderr,
       "the client refuses --scale with --size, and a crop it cannot read (exit 2)",
       (r.stderr, r2.stderr))
tap.done()
EOF_PY
stop_daemon
tap_done
