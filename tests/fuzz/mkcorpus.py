#!/usr/bin/env python3
"""mkcorpus.py - writes the seed corpora of the fuzz targets.

    python3 tests/fuzz/mkcorpus.py      (from the repository root)

tests/fuzz/corpus/fuzz_request/: NDJSON byte streams as a client sends
them. valid-* reach deep into the methods (a submit, then every job
method); bad-* are malformed: truncated JSON, wrong types, huge numbers,
deep nesting, invalid UTF-8, NUL bytes, oversized strings, unknown methods
and parameters, junk. tests/integration/80_bad_input.sh sends every bad-*
file to the real daemon.

tests/fuzz/corpus/fuzz_png/: ok-* are small valid PNGs of each colour type;
bad-* are broken: truncated, bad CRC, zero and huge dimensions, a zlib bomb
(a 16384x16384 header over a few KiB of deflated zeros), bad palettes, bad
zlib data, garbage. The *jpeg-* seeds other than bad-jpeg were written
once by PIL and are kept by hand (a JPEG on its side with EXIF orientation
6, grey, progressive, truncated, a frame header claiming 60000x60000, an
EXIF directory running past its marker). 80_bad_input.sh submits every
bad-* one.

tests/fuzz/corpus/fuzz_safetensors/: a valid file and broken ones.

The files are committed; rerun this after changing it. Crashing inputs the
fuzzers find are added by hand as crash-* files.
"""
import base64, json, os, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def out(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------------ PNG

def chunk(kind, body, crc=None):
    c = zlib.crc32(kind + body) if crc is None else crc
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", c & 0xffffffff)


SIG = b"\x89PNG\r\n\x1a\n"


def png(w, h, depth=8, ctype=2, rows=None, interlace=0, plte=None, extra=b"",
        idat=None, ihdr_crc=None, idat_crc=None, end=True):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace)
    s = SIG + chunk(b"IHDR", ihdr, ihdr_crc)
    if plte is not None:
        s += chunk(b"PLTE", plte)
    s += extra
    if idat is None:
        chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
        rowbytes = (w * chans * depth + 7) // 8
        raw = rows if rows is not None else b"".join(
            b"\x00" + bytes((x * 37 + y * 11) & 0xff for x in range(rowbytes))
            for y in range(h))
        idat = zlib.compress(raw)
    s += chunk(b"IDAT", idat, idat_crc)
    if end:
        s += chunk(b"IEND", b"")
    return s


