#!/bin/bash
# 36_rpc_jayson.sh - the client issue 36 item 15 names: jayson (npm), a
# JSON-RPC 2.0 client the project did not write, over the daemon's Unix
# socket (its tcp client takes a path). A call and its answer; an unknown
# method's error, as jayson reads it; and a batch (an array of requests,
# a notification among them), which vkinrd once answered -32600: jayson
# sorts the one answer array into its errors and successes, each matched
# to its request by id. jayson is not a Debian package: the test runs
# where node finds it (NODE_PATH, or VKINR_JAYSON naming the folder that
# holds node_modules/jayson, e.g. after `npm install jayson` there), and
# skips otherwise.
. "$(dirname "$0")/lib.bash"
tap_plan 3
need_device
if [ -n "${VKINR_JAYSON:-}" ]; then
	export NODE_PATH=$VKINR_JAYSON/node_modules${NODE_PATH:+:$NODE_PATH}
fi
if ! command -v node >/dev/null || ! node -e 'require("jayson")' 2>/dev/null; then
	for i in 1 2 3; do echo "ok $i # SKIP no node with jayson (npm install jayson; VKINR_JAYSON=DIR)"; done
	exit 0
fi
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
cat >"$T/j.js" <<'EOF_JS'
const jayson = require("jayson");
const c = jayson.client.tcp({ path: process.argv[2] });
const out = {};
c.request("hello", {}, (err, res) => {
  out.hello = err ? String(err) : res;
  c.request("no.such", {}, (err2, res2) => {
    out.unknown = err2 ? String(err2) : res2;
    const batch = [
      c.request("hello", {}, undefined, false),
      c.request("no.such", {}, undefined, false),
      c.request("job.list", {}, null, false),   // a notification
      c.request("job.list", {}, undefined, false),
    ];
    out.ids = batch.filter(r => "id" in r).map(r => r.id);
    c.request(batch, (err3, errors, successes) => {
      out.batch = err3 ? String(err3) : { errors, successes };
      console.log(JSON.stringify(out));
    });
  });
});
EOF_JS
timeout 60 node "$T/j.js" "$SOCK" >"$T/j.out" 2>"$T/j.err"
echo "rc=$?" >>"$T/j.err"
py() { python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))
sys.exit(not eval("(" + sys.argv[2] + ")"))' "$T/j.out" "$1"; }
check "jayson's call: hello answered, its result the daemon's" \
	py 'o["hello"]["result"]["daemon"] == "vkinrd"'
check "jayson's call of an unknown method: the error -32601, matched to the call" \
	py 'o["unknown"]["error"]["code"] == -32601'
check "jayson's batch (a notification among three calls): one answer each, sorted by id into errors and successes" \
	py 'len(o["batch"]["errors"]) == 1 and o["batch"]["errors"][0]["error"]["code"] == -32601 and
	    o["batch"]["errors"][0]["id"] == o["ids"][1] and
	    [s["id"] for s in o["batch"]["successes"]] == [o["ids"][0], o["ids"][2]] and
	    o["batch"]["successes"][0]["result"]["daemon"] == "vkinrd" and
	    "jobs" in o["batch"]["successes"][1]["result"]'
[ "$TAP_FAILED" = 0 ] || { cat "$T/j.err"; head -c 2000 "$T/j.out"; }
stop_daemon
tap_done
