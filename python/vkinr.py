#!/usr/bin/env python3
"""Load and render vkinrd's model packages (ConvSIREN, docs/MODEL.md) in
Python: numpy alone, or PyTorch where it is installed.

    import vkinr
    pkg = vkinr.load("photo.safetensors")      # tensors, metadata, config
    img = vkinr.render(pkg)                    # H x W x 3 floats in [0, 1]
    big = vkinr.render(pkg, scale=3)           # 3 times finer, exact
    any = vkinr.render(pkg, size=(1920, 1080)) # next integer scale, box-filtered
    net = vkinr.to_torch(pkg)                  # a torch.nn.Module (torch only)
    stack = vkinr.load_stack("batch.safetensors")   # export --stack's file
    one = vkinr.stack_package(stack, 3)        # its 4th network as a package

From the command line:

    python3 vkinr.py MODEL.safetensors -o OUT.png [--scale S | --size WxH]
                     [--crop WxH+X+Y] [--torch] [--force]

which, as vkinrctl infer, never replaces a file that exists (the photo
the model was fitted to among them) unless --force (exit status 3, the
file named), and writes under a temporary name that it then renames.

The render follows vkinrd's (`vkinrctl infer`): pixel-centre coordinates
u = (2x + 1) / W - 1 on the render's own grid, at an integer scale s every
dilation times s (so every pixel is an exact evaluation of the network and,
s odd, the trained pixels' centres are among the new ones), other sizes at
the next integer scale and then the area-weighted box filter. It computes
the whole fine grid at once (vkinrd tiles it); fp32 throughout, so it
matches vkinrd's render to float rounding. A package whose stored size was
edited (its size_check no longer matches) is refused, as vkinrd does.
"""
import argparse, json, math, os, struct, sys, tempfile, zlib

try:
    import numpy as np
except ImportError:  # said plainly, with what to install
    sys.exit("vkinr.py needs numpy (Debian: apt install python3-numpy; "
             "pip: pip install numpy)")

