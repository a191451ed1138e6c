#!/bin/bash
# 60b_submit_window.sh - `vkinrctl submit DIR` sends a folder's images
# several at a time on one connection (a window of requests before their
# answers): 150 small images, with a file that is not an image (refused by
# the client) and a PNG cut short (refused by the daemon) among them. Every other image becomes a job, the
# jobs are numbered in the images' order, each refusal is named, the
# exit status is 3, and the daemon serves another client meanwhile.
. "$(dirname "$0")/lib.bash"
tap_plan 5
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import subprocess
from rpc import *
tap = Tap()
CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"])

imgs = os.path.join(T, "many")
os.mkdir(imgs)
names = ["img%03d" % i for i in range(150)]
for i, n in enumerate(names):
    subprocess.run([os.environ["MKSAMPLE"], os.path.join(imgs, n + ".png"),
                    "8", "8", str(i + 1)], check=True, stdout=subprocess.DEVNULL)
# img040 not an image; img090 a PNG cut inside its data
open(os.path.join(imgs, "img040.png"), "w").write("not an image at all\n")
good = open(os.path.join(imgs, "img091.png"), "rb").read()
open(os.path.join(imgs, "img090.png"), "wb").write(good[:len(good) // 2])
refused = {"img040", "img090"}

c = Client()
r = subprocess.run([CTL, "submit", imgs, "-q", "--epochs", "1", "--width", "16"],
                   env=ENV, capture_output=True, text=True, timeout=300)
lines = r.stdout.splitlines()
ids = [int(x) for x in lines if x.isdigit()]
tap.ok(r.returncode == 3 and len(ids) == 148,
       "submit DIR: 148 jobs, exit status 3 for the two refused",
       (r.returncode, len(ids), r.stderr[-500:]))
tap.ok("img040.png" in r.stderr and "img090.png" in r.stderr,
       "both refusals are named on stderr", r.stderr[-800:])
tap.ok(ids == sorted(ids) and len(set(ids)) == len(ids),
       "the job ids ascend", ids[:10])
got = [c.call("job.get", {"job": str(i)})["name"] for i in ids]
tap.ok(got == [n for n in names if n not in refused],
       "the jobs are numbered in the images' order", got[:45])
tap.ok(isinstance(c.call("job.list", {}), (list, dict)),
       "another client is served", None)
EOF_PY