def png_seeds():
    t = "fuzz_png"
    out(t, "ok-rgb8", png(4, 3))
    out(t, "ok-grey1", png(9, 2, depth=1, ctype=0))
    out(t, "ok-grey-alpha16", png(3, 3, depth=16, ctype=4))
    out(t, "ok-rgba16-interlaced", png(5, 5, depth=16, ctype=6, interlace=1))
    out(t, "ok-palette4", png(6, 2, depth=4, ctype=3, plte=bytes(range(48)),
                              rows=b"".join(b"\x00\x01\x23\x45" for _ in range(2))))
    out(t, "ok-text-chunk", png(2, 2, extra=chunk(b"tEXt", b"Comment\x00hello")))
    good = png(8, 8)
    out(t, "bad-truncated-header", good[:20])
    out(t, "bad-truncated-idat", good[:len(good) - 20])
    out(t, "bad-signature-only", SIG)
    out(t, "bad-empty", b"")
    out(t, "bad-crc-ihdr", png(8, 8, ihdr_crc=0x12345678))
    out(t, "bad-crc-idat", png(8, 8, idat_crc=0))
    out(t, "bad-zero-width", png(0, 8, idat=zlib.compress(b"")))
    out(t, "bad-zero-height", png(8, 0, idat=zlib.compress(b"")))
    out(t, "bad-huge-dims", png(0x7fffffff, 0x7fffffff, idat=zlib.compress(b"\0" * 16)))
    out(t, "bad-over-side-limit", png(16385, 1, idat=zlib.compress(b"\0" * 64)))
    out(t, "bad-zlib-bomb", png(16384, 16384, depth=8, ctype=0,
                                idat=zlib.compress(b"\0" * (4 << 20), 9)))
    out(t, "bad-zlib-bomb-in-limits-but-short",
        png(3000, 3000, depth=8, ctype=0, idat=zlib.compress(b"\0" * (1 << 20), 9)))
    out(t, "bad-palette-missing", png(4, 4, ctype=3, depth=8,
                                      rows=b"\x00\x00\x00\x00\x00" * 4))
    out(t, "bad-palette-length", png(4, 4, ctype=3, depth=8, plte=b"\x01\x02",
                                     rows=b"\x00\x00\x00\x00\x00" * 4))
    out(t, "bad-palette-too-long", png(2, 2, ctype=3, depth=1, plte=b"\x07" * (3 * 300),
                                       rows=b"\x00\x00" * 2))
    out(t, "bad-palette-empty", png(2, 2, ctype=3, depth=8, plte=b"",
                                    rows=b"\x00\x00\x00" * 2))
    out(t, "bad-bit-depth", png(4, 4, depth=3, ctype=0, idat=zlib.compress(b"\0" * 16)))
    out(t, "bad-colour-type", png(4, 4, depth=8, ctype=5, idat=zlib.compress(b"\0" * 20)))
    out(t, "bad-zlib-data", png(8, 8, idat=b"\x78\x9c" + b"\xff" * 40))
    out(t, "bad-short-rows", png(8, 8, rows=b"\x00" * 10))
    out(t, "bad-filter-type", png(2, 2, rows=b"\x09" + b"\x00" * 6 + b"\x07" + b"\x00" * 6))
    out(t, "bad-no-idat", SIG + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
        + chunk(b"IEND", b""))
    out(t, "bad-huge-chunk-length", SIG + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
        + struct.pack(">I", 0x7ffffff0) + b"tEXt" + b"abc")
    out(t, "bad-garbage", bytes((i * 131 + 7) & 0xff for i in range(300)))
    out(t, "bad-jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 40)
    return good


# ------------------------------------------------------------ requests

def req(id, method, params=None, **kw):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    m.update(kw)
    return json.dumps(m, separators=(",", ":"))


def request_seeds(tiny_png):
    t = "fuzz_request"
    b64 = base64.b64encode(tiny_png).decode()
    out(t, "valid-hello", req(1, "hello", {"client": "fuzz", "protocol": 1}) + "\n")
    out(t, "valid-status-list", req(1, "daemon.status") + "\n" + req(2, "job.list") + "\n")
    lines = [req(1, "job.submit", {"image": {"png": b64}, "epochs": 3, "width": 16,
                                   "lr": 0.001, "seed": 5, "name": "f", "priority": 2})]
    for i, m in enumerate(["job.get", "job.logs", "job.subscribe", "job.pause", "job.resume",
                           "job.export", "job.unsubscribe", "job.cancel", "job.remove"]):
        lines.append(req(i + 2, m, {"job": "1"}))
    out(t, "valid-job-lifecycle", "\n".join(lines) + "\n")
    out(t, "valid-subscribe-since", req(1, "job.submit", {"image": {"png": b64}}) + "\n"
        + req(2, "job.subscribe", {"job": 1, "since": 0}) + "\n")
    # JSON-RPC 2.0 batches: a deferred submit in one, a notification, an
    # empty one, elements that are not requests
    out(t, "valid-batch", "[" + req(1, "hello") + "," + req(2, "job.submit", {"image": {"png": b64}})
        + "," + '{"jsonrpc":"2.0","method":"job.list"}' + "," + req(3, "job.list") + "]\n"
        + "[]\n[1,[2],{}]\n" + req(4, "hello") + "\n")

    out(t, "bad-truncated", '{"jsonrpc":"2.0","id":1,"method":"hel')
    out(t, "bad-truncated-line", '{"jsonrpc":"2.0","id":1,"method":"job.submit","params":{"image":{"png":"iVBOR\n')
    out(t, "bad-truncated-png", req(1, "job.submit", {"image": {"png": base64.b64encode(tiny_png[:30]).decode()}}) + "\n")
    wrong = [
        '{"jsonrpc":"2.0","id":{"a":1},"method":"hello"}',
        '{"jsonrpc":"2.0","id":1,"method":7}',
        '{"jsonrpc":"1.0","id":1,"method":"hello"}',
        '{"id":1,"method":"hello"}',
        req(1, "hello", [1, 2]),
        req(1, "job.submit", {"image": {"png": b64}, "epochs": "ten"}),
        req(1, "job.submit", {"image": {"png": b64}, "width": 17}),
        req(1, "job.submit", {"image": {"png": b64}, "lr": -1}),
        req(1, "job.submit", {"image": {"png": b64}, "lr": "fast"}),
        req(1, "job.submit", {"image": {"png": b64}, "seed": -1}),
        req(1, "job.submit", {"image": {"png": b64}, "name": 5}),
        req(1, "job.submit", {"image": {"png": b64}, "name": "n" * 300}),
        req(1, "job.submit", {"image": "/etc/passwd"}),
        req(1, "job.submit", {"image": {"png": 5}}),
        req(1, "job.submit", {"image": {"png": "!!!notbase64"}}),
        req(1, "job.submit", {"image": {"png": "aGVsbG8="}}),
        req(1, "job.submit", {"image": {"png": b64}, "init": {"safetensors": "AAAA"}}),
        req(1, "job.get", {"job": []}),
        req(1, "job.get", {"job": -1}),
        req(1, "job.get", {"job": "../../etc"}),
        req(1, "job.subscribe", {"job": "1", "since": "x"}),
        req(1, "model.render", {"model": {"safetensors": "AAAAAAAAAAA="}}),
        req(1, "model.render", {"model": {"safetensors": b64}, "target": {"png": b64}}),
        req(True, "hello"),
        req(None, "hello"),
    ]
    out(t, "bad-wrong-types", "\n".join(wrong) + "\n")
    huge = [
        '{"jsonrpc":"2.0","id":1,"method":"job.submit","params":{"image":{"png":"%s"},"epochs":1e999}}' % b64,
        '{"jsonrpc":"2.0","id":1,"method":"job.submit","params":{"image":{"png":"%s"},"epochs":99999999999999999999999}}' % b64,
        '{"jsonrpc":"2.0","id":1,"method":"job.submit","params":{"image":{"png":"%s"},"seed":1.5e300,"priority":-1e308}}' % b64,
        '{"jsonrpc":"2.0","id":1e308,"method":"job.get","params":{"job":1e300}}',
        '{"jsonrpc":"2.0","id":-0,"method":"job.get","params":{"job":-0.0}}',
        '{"jsonrpc":"2.0","id":1,"method":"job.subscribe","params":{"job":"1","since":1e400}}',
        '{"jsonrpc":"2.0","id":1,"method":"job.submit","params":{"epochs":NaN}}',
        '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"hello"}',
    ]
    out(t, "bad-huge-numbers", "\n".join(huge) + "\n")
    out(t, "bad-deep-array", '{"jsonrpc":"2.0","id":1,"method":"hello","params":{"x":'
        + "[" * 3000 + "]" * 3000 + "}}\n")
    out(t, "bad-deep-object", '{"jsonrpc":"2.0","id":1,"method":"job.submit","params":'
        + '{"a":' * 1200 + "1" + "}" * 1200 + "}\n")
    out(t, "bad-deep-unclosed", "[" * 5000 + "\n")
    out(t, "bad-invalid-utf8", b'{"jsonrpc":"2.0","id":1,"method":"hel\xff\xfelo"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"job.submit","params":{"name":"\xc3","image":{"png":"\xc0\xaf"}}}\n'
        b'{"jsonrpc":"2.0","id":3,"method":"job.get","params":{"job":"\\ud800\\udc00\\ud800"}}\n'
        b'{"jsonrpc":"2.0","id":4,"method":"\xed\xa0\x80"}\n')
    out(t, "bad-nul-bytes", b'{"jsonrpc":"2.0","id":1,\x00"method":"hello"}\n'
        b'\x00\x00\x00\n{"jsonrpc":"2.0","id":2,"method":"hello\\u0000x"}\n'
        b'{"jsonrpc":"2.0","id":3,"method":"job.get","params":{"job":"1\\u0000"}}\n')
    out(t, "bad-oversized-string", req(1, "job.submit", {"image": {"png": "A" * 6000}}) + "\n"
        + req(2, "hello") + "\n")
    out(t, "valid-over-fuzz-line-limit", req(1, "hello", {"client": "c" * 5000}) + "\n")
    out(t, "bad-unknown", req(1, "job.fly") + "\n" + req(2, "hello", {"bogus": 1}) + "\n"
        + req(3, "job.list", {"all": True}) + "\n" + req(4, "") + "\n")
    # ([] is an empty batch, an error; a batch of requests is valid-batch)
    out(t, "bad-not-objects", 'null\n[]\n1\n"str"\n{}\ntrue\n')
    out(t, "bad-extra-text", req(1, "hello") + ' {"x":1}\n' + req(2, "hello") + "garbage\n")
    out(t, "bad-results-from-client", '{"jsonrpc":"2.0","id":1,"result":{}}\n'
        '{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}\n')
    out(t, "bad-notification-junk", '{"jsonrpc":"2.0","method":"job.cancel","params":{"job":"1x"}}\n'
        '{"jsonrpc":"2.0","method":"job.fly"}\n')
    out(t, "valid-crlf-blank", "\r\n \t\r\n" + req(1, "hello") + "\r\n\n\n")
    out(t, "bad-garbage", bytes((i * 97 + 13) & 0xff for i in range(400)) + b"\n")


# --------------------------------------------------------- safetensors

def st(tensors, meta=None, pad=True):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def st_raw(header, data):
    h = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(h)) + h + data


