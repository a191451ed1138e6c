#!/bin/bash
# 86_hostile_values.sh - text and numbers a client sends, and files read
# back at start.
#   - a job name with an escape sequence, a bidirectional override or a
#     newline, or too long, is refused naming the field and the character;
#     printable UTF-8 is kept byte for byte;
#   - replies stay valid UTF-8 even when an error message quotes (and
#     cuts) a long multibyte method name;
#   - a job id that is a fraction or beyond 2^53 is refused, never rounded
#     onto another job; a seed of 2^53 - 1 survives a restart exactly and
#     2^53 + 1 (which JSON would round) is refused;
#   - damaged files in one job's folder (state.json, request.json, a
#     metrics line, a missing request.json) fail that job alone with the
#     reason in its error; the others are untouched and no id is reused.
. "$(dirname "$0")/lib.bash"
tap_plan 10
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("h.png", 16, 16)
b64 = png_b64(img)
def sub(**kw):
    p = {"image": {"png": b64}, "epochs": 2, "width": 16}
    p.update(kw)
    return c.request("job.submit", p)

bad = [sub(name=n) for n in ("x\x1b]0;owned\x07", "a\u202eb", "two\nlines", "n" * 128, "del\x7f")]
tap.ok(all(r.get("error", {}).get("code") == -32602 and '"name"' in r["error"]["message"]
           for r in bad) and "U+001B" in bad[0]["error"]["message"]
       and "128 bytes" in bad[3]["error"]["message"],
       "names with controls, overrides, newlines or over 127 bytes are refused, saying why",
       [r.get("error", r) for r in bad])
name = "Größe 日本 ✓ " + "é" * 50
ok = sub(name=name)
tap.ok("result" in ok and c.call("job.get", {"job": ok["result"]["job"]})["name"] == name,
       "a printable UTF-8 name is kept exactly", ok)

c.send_raw(json.dumps({"jsonrpc": "2.0", "id": "ü" * 3, "method": "日" * 700}) + "\n")
raw = b""
while not raw.endswith(b"\n"):
    raw += c.sock.recv(1 << 16)
try:
    r = json.loads(raw.decode("utf-8"))
    good = r["id"] == "ü" * 3 and r["error"]["code"] == -32601
except Exception as e:
    good, r = False, (e, raw[:200])
tap.ok(good, "an error quoting a cut multibyte method name is valid UTF-8 and echoes the id", r)

first = ok["result"]["job"]
rs = [c.request("job.get", {"job": x}) for x in (float(first) + 0.5, 2 ** 53 + 2, -1)]
tap.ok(all(r.get("error", {}).get("code") == -32602 for r in rs)
       and c.call("job.get", {"job": int(first)})["id"] == first,
       "a fractional, huge or negative job id is refused; an exact integer works", rs)
big = sub(seed=2 ** 53 + 1)
seeded = sub(seed=2 ** 53 - 1)
tap.ok(big.get("error", {}).get("code") == -32602 and "result" in seeded,
       "a seed of 2^53 + 1 is refused, 2^53 - 1 accepted", (big, seeded))
open(os.path.join(T, "seeded"), "w").write(seeded["result"]["job"])
ids = [first, seeded["result"]["job"]] + [sub()["result"]["job"] for _ in range(4)]
for j in ids:
    wait_state(c, j, ("done", "failed"), timeout=120)
open(os.path.join(T, "ids"), "w").write(" ".join(ids))
tap.done()
EOF_PY
TAP_N=5
stop_daemon
read -r -a ids <"$T/ids"
J=$STATE/jobs
echo '{"state": "runn' >"$J/${ids[2]}/state.json"
echo 'not json' >"$J/${ids[3]}/request.json"
sed -i '1s/.*/{"epoch": "x"}/' "$J/${ids[4]}/metrics.ndjson"
printf '{"epoch":3}\n' >>"$J/${ids[4]}/metrics.ndjson"
rm "$J/${ids[5]}/request.json"
start_daemon || { echo "not ok 6 - daemon restarts"; exit 1; }
run_py "${ids[@]}" <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
ids = sys.argv[1:]
seeded = open(os.path.join(T, "seeded")).read()
tap.ok(c.call("job.get", {"job": seeded})["seed"] == 2 ** 53 - 1,
       "the seed 2^53 - 1 is the same after a restart", c.call("job.get", {"job": seeded}))
g = {j: c.call("job.get", {"job": j}) for j in ids}
def failed_with(j, what):
    return g[j]["state"] == "failed" and what in g[j]["error"]
tap.ok(failed_with(ids[2], "state.json") and failed_with(ids[3], "request.json")
       and failed_with(ids[4], "metrics.ndjson") and failed_with(ids[5], "request.json is missing"),
       "each damaged job is failed with the file and the cause in its error",
       {j: (g[j]["state"], g[j]["error"]) for j in ids[2:]})
tap.ok(g[ids[0]]["state"] == "done" and g[ids[1]]["state"] == "done",
       "the undamaged jobs are untouched", [g[j]["state"] for j in ids[:2]])
r = c.request("job.resume", {"job": ids[2]})
tap.ok(r.get("error", {}).get("code") == -32002, "a damaged job cannot be resumed", r)
new = c.call("job.submit", {"image": {"png": png_b64(os.path.join(T, "h.png"))}, "epochs": 1, "width": 16})["job"]
tap.ok(int(new) > max(int(j) for j in ids) and c.call("job.remove", {"job": ids[5]})["removed"],
       "a new job gets a new id; a damaged job can be removed", new)
tap.done()
EOF_PY
stop_daemon
tap_done
