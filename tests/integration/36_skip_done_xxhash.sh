#!/bin/bash
# 36_skip_done_xxhash.sh - the key --skip-done compares is XXH3-128 from
# Debian's libxxhash, as issue 36 asks ("xxHash for --skip-done's content
# key"), where it was two FNV-1a streams made by hand:
#   - a job's key is "k2-" and XXH3-128 (high 64 bits, then low) over
#     "png=SIZE;", the file's bytes and the options in the table's order,
#     the same figure libxxhash gives when asked through ctypes;
#   - a job submitted before, whose key is the first form ("k1-", two
#     FNV-1a streams, mixed), still covers its image: submit --skip-done
#     skips it (-q prints that job's id) and makes no job.
. "$(dirname "$0")/lib.bash"
tap_plan 2
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import ctypes, json, os, subprocess, sys
from rpc import *
tap = Tap()
c = Client()
img = sample("k.png", 8, 8)
png = open(img, "rb").read()
job = ctl("submit", "-q", "--epochs", "1", "--width", "16", img).stdout.strip()
key = c.call("job.get", {"job": job}).get("key", "")

class H(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]
lib = ctypes.CDLL("libxxhash.so.0")
lib.XXH3_128bits.restype = H
lib.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
data = b"png=%d;" % len(png) + png + b";epochs=1;width=16"
h = lib.XXH3_128bits(data, len(data))
tap.ok(key == "k2-%016x%016x" % (h.high64, h.low64),
       "a job's key is k2- and XXH3-128 over the image and its options, as libxxhash gives it",
       (key, "k2-%016x%016x" % (h.high64, h.low64)))

# the first form, as vkinrctl made it before
M = (1 << 64) - 1
def fnv(hv, b):
    for x in b:
        hv = ((hv ^ x) * 0x100000001b3) & M
    return hv
def mix(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
img2 = os.path.join(os.environ["T"], "old.png")  # another picture than k.png
subprocess.run([os.environ["MKSAMPLE"], img2, "8", "8", "5"], check=True, capture_output=True)
old = open(img2, "rb").read()
tail = b";epochs=1;width=16"
k1 = "k1-%016x%016x" % (mix(fnv(fnv(0xcbf29ce484222325, old), tail)),
                        mix(fnv(fnv(0x84222325cbf29ce4, old), tail)))
before = submit(c, img2, epochs=1, width=16, key=k1, name="old")
wait_state(c, before, ("done",))
n = len(c.call("job.list", {})["jobs"])
r = ctl("submit", "-q", "--epochs", "1", "--width", "16", "--skip-done", img2)
tap.ok(r.returncode == 0 and r.stdout.split() == [before] and
       len(c.call("job.list", {})["jobs"]) == n,
       "--skip-done still knows a job of the first key (k1-): skipped, its id printed, no job made",
       (r.returncode, r.stdout, r.stderr, k1))
sys.exit(tap.done())
EOF_PY
stop_daemon
tap_done
