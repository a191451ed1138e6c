#!/bin/bash
# 65_recipe.sh - one training recipe everywhere: `vkinrctl submit` recipe
# options (the loss terms' weights too) reach the job (job.get's keys,
# `vkinrctl show`), the model package records the recipe and which
# weights it holds, a bad recipe is
# refused with a sentence naming the key, job.get shows the default lr
# and warmup for the width from submission, and a job with Muon and an
# average resumes after a restart and finishes.
. "$(dirname "$0")/lib.bash"
tap_plan 6
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import re, struct
from rpc import *
tap = Tap()
img = sample("r.png", 20, 16)
c = Client()

r = ctl("submit", "-q", "--wait", "--epochs", "20", "--width", "16", "--lr",
        "3e-3", "--optimizer", "muon", "--schedule", "linear", "--warmup", "4",
        "--plateau", "2", "--lr-min", "0.2", "--half-life", "7",
        "--early-cycle", "3", "--average", "ema",
        "--ema-decay", "0.9", "--ssim", "0.2", "--grad", "0.5", "--chroma",
        "0.25", img)
job = r.stdout.strip()
j = c.call("job.get", {"job": job}) if job.isdigit() else {}
want = {"optimizer": "muon", "schedule": "linear", "warmup": 4, "plateau": 2,
        "lr_min": 0.2, "half_life": 7, "early_cycle": 3, "average": "ema",
        "ema_decay": 0.9, "ssim": 0.2,
        "grad": 0.5, "chroma": 0.25}
got = {k: j.get(k) for k in want}
tap.ok(r.returncode == 0 and j.get("state") == "done" and got == want,
       "submit's recipe options reach the job", (r.returncode, r.stderr, got))

show = ctl("show", job, timeout=30).stdout
tap.ok(re.search(r"^  optimizer +muon$", show, re.M) and
       re.search(r"^  average +ema$", show, re.M) and
       re.search(r"^  ema_decay +0.9$", show, re.M),
       "vkinrctl show prints the recipe", show)

e = c.call("job.export", {"job": job})
blob = base64.b64decode(e["model"]["safetensors"])
n = struct.unpack("<Q", blob[:8])[0]
meta = json.loads(blob[8:8 + n]).get("__metadata__", {})
tap.ok(meta.get("optimizer") == "muon" and meta.get("average") == "ema"
       and re.fullmatch(r"live|average|best \((live|average), epoch \d+\)",
                        meta.get("weights", "")) and "recipe" in meta
       and meta.get("version") == "2" and meta.get("early_cycle") == "3"
       and float(meta.get("ssim", "nan")) == 0.2
       and float(meta.get("chroma", "nan")) == 0.25,
       "the package records the recipe and which weights it holds", meta)

bad = c.request("job.submit", {"image": {"png": png_b64(img)},
                               "optimizer": "sgd"})
err = bad.get("error", {})
bad2 = c.request("job.submit", {"image": {"png": png_b64(img)},
                                "ema_decay": 2})
bad3 = c.request("job.submit", {"image": {"png": png_b64(img)},
                                "ssim": -1})
tap.ok(err.get("code") == -32602 and "optimizer" in err.get("message", "")
       and bad2.get("error", {}).get("code") == -32602
       and "ssim" in bad3.get("error", {}).get("message", ""),
       "a bad recipe is refused with a sentence naming the key",
       (bad, bad2, bad3))

# the width-dependent default rate and warmup: known at submission when
# width is given, else those of the devices' default width (64 on a CPU);
# an explicit warmup is kept; "defaults" names what was left out
w64 = c.call("job.get", {"job": submit(c, img, epochs=1, width=64)})
w16 = c.call("job.get", {"job": submit(c, img, epochs=1, width=16)})
w16k = c.call("job.get", {"job": submit(c, img, epochs=1, width=16, warmup=10)})
auto = c.call("job.get", {"job": submit(c, img, epochs=1)})
tap.ok(abs(w64["lr"] - 6e-3 * (32 / 64) ** 0.5) < 1e-9 and w64["warmup"] == 10
       and abs(w16["lr"] - 6e-3) < 1e-12 and w16["warmup"] == 50
       and w16k["warmup"] == 10 and w16k["defaults"] == ["lr"]
       and w16["defaults"] == ["lr", "warmup"]
       and auto["width"] in (64, 512) and auto["lr"] > 0
       and auto["defaults"] == ["width", "lr", "warmup"] and auto["warmup"] == 10,
       "job.get shows the default lr and warmup for the width from submission",
       (w64, w16, w16k, auto))

# Muon and the average through a restart: the checkpoint carries them
long = submit(c, img, epochs=400, width=16, lr=3e-3,
              optimizer="muon", average="ema")
wait_epoch(c, long, 5)
json.dump({"job": long}, open(os.path.join(T, "keep.json"), "w"))
tap.done()
EOF_PY
TAP_N=5
stop_daemon
start_daemon || { echo "not ok 6 - daemon restarts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
job = json.load(open(os.path.join(T, "keep.json")))["job"]
j = wait_state(c, job, ("done", "failed"), timeout=600)
tap.ok(j["state"] == "done" and j["optimizer"] == "muon",
       "a Muon + EMA job resumes after a restart and finishes", j)
tap.done()
EOF_PY
stop_daemon
tap_done
