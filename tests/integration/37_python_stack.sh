#!/bin/bash
# 37_python_stack.sh - the Python module (python/vkinr.py, numpy) and the
# weight-space export. A batch of three images is fitted by the daemon;
# `export BATCH --stack` writes one safetensors file whose tensors have a
# leading job dimension, equal to each job's own package, with the ids,
# names, sources and PSNRs in its metadata; vkinr.py renders each job's
# package (and its slice of the stack) as vkinrd's infer does, at scale 1,
# at scale 2 and at a size that is no integer scale (within 1/255: the
# same fp32 arithmetic, rounded to 8 bits once each side), with PyTorch as
# well where it is installed; it refuses a package whose size was edited;
# a batch of two widths is refused as a stack. Skipped without numpy and
# PIL in /usr/bin/python3.
. "$(dirname "$0")/lib.bash"
tap_plan 8
export PATH=/usr/bin:$PATH
if ! python3 -c 'import PIL, numpy' 2>/dev/null; then
	for i in $(seq 1 8); do echo "ok $i # SKIP needs numpy and PIL in /usr/bin/python3"; done
	exit 0
fi
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH} run_py <<'EOF_PY'
import json, subprocess
import numpy as np
from PIL import Image
from rpc import *
import vkinr
tap = Tap()
CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"])
p = lambda n: os.path.join(T, n)

def ctl(*args):
    return subprocess.run([CTL] + list(args), env=ENV, capture_output=True,
                          text=True, timeout=300)

os.mkdir(p("imgs"))
for i, (name, w, h) in enumerate([("a", 20, 16), ("b", 18, 22), ("c", 24, 14)]):
    subprocess.run([os.environ["MKSAMPLE"], p("imgs/%s.png" % name), str(w), str(h),
                    str(i + 2)], check=True, stdout=subprocess.DEVNULL)
r = ctl("submit", p("imgs"), "-q", "--epochs", "25", "--width", "16", "--lr", "1e-3")
ids, batch = r.stdout.splitlines()[:-1], r.stdout.splitlines()[-1].split()[-1]
w = ctl("wait", *ids)
e = ctl("export", batch, "--dir", p("out"))
s = ctl("--json", "export", batch, "--stack", p("stack.safetensors"))
tap.ok(r.returncode == 0 and w.returncode == 0 and e.returncode == 0 and s.returncode == 0
       and json.loads(s.stdout)["jobs"] == 3,
       "export BATCH --stack writes the batch's three networks",
       (r.stderr, w.stderr, e.stderr, s.stdout, s.stderr))
stack = vkinr.load_stack(p("stack.safetensors"))
c = Client()
jobs = [c.call("job.get", {"job": i}) for i in ids]
pkgs = [vkinr.load(p("out/%s.safetensors" % j["name"])) for j in jobs]
same = all(np.array_equal(stack["tensors"][k][i], pkgs[i].tensors[k])
           for i in range(3) for k in pkgs[0].tensors)
tap.ok(stack["count"] == 3 and stack["tensors"]["pw.0.weight"].shape == (3, 16, 16, 1, 1)
       and same and stack["jobs"] == ids and stack["names"] == [j["name"] for j in jobs]
       and stack["sources"] == [j.get("source") for j in jobs]
       and all(abs(stack["psnrs"][i] - jobs[i]["psnr"]) < 1e-3 for i in range(3))
       and stack["widths"] == [20, 18, 24],
       "each tensor has a leading job dimension, each slice the job's package; "
       "ids, names, sources and PSNRs in the metadata",
       {k: stack.get(k) for k in ("jobs", "names", "sources", "psnrs")})

def vk(model, out, *args):
    r = ctl("infer", model, "-o", out, "-f", *args)
    return np.asarray(Image.open(out).convert("RGB"), dtype=np.int16) if r.returncode == 0 else None

def ours(img):
    return np.clip(np.nan_to_num(img), 0, 1) * 255 + 0.5

worst = {}
for how, args, kw in [("scale 1", [], {}), ("scale 2", ["--scale", "2"], {"scale": 2}),
                      ("31x29", ["--size", "31x29"], {"size": (31, 29)})]:
    for i, j in enumerate(jobs):
        theirs = vk(p("out/%s.safetensors" % j["name"]), p("vk.png"), *args)
        mine = ours(vkinr.render(pkgs[i], **kw)).astype(np.int16) if theirs is not None else None
        d = 999 if theirs is None or mine.shape != theirs.shape else int(np.abs(mine - theirs).max())
        worst[how] = max(worst.get(how, 0), d)
print("# largest difference in 8-bit steps: %s" % worst)
tap.ok(worst["scale 1"] <= 1, "vkinr.render of each package is vkinrd's render (within 1/255)", worst)
tap.ok(worst["scale 2"] <= 1 and worst["31x29"] <= 1,
       "and at scale 2 and at 31x29 (the box filter) too", worst)
sl = vkinr.render(vkinr.stack_package(stack, 1))
tap.ok(np.array_equal(sl, vkinr.render(pkgs[1])), "a slice of the stack renders as its package")
try:
    import torch
    t = vkinr.render(pkgs[0], scale=2, backend="torch")
    n = vkinr.render(pkgs[0], scale=2)
    tap.ok(np.abs(t - n).max() < 1e-4, "PyTorch renders as numpy does", float(np.abs(t - n).max()))
except ImportError:
    tap.n += 1
    print("ok %d # SKIP torch is not installed" % tap.n, flush=True)
raw = open(p("out/%s.safetensors" % jobs[0]["name"]), "rb").read()
n = int.from_bytes(raw[:8], "little")
head = json.loads(raw[8:8 + n])
head["__metadata__"]["height"] = "99"
h = json.dumps(head).encode()
open(p("edited.safetensors"), "wb").write(len(h).to_bytes(8, "little") + h + raw[8 + n:])
try:
    vkinr.load(p("edited.safetensors"))
    tap.ok(False, "vkinr.load refuses a package whose size was edited")
except ValueError as err:
    tap.ok("edited" in str(err), "vkinr.load refuses a package whose size was edited", str(err))
r2 = ctl("submit", p("imgs/a.png"), "--epochs", "5", "--width", "32", "-q")
mixed = r2.stdout.split()[0] if r2.returncode == 0 else ""
ctl("wait", mixed)
r = ctl("export", ids[0], mixed, "--stack", p("mixed.safetensors"))
tap.ok(r.returncode != 0 and "one shape" in r.stderr and not os.path.exists(p("mixed.safetensors")),
       "networks of two widths are refused as a stack, nothing written", (r.returncode, r.stderr))
tap.done()
EOF_PY
stop_daemon
tap_done
