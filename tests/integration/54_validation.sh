#!/bin/bash
# 54_validation.sh - one table of limits (proto/params.h) for vkinrd and
# vkinrctl: each value out of range is a usage error of the client (exit
# 2) and a -32602 of the daemon on the raw protocol, with the same
# sentence; the bounds themselves are accepted by both (lr 1 is refused by
# both, not accepted and then failed at start). `list --state bogus` is a
# usage error, `list --batch nosuch` an error, and repeating a state change
# (pause, resume, cancel twice) succeeds alike. The engine's options
# (--schedule, --warmup, --dilations, --precision) are checked alike and
# reach the engine.
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
import subprocess
from rpc import *
tap = Tap()
img = sample("v.png", 8, 8)
c = Client()

bad = [("epochs", "--epochs", 0), ("epochs", "--epochs", 10000001),
       ("width", "--width", 17), ("width", "--width", 1040),
       ("lr", "--lr", 1), ("lr", "--lr", 10), ("lr", "--lr", 0),
       ("seed", "--seed", -1), ("seed", "--seed", 2**53),
       ("priority", "--priority", 99999), ("priority", "--priority", -101),
       ("target_psnr", "--target-psnr", 0), ("target_psnr", "--target-psnr", 201)]
out = {}
for key, opt, v in bad:
    r = ctl("submit", "-q", opt, str(v), img)
    d = c.request("job.submit", {"image": {"png": png_b64(img)}, key: v})
    err = d.get("error", {})
    cmsg = r.stderr.splitlines()[0].split(": ", 1)[-1] if r.stderr else ""
    out[(key, v)] = (r.returncode, cmsg, err.get("code"), err.get("message"))
tap.ok(all(rc == 2 for rc, *_ in out.values()),
       "every value out of range: the client's usage error (exit 2)", out)
tap.ok(all(code == -32602 for _, _, code, _ in out.values()),
       "... and the daemon's -32602", out)
tap.ok(all(m and cm.replace(opt, '"%s"' % key) == m
           for (key, opt, v), (_, cm, _, m) in zip(bad, out.values())),
       "... with the same sentence", out)

good = [("--epochs", "10000000"), ("--width", "16"), ("--lr", "0.5"),
        ("--seed", str(2**53 - 1)), ("--priority", "-100"),
        ("--target-psnr", "200")]
ids = []
for opt, v in good:
    r = ctl("submit", "-q", "--epochs", "1000000", "--width", "16", opt, v, img)
    ids.append(r.stdout.strip())
    ctl("cancel", r.stdout.strip())
tap.ok(all(i.isdigit() for i in ids), "the bounds themselves are accepted", ids)

r1, r2 = ctl("list", "--state", "bogus"), ctl("list", "--batch", "nosuch")
tap.ok(r1.returncode == 2 and "bogus" in r1.stderr and r2.returncode == 3
       and "no batch nosuch" in r2.stderr,
       "list --state bogus: exit 2; list --batch nosuch: exit 3", (r1, r2))

j = ctl("submit", "-q", "--epochs", "1000000", "--width", "16", img).stdout.strip()
p1, p2 = ctl("pause", j), ctl("pause", j)
q1, q2 = ctl("resume", j), ctl("resume", j)
tap.ok([p1.returncode, p2.returncode, q1.returncode, q2.returncode] == [0] * 4,
       "pause twice, resume twice: exit 0 each", (p1, p2, q1, q2))
k1, k2 = ctl("cancel", j), ctl("cancel", j)
tap.ok(k1.returncode == 0 and k2.returncode == 0
       and c.call("job.get", {"job": j})["state"] == "cancelled",
       "cancel twice: exit 0 each, as pausing twice", (k1, k2))
# the engine's options (issue 11, item 11): words from the same tables
badw = [("schedule", "--schedule", "step"), ("precision", "--precision", "fp8"),
        ("dilations", "--dilations", "1,2,x"), ("dilations", "--dilations", "1,2,3,4,5,6,7,8,9"),
        ("dilations", "--dilations", "65"), ("warmup", "--warmup", "-1"),
        ("optimizer", "--optimizer", "sgd"), ("average", "--average", "swa"),
        ("plateau", "--plateau", "-1"), ("lr_min", "--lr-min", "1.5"),
        ("ema_decay", "--ema-decay", "1"), ("half_life", "--half-life", "0"),
        ("early_cycle", "--early-cycle", "-1"), ("decay", "--decay", "-1")]
numw = ("warmup", "plateau", "lr_min", "ema_decay", "half_life", "early_cycle",
        "decay")
outw = []
for key, opt, v in badw:
    r = ctl("submit", "-q", opt, v, img)
    d = c.request("job.submit", {"image": {"png": png_b64(img)},
                                 key: float(v) if key in numw else v})
    cmsg = r.stderr.splitlines()[0].split(": ", 1)[-1] if r.stderr else ""
    outw.append((r.returncode, d.get("error", {}).get("code"),
                 cmsg.replace(opt, '"%s"' % key) == d.get("error", {}).get("message")))
tap.ok(all(o == (2, -32602, True) for o in outw),
       "engine options out of range: exit 2 and -32602, the same sentence", outw)
r = ctl("submit", "-q", "--wait", "--epochs", "6", "--width", "16", "--lr", "0.002",
        "--schedule", "constant", "--warmup", "0", "--dilations", "1,2",
        "--precision", "fp32", img)
j = r.stdout.strip()
g = c.call("job.get", {"job": j}) if j.isdigit() else {}
hist = [json.loads(l) for l in open(os.path.join(os.environ["STATE"], "jobs", j,
                                                  "metrics.ndjson"))] if j.isdigit() else []
e = c.call("job.export", {"job": j}) if j.isdigit() else {}
blob = base64.b64decode(e.get("model", {}).get("safetensors", "")) if e else b""
meta = json.loads(blob[8:8 + int.from_bytes(blob[:8], "little")]).get("__metadata__", {}) if blob else {}
tap.ok(r.returncode == 0 and g.get("schedule") == "constant" and g.get("warmup") == 0
       and g.get("dilations") == "1,2" and g.get("precision") == "fp32"
       and [h["lr"] for h in hist] == [0.002] * 6 and meta.get("dilations") == "1,2",
       "submit --schedule constant --warmup 0 --dilations 1,2 --precision fp32: "
       "kept, and the engine ran with them", (r.stderr, g, [h["lr"] for h in hist], meta))
tap.ok(c.call("hello", {})["version"] != "", "the daemon still serves")
tap.done()
EOF_PY
stop_daemon
tap_done
