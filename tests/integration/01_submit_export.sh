#!/bin/bash
# 01_submit_export.sh - submit -> live progress -> done -> export, through
# raw protocol lines: hello (typed through socat, as PROTOCOL.md shows),
# submit, subscribe (every epoch once, in order, then the final state),
# job.get / job.list fields, export (a safetensors package and a PNG), and
# the permissions of the socket and the state files.
. "$(dirname "$0")/lib.bash"
tap_plan 11
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }

out=$(echo '{"jsonrpc":"2.0","id":1,"method":"hello"}' | socat -t 5 - UNIX-CONNECT:"$SOCK")
case $out in *'"protocol":1'*) echo "ok 1 - hello through socat";;
	*) echo "not ok 1 - hello through socat"; echo "# $out"; TAP_FAILED=1;; esac
TAP_N=1

run_py <<'EOF_PY'
import base64, os, stat, struct
from rpc import *
tap = Tap()
img = sample("a.png", 24, 24)
c = Client()
job = submit(c, img, epochs=40, width=16, seed=3, name="first")
tap.ok(job == "1", "job.submit returns the first id", job)
epochs, states, metrics = follow(c, job)
tap.ok(epochs == list(range(1, 41)), "every epoch streamed once, in order", epochs)
tap.ok(states and states[-1] == "done", "job.state done ends the stream", states)
j = c.call("job.get", {"job": job})
need = ["id", "name", "state", "epoch", "epochs", "psnr", "best_psnr", "width",
        "image", "device", "created", "started", "finished", "uid", "priority",
        "lr", "seed"]
tap.ok(all(k in j for k in need) and j["epoch"] == 40 and j["name"] == "first"
       and j["image"] == {"width": 24, "height": 24} and j["width"] == 16
       and j["psnr"] == j["model_psnr"], "job.get carries the job's fields", j)
# auto precision: fp32 on a device without tensor cores (what CI has)
tap.ok(j.get("precision_used") in ("fp16", "fp32"),
       "job.get says which precision ran", j.get("precision_used"))
l = c.call("job.list")
tap.ok([x["id"] for x in l["jobs"]] == ["1"], "job.list lists it", l)
x = c.call("job.export", {"job": job})
model = base64.b64decode(x["model"]["safetensors"])
png = base64.b64decode(x["recon"]["png"])
hl = struct.unpack("<Q", model[:8])[0]
tap.ok(len(model) > 8 + hl and model[8:9] == b"{" and png[:8] == b"\x89PNG\r\n\x1a\n"
       and isinstance(x["psnr"], float), "job.export: safetensors, png and psnr")
tap.ok(x["psnr"] == j.get("model_psnr"), "export psnr is the model's", (x["psnr"], j))
sock_mode = stat.S_IMODE(os.stat(SOCK).st_mode)
d = os.path.join(os.environ["STATE"], "jobs", job)
modes = {f: stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode) for f in os.listdir(d)}
tap.ok(sock_mode == 0o600 and stat.S_IMODE(os.stat(d).st_mode) == 0o700
       and all(m == 0o600 for m in modes.values()), "socket 0600, state 0700/0600",
       (oct(sock_mode), modes))
lines = open(os.path.join(d, "metrics.ndjson")).read().splitlines()
tap.ok([json.loads(s)["epoch"] for s in lines] == list(range(1, 41)),
       "metrics.ndjson has every epoch once")
tap.done()
EOF_PY
stop_daemon
tap_done
