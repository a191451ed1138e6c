#!/bin/bash
# 62_from_file_errors.sh - `vkinrctl submit --from-file -` with a missing
# path and a file that is not a PNG among good ones: the good ones are
# submitted (one batch, their ids on stdout), the bad ones are named on
# stderr, and the exit status is 3. The daemon refuses a malformed batch
# id by name.
. "$(dirname "$0")/lib.bash"
tap_plan 7
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import subprocess
from rpc import *
tap = Tap()
CTL = os.path.join(os.path.dirname(os.environ["VKINRD"]), "vkinrctl")
ENV = dict(os.environ, VKINR_SOCKET=os.environ["SOCK"])

good = []
for i, (w, h) in enumerate(((24, 24), (32, 24), (24, 40))):
    path = os.path.join(T, "good%d.png" % i)
    subprocess.run([os.environ["MKSAMPLE"], path, str(w), str(h), str(i + 5)],
                   check=True, stdout=subprocess.DEVNULL)
    good.append(path)
missing = os.path.join(T, "no-such-image.png")
fake = os.path.join(T, "fake.png")
open(fake, "w").write("this is text, not a PNG\n")
listing = "\n".join([good[0], missing, good[1], "# a comment", "", fake, good[2]]) + "\n"

r = subprocess.run([CTL, "submit", "--from-file", "-", "-q", "--epochs", "5",
                    "--width", "16"], env=ENV, input=listing,
                   capture_output=True, text=True, timeout=120)
ids = r.stdout.splitlines()[:-1]
tap.ok(r.returncode == 3, "exit status 3", (r.returncode, r.stderr))
tap.ok(len(ids) == 3 and all(i.isdigit() for i in ids)
       and r.stdout.splitlines()[-1].startswith("batch "),
       "the three good images are submitted (their ids on stdout, then the batch)", r.stdout)
tap.ok(missing in r.stderr and fake in r.stderr,
       "the missing path and the non-PNG are named on stderr", r.stderr)
tap.ok(not any(g in r.stderr for g in good), "the good ones are not named as errors", r.stderr)

c = Client()
jobs = [c.call("job.get", {"job": i}) for i in ids]
tap.ok([j["name"] for j in jobs] == ["good0", "good1", "good2"]
       and len({j["batch"] for j in jobs}) == 1 and jobs[0]["batch"],
       "the jobs are the good images, in order, in one batch", jobs)
tap.ok(len(c.call("job.list")["jobs"]) == 3, "nothing else was submitted")

img = {"png": png_b64(good[0])}
codes = [c.request("job.submit", {"image": img, "batch": b}).get("error", {}).get("code")
         for b in ("has space", "x" * 33, "", 7, "dot.dot")]
tap.ok(codes == [-32602] * 5, "a malformed batch id is refused (-32602)", codes)
tap.done()
EOF_PY
stop_daemon
tap_done