__all__ = ["Package", "load", "loads", "render", "to_torch", "load_stack",
           "stack_package", "save_png", "png_bytes", "size_check"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


class Package:
    """A model package: tensors (name -> numpy array), metadata (strings),
    and the config read from them: nf, dilations, w0, width, height."""

    def __init__(self, tensors, metadata):
        self.tensors = tensors
        self.metadata = metadata
        first = tensors.get("first.weight")
        if first is None:
            raise ValueError("not a ConvSIREN model package (no first.weight)")
        self.nf = int(first.shape[0])
        self.dilations = [int(d) for d in
                          metadata.get("dilations", "1,2,4,8").split(",")]
        self.w0 = float(metadata.get("w0", "30"))
        try:
            self.width = int(metadata["width"])
            self.height = int(metadata["height"])
        except (KeyError, ValueError):
            raise ValueError("the package's metadata lacks the image width and height")
        for k in range(len(self.dilations)):
            for name in ("dw.%d.weight" % k, "pw.%d.weight" % k, "pw.%d.bias" % k):
                if name not in tensors:
                    raise ValueError("the package lacks %s" % name)

    def __repr__(self):
        return "Package(%dx%d, width %d, dilations %s)" % (
            self.width, self.height, self.nf,
            ",".join(map(str, self.dilations)))


def _parse(raw):
    if len(raw) < 8:
        raise ValueError("not a safetensors file")
    n = struct.unpack("<Q", raw[:8])[0]
    if n > len(raw) - 8:
        raise ValueError("not a safetensors file (header past the end)")
    head = json.loads(raw[8:8 + n])
    meta = head.pop("__metadata__", {}) or {}
    data = memoryview(raw)[8 + n:]
    tensors = {}
    for name, t in head.items():
        a, b = t["data_offsets"]
        dtype = _DTYPES[t["dtype"]]
        arr = np.frombuffer(data[a:b], dtype=np.dtype(dtype).newbyteorder("<"))
        tensors[name] = arr.reshape(t["shape"]).astype(dtype)
    return tensors, meta


def size_check(tensors, width, height, nf, dilations):
    """The package's size_check (docs/MODEL.md): FNV-1a 64 over the text
    "W,H,NF,DILATIONS" (tensors: unused, kept for callers)."""
    h = 0xcbf29ce484222325
    data = ("%d,%d,%d,%s" % (width, height, nf, dilations)).encode()
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def loads(raw, check=True):
    """A package from its bytes (check: refuse an edited size)."""
    tensors, meta = _parse(raw)
    pkg = Package(tensors, meta)
    want = meta.get("size_check")
    if check and want is not None:
        got = size_check(tensors, pkg.width, pkg.height, pkg.nf,
                         ",".join(map(str, pkg.dilations)))
        if got != want:
            raise ValueError(
                "the package's stored size (%dx%d) or its dilations do not "
                "match its weights (size_check differs): the metadata was "
                "edited after the export" % (pkg.width, pkg.height))
    return pkg


def load(path, check=True):
    """Reads a model package (.safetensors) that vkinrd or the PyTorch peer
    wrote."""
    with open(path, "rb") as f:
        return loads(f.read(), check)


def _geometry(pkg, scale, size):
    if scale is not None and size is not None:
        raise ValueError("scale or size, not both")
    if scale is not None:
        if int(scale) != scale or scale < 1:
            raise ValueError("the scale is an integer from 1")
        ow, oh = pkg.width * int(scale), pkg.height * int(scale)
    elif size is not None:
        ow, oh = int(size[0]), int(size[1])
        if ow < 1 or oh < 1:
            raise ValueError("a size is at least 1x1")
    else:
        ow, oh = pkg.width, pkg.height
    s = int(scale) if scale is not None else max(
        -(-ow // pkg.width), -(-oh // pkg.height))
    return ow, oh, s


def _box(n_out, n_fine):
    """The box filter's matrix (n_out x n_fine): each output pixel's
    overlap with each fine pixel, rows summing to 1."""
    r = np.zeros((n_out, n_fine), dtype=np.float64)
    for o in range(n_out):
        lo, hi = o * n_fine / n_out, (o + 1) * n_fine / n_out
        for f in range(int(math.floor(lo)), min(int(math.ceil(hi)), n_fine)):
            r[o, f] = min(hi, f + 1) - max(lo, f)
    return r / r.sum(axis=1, keepdims=True)


def _coords(fw, fh):
    x = (2 * np.arange(fw, dtype=np.float32) + 1) / np.float32(fw) - 1
    y = (2 * np.arange(fh, dtype=np.float32) + 1) / np.float32(fh) - 1
    return x.astype(np.float32), y.astype(np.float32)


def _forward_numpy(pkg, fw, fh, s):
    t = pkg.tensors
    w0 = np.float32(pkg.w0)
    u, v = _coords(fw, fh)
    a = t["first.weight"].reshape(pkg.nf, 2)
    pre = (a[:, 0, None, None] * u[None, None, :] +
           a[:, 1, None, None] * v[None, :, None] +
           t["first.bias"][:, None, None])
    h = np.sin(w0 * pre.astype(np.float32))
    for k, d0 in enumerate(pkg.dilations):
        d = d0 * s
        taps = t["dw.%d.weight" % k].reshape(pkg.nf, 3, 3)
        padded = np.zeros((pkg.nf, fh + 2 * d, fw + 2 * d), dtype=np.float32)
        padded[:, d:d + fh, d:d + fw] = h
        z = np.zeros_like(h)
        for i in range(3):
            for j in range(3):
                z += taps[:, i, j, None, None] * \
                    padded[:, i * d:i * d + fh, j * d:j * d + fw]
        p = t["pw.%d.weight" % k].reshape(pkg.nf, pkg.nf)
        out = (p @ z.reshape(pkg.nf, -1)).reshape(pkg.nf, fh, fw)
        h = np.sin(w0 * (out + t["pw.%d.bias" % k][:, None, None]))
    o = t["out.weight"].reshape(3, pkg.nf)
    y = (o @ h.reshape(pkg.nf, -1)).reshape(3, fh, fw) + \
        t["out.bias"][:, None, None]
    return y


def to_torch(pkg, scale=1):
    """A torch.nn.Module of the package's network (the PyTorch peer's
    design, weights loaded), with the dilations times scale; call
    forward_grid(width, height) for the render's [-1, 1] output."""
    import torch
    import torch.nn as nn

    class ConvSiren(nn.Module):
        def __init__(self):
            super().__init__()
            self.w0 = pkg.w0
            self.first = nn.Conv2d(2, pkg.nf, 1)
            self.dw = nn.ModuleList()
            self.pw = nn.ModuleList()
            for d0 in pkg.dilations:
                d = d0 * scale
                self.dw.append(nn.Conv2d(pkg.nf, pkg.nf, 3, padding=d,
                                         dilation=d, groups=pkg.nf, bias=False))
                self.pw.append(nn.Conv2d(pkg.nf, pkg.nf, 1))
            self.out = nn.Conv2d(pkg.nf, 3, 1)

        def forward(self, x):
            h = torch.sin(self.w0 * self.first(x))
            for dw, pw in zip(self.dw, self.pw):
                h = torch.sin(self.w0 * pw(dw(h)))
            return self.out(h)

        def forward_grid(self, width, height):
            u, v = _coords(width, height)
            grid = np.stack([np.broadcast_to(u[None, :], (height, width)),
                             np.broadcast_to(v[:, None], (height, width))])
            with torch.no_grad():
                return self(torch.from_numpy(np.ascontiguousarray(grid))[None])[0]

    net = ConvSiren()
    state = {k: torch.from_numpy(np.ascontiguousarray(a))
             for k, a in pkg.tensors.items()}
    net.load_state_dict(state)
    return net.eval()


def render(pkg, scale=None, size=None, crop=None, backend="numpy"):
    """Renders pkg: H x W x 3 float32 in [0, 1]. scale (an integer) or size
    (width, height), as `vkinrctl infer --scale/--size`; crop (x, y, w, h)
    in the render's pixels; backend "numpy" or "torch"."""
    ow, oh, s = _geometry(pkg, scale, size)
    fw, fh = s * pkg.width, s * pkg.height
    if backend == "torch":
        y = to_torch(pkg, s).forward_grid(fw, fh).numpy()
    elif backend == "numpy":
        y = _forward_numpy(pkg, fw, fh, s)
    else:
        raise ValueError("backend is numpy or torch")
    img = (y.astype(np.float32) + 1) * np.float32(0.5)
    if (ow, oh) != (fw, fh):
        ry, rx = _box(oh, fh), _box(ow, fw)
        img = np.einsum("of,cfg,pg->cop", ry, img.astype(np.float64), rx)
        img = img.astype(np.float32)
    img = np.transpose(img, (1, 2, 0))
    if crop is not None:
        x, y0, w, h = crop
        if x < 0 or y0 < 0 or w < 1 or h < 1 or x + w > ow or y0 + h > oh:
            raise ValueError("the crop is not within the %dx%d render" % (ow, oh))
        img = img[y0:y0 + h, x:x + w]
    return np.ascontiguousarray(img)


def png_bytes(img):
    """An H x W x 3 image in [0, 1] as the bytes of an 8-bit RGB PNG (as
    vkinrd rounds: clamped, then to the nearest of 255 steps); zlib alone,
    no imaging library."""
    a = (np.clip(np.nan_to_num(img), 0, 1) * 255 + 0.5).astype(np.uint8)
    h, w = a.shape[0], a.shape[1]
    rows = np.concatenate([np.zeros((h, 1), np.uint8),
                           a.reshape(h, w * 3)], axis=1)

    def chunk(kind, data):
        body = kind + data
        return (struct.pack(">I", len(data)) + body +
                struct.pack(">I", zlib.crc32(body) & 0xffffffff))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) +
            chunk(b"IEND", b""))


def save_png(img, path):
    """Writes an H x W x 3 image in [0, 1] to path as an 8-bit PNG
    (png_bytes), whatever its suffix, under a temporary name in the same
    folder renamed into place, so that no half-written file is left. It
    replaces path as open() would; the command line refuses to."""
    data = png_bytes(img)
    fd, tmp = tempfile.mkstemp(prefix=".vkinr-", suffix=".png",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def load_stack(path):
    """Reads `vkinrctl export --stack`'s file: a dict with "tensors" (each
    with a leading job dimension), "metadata" (strings) and the per-job
    lists decoded: jobs, names, sources, psnrs, widths, heights, epochs."""
    with open(path, "rb") as f:
        tensors, meta = _parse(f.read())
    if meta.get("format") != "vkinr-convsiren-stack":
        raise ValueError("not a stack of models (format %r)" % meta.get("format"))
    out = {"tensors": tensors, "metadata": meta, "count": int(meta["count"])}
    for key in ("jobs", "names", "sources", "psnrs", "widths", "heights",
                "epochs", "size_checks", "weights"):
        if key in meta:
            out[key] = json.loads(meta[key])
    return out


def stack_package(stack, i):
    """Network i of a stack as a Package (renders as its own package)."""
    meta = {"format": "vkinr-convsiren", "version": "2",
            "nf": stack["metadata"]["nf"],
            "dilations": stack["metadata"]["dilations"],
            "w0": stack["metadata"]["w0"],
            "width": str(stack["widths"][i]), "height": str(stack["heights"][i])}
    tensors = {k: v[i] for k, v in stack["tensors"].items()}
    return Package(tensors, meta)


def _main(argv):
    ap = argparse.ArgumentParser(description="render a vkinrd model package")
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--scale", type=int)
    ap.add_argument("--size", help="WxH")
    ap.add_argument("--crop", help="WxH+X+Y")
    ap.add_argument("--torch", action="store_true", help="render with PyTorch")
    ap.add_argument("-f", "--force", action="store_true",
                    help="replace OUTPUT if it exists (else refused)")
    a = ap.parse_args(argv)
    try:
        size = tuple(int(v) for v in a.size.lower().split("x")) if a.size else None
        crop = None
        if a.crop:
            wh, x, y = a.crop.split("+")
            w, h = wh.lower().split("x")
            crop = (int(x), int(y), int(w), int(h))
        if size is not None and len(size) != 2:
            raise ValueError
    except ValueError:
        ap.error("--size is WxH and --crop WxH+X+Y, in whole pixels")
    if os.path.lexists(a.output) and not a.force:
        print("vkinr.py: %s exists already; add --force to replace it"
              % a.output, file=sys.stderr)
        return 3
    try:
        pkg = load(a.model)
        img = render(pkg, a.scale, size, crop, "torch" if a.torch else "numpy")
    except (ValueError, OSError) as e:
        print("vkinr.py: %s: %s" % (a.model, e), file=sys.stderr)
        return 1
    try:
        save_png(img, a.output)
    except OSError as e:
        print("vkinr.py: %s: %s" % (a.output, e), file=sys.stderr)
        return 1
    print("wrote %s (%dx%d)" % (a.output, img.shape[1], img.shape[0]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
