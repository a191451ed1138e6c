#!/bin/bash
# 96_strict_requests.sh - the request parser keeps proto/PROTOCOL.md's
# promises where cJSON alone would not (issue 24, item 6):
#   - the id comes back as sent, byte for byte: 2^53 - 1, 1e400, -0, 1.50;
#   - a key given twice is refused (at the top, in params, in image), the
#     id echoed unless "id" is the key given twice;
#   - an escaped NUL (\u0000) in any string is refused (method, job id,
#     name), never cut there;
#   - an unknown key inside "image" is refused by name, as at the top;
#   - names with invisible characters (zero-width space, joiner, BOM, tag
#     characters, Hangul filler, soft hyphen) are refused as control
#     characters are, and the client refuses them too.
. "$(dirname "$0")/lib.bash"
tap_plan 9
need_device
start_daemon || { echo "not ok 1 - daemon starts"; exit 1; }
run_py <<'EOF_PY'
from rpc import *
tap = Tap()
c = Client()
img = sample("s.png", 16, 16)
b64 = png_b64(img)

def raw(line):
    """Sends one raw line, returns the raw answer line (bytes)."""
    c.send_raw(line + "\n")
    while b"\n" not in c.buf:
        c.buf += c.sock.recv(1 << 16)
    ans, c.buf = c.buf.split(b"\n", 1)
    return ans

ids = ["9007199254740991", "1e400", "-0", "1.50", "12345678901234567890123"]
got = [raw('{"jsonrpc":"2.0","id":%s,"method":"hello"}' % i) for i in ids]
tap.ok(all(g.startswith(b'{"jsonrpc":"2.0","id":%s,"result"' % i.encode())
           for g, i in zip(got, ids)),
       "a numeric id comes back exactly as sent", got)
e = raw('{"jsonrpc":"2.0","id":9007199254740991,"method":"job.get","params":{"job":"77"}}')
tap.ok(e.startswith(b'{"jsonrpc":"2.0","id":9007199254740991,"error"'),
       "an error carries the exact id too", e)

pre = '{"jsonrpc":"2.0","id":5,"method":"job.submit","params":'
dups = [raw(pre + '{"image":{"png":"%s"},"epochs":5,"epochs":100000000}}' % b64),
        raw(pre + '{"image":{"png":"%s","png":"%s"}}}' % (b64, b64)),
        raw('{"jsonrpc":"2.0","id":6,"method":"hello","method":"daemon.status"}'),
        raw('{"jsonrpc":"2.0","id":7,"id":8,"method":"hello"}'),
        raw(pre + '{"image":{"png":"%s"},"e\\u0070ochs":5,"epochs":6}}' % b64)]
d = [json.loads(x) for x in dups]
tap.ok(all(x.get("error", {}).get("code") == -32600 for x in d)
       and '"epochs"' in d[0]["error"]["message"] and '"params"' in d[0]["error"]["message"]
       and '"png"' in d[1]["error"]["message"]
       and [x["id"] for x in d] == [5, 5, 6, None, 5],
       "a key given twice is refused, named, wherever it is (escaped or not)", d)
tap.ok(c.call("job.list")["jobs"] == [], "no job was made from a request with a key twice")

nuls = [raw('{"jsonrpc":"2.0","id":1,"method":"hello\\u0000"}'),
        raw('{"jsonrpc":"2.0","id":2,"method":"job.get","params":{"job":"1\\u0000junk"}}'),
        raw(pre + '{"image":{"png":"%s"},"name":"cut\\u0000here"}}' % b64)]
n = [json.loads(x) for x in nuls]
fine = raw('{"jsonrpc":"2.0","id":3,"method":"hello","params":{"client":"a\\\\u0000b"}}')
tap.ok(all(x.get("error", {}).get("code") == -32700 and "NUL" in x["error"]["message"]
           for x in n) and b'"result"' in fine,
       "an escaped NUL in any string is refused (an escaped backslash before u0000 is not one)",
       (n, fine))

r = c.request("job.submit", {"image": {"png": b64, "path": "/etc/shadow"}, "epochs": 2, "width": 16})
tap.ok(r.get("error", {}).get("code") == -32602 and '"path"' in r["error"]["message"]
       and '"image"' in r["error"]["message"],
       "an unknown key inside image is refused by name", r)

hidden = {"zero-width space": "a\u200bb", "zero-width joiner": "a\u200db",
          "byte-order mark": "\ufeffcat", "tag characters": "cat\U000e0041\U000e007f",
          "Hangul filler": "\u3164", "soft hyphen": "ca\u00adt", "word joiner": "a\u2060b"}
rs = {k: c.request("job.submit", {"image": {"png": b64}, "epochs": 2, "width": 16, "name": v})
      for k, v in hidden.items()}
tap.ok(all(x.get("error", {}).get("code") == -32602 and "invisible" in x["error"]["message"]
           for x in rs.values()),
       "names with invisible characters are refused, saying which", rs)
ok = c.request("job.submit", {"image": {"png": b64}, "epochs": 2, "width": 16,
                              "name": "Größe 日本 ✓ \u00a0x"})
tap.ok("result" in ok, "visible text (and a no-break space) is still a name", ok)

p = ctl("submit", img, "--epochs", "2", "--width", "16", "--name", "a\u200bb")
tap.ok(p.returncode != 0 and "name" in p.stderr, "vkinrctl refuses such a name before sending",
       (p.returncode, p.stdout, p.stderr))
tap.done()
EOF_PY
tap_done