def st_seeds():
    t = "fuzz_safetensors"
    f32 = struct.pack("<4f", 1, 2, 3, 4)
    good = st([("w", "F32", [2, 2], f32), ("b", "F64", [1], struct.pack("<d", 5)),
               ("i", "I64", [], struct.pack("<q", 7)), ("u", "U8", [3], b"abc")],
              {"format": "pt", "nf": "16"})
    out(t, "ok-small", good)
    out(t, "ok-empty", st([]))
    out(t, "bad-truncated", good[:-3])
    out(t, "bad-short", b"\x01\x02")
    out(t, "bad-header-length", struct.pack("<Q", 1 << 62) + b"{}")
    out(t, "bad-header-not-json", st_raw("{nope", b""))
    out(t, "bad-header-array", st_raw("[1,2]", b""))
    out(t, "bad-offsets-overlap", st_raw(json.dumps({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}), b"\0" * 12))
    out(t, "bad-offsets-outside", st_raw(json.dumps({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 800]}}), b"\0" * 8))
    out(t, "bad-offsets-negative", st_raw(json.dumps({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}), b"\0" * 8))
    out(t, "bad-shape-mismatch", st_raw(json.dumps({
        "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}), b"\0" * 8))
    out(t, "bad-shape-huge", st_raw(json.dumps({
        "a": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 0]}}), b""))
    out(t, "bad-dtype", st_raw(json.dumps({
        "a": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}}), b"\0" * 8))
    out(t, "bad-meta-types", st_raw(json.dumps({"__metadata__": {"a": 1, "b": [2]}}), b""))
    out(t, "bad-control-byte", st_raw(b'{"a":\x01 1}', b""))
    out(t, "bad-too-many-dims", st_raw(json.dumps({
        "a": {"dtype": "U8", "shape": [1] * 12, "data_offsets": [0, 1]}}), b"\0"))


if __name__ == "__main__":
    tiny = png_seeds()
    request_seeds(png(4, 4))
    st_seeds()
