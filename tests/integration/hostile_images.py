"""hostile_images.py - image files a stranger might send, written byte by
byte for the integration tests (python3 and zlib only; PIL where a real
encoder's output is the starting point).

JPEG: a progressive file with far more scans than any encoder writes
(every AC coefficient sent bit plane by bit plane, each scan a few bytes
of end-of-block runs), and a header that states a size its data cannot
hold. PNG: a plain RGB file with any extra chunks and bytes after IEND.
"""
import struct, zlib


# ---- JPEG ---------------------------------------------------------------

def _segment(marker, payload):
    return struct.pack(">BBH", 0xFF, marker, len(payload) + 2) + payload


class _Bits:
    """MSB-first bit writer with JPEG's byte stuffing (FF -> FF 00)."""

    def __init__(self):
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, value, nbits):
        for i in range(nbits - 1, -1, -1):
            self.acc = self.acc << 1 | (value >> i) & 1
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0)
                self.acc = self.n = 0

    def done(self):
        if self.n:  # pad with 1 bits
            self.put((1 << (8 - self.n)) - 1, 8 - self.n)
        return bytes(self.out)


def _eob_runs(blocks):
    """The entropy data of a one-component AC scan that is nothing but
    end-of-block runs over `blocks` blocks: symbol r<<4 (code r, 4 bits)
    then r bits, a run of 2^r + those bits."""
    b = _Bits()
    left = blocks
    while left:
        r = min(14, left.bit_length() - 1)
        run = min(left, (1 << (r + 1)) - 1)
        b.put(r, 4)
        b.put(run - (1 << r), r)
        left -= run
    return b.done()


def _grey_tables(sof, width, height):
    out = bytearray(b"\xff\xd8")
    out += _segment(0xDB, b"\x00" + bytes([1] * 64))
    out += _segment(sof, struct.pack(">BHHB", 8, height, width, 1) +
                    b"\x01\x11\x00")
    # DC table 0: category 0 alone, code "0"
    out += _segment(0xC4, b"\x00" + bytes([1] + [0] * 15) + b"\x00")
    # AC table 0: EOB runs r = 0..14 (r = 0: a baseline EOB), 4-bit
    # codes 0..14 in that order
    out += _segment(0xC4, b"\x10" + bytes([0, 0, 0, 15] + [0] * 12) +
                    bytes(r << 4 for r in range(15)))
    return out


def _sos(ss, se, ah, al):
    return _segment(0xDA, bytes([1, 1, 0x00, ss, se, ah << 4 | al]))


def jpeg_flat_baseline(width, height):
    """A valid grey baseline JPEG, every pixel mid-grey: each block a DC
    difference of 0 and an end of block (5 bits)."""
    out = _grey_tables(0xC0, width, height)
    b = _Bits()
    for _ in range(((width + 7) // 8) * ((height + 7) // 8)):
        b.put(0, 1)
        b.put(0, 4)
    return bytes(out + _sos(0, 63, 0, 0) + b.done() + b"\xff\xd9")


def jpeg_many_scans(width, height):
    """A valid grey progressive JPEG of width x height with 1 + 63 * 14
    scans: the DC scan (1 bit a block), then each AC coefficient alone,
    first at bit 13 and refined down to bit 0, every scan only EOB runs.
    Every pixel is mid-grey; each scan walks every block."""
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    out = _grey_tables(0xC2, width, height)
    sos = _sos
    dc = _Bits()
    for _ in range(blocks):
        dc.put(0, 1)
    out += sos(0, 0, 0, 0) + dc.done()
    runs = _eob_runs(blocks)
    for k in range(1, 64):
        out += sos(k, k, 0, 13) + runs
        for ah in range(13, 0, -1):
            out += sos(k, k, ah, ah - 1) + runs
    out += b"\xff\xd9"
    return bytes(out)


def jpeg_restate_size(jpeg, width, height):
    """jpeg with its frame header saying width x height."""
    at = 2
    while at + 4 <= len(jpeg):
        marker = jpeg[at + 1]
        length = jpeg[at + 2] << 8 | jpeg[at + 3]
        if marker in (0xC0, 0xC1, 0xC2):
            return (jpeg[:at + 5] + struct.pack(">HH", height, width) +
                    jpeg[at + 9:])
        at += 2 + length
    raise ValueError("no frame header")


def jpeg_without_scan_data(jpeg):
    """jpeg cut right after its first scan header, EOI appended."""
    at = 2
    while at + 4 <= len(jpeg):
        marker = jpeg[at + 1]
        length = jpeg[at + 2] << 8 | jpeg[at + 3]
        if marker == 0xDA:
            return jpeg[:at + 2 + length] + b"\xff\xd9"
        at += 2 + length
    raise ValueError("no scan")


def jpeg_scan_start(jpeg):
    """Where the first scan's entropy-coded data begins."""
    at = 2
    while at + 4 <= len(jpeg):
        length = jpeg[at + 2] << 8 | jpeg[at + 3]
        if jpeg[at + 1] == 0xDA:
            return at + 2 + length
        at += 2 + length
    raise ValueError("no scan")


# ---- PNG ----------------------------------------------------------------

def png_chunk(kind, data):
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png_rgb(width, height, pixel=lambda x, y: (x * 7 % 256, y * 5 % 256, 90),
            before_idat=(), after_iend=b""):
    """An 8-bit RGB PNG; before_idat: (kind, data) chunks put before the
    image data; after_iend: bytes appended after the file."""
    raw = bytearray()
    for y in range(height):
        raw.append(0)
        for x in range(width):
            raw += bytes(pixel(x, y))
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(
        b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    for kind, data in before_idat:
        out += png_chunk(kind, data)
    out += png_chunk(b"IDAT", zlib.compress(bytes(raw), 9))
    out += png_chunk(b"IEND", b"")
    return out + after_iend


def png_grey16(width, height, sample=lambda x, y: (x * 3001 + y * 707) % 65536):
    """A 16-bit grey PNG."""
    raw = bytearray()
    for y in range(height):
        raw.append(0)
        for x in range(width):
            raw += struct.pack(">H", sample(x, y))
    return (b"\x89PNG\r\n\x1a\n" +
            png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 0, 0, 0, 0)) +
            png_chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + png_chunk(b"IEND", b""))


def png_read(data):
    """A non-interlaced PNG of 8 or 16 bits, grey or RGB: (width, height,
    depth, colour type, the chunk types in order, the samples as a list of
    rows of ints)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, kinds, idat = 8, [], b""
    while at < len(data):
        n, = struct.unpack(">I", data[at:at + 4])
        kind = data[at + 4:at + 8]
        body = data[at + 8:at + 8 + n]
        kinds.append(kind.decode())
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
            assert lace == 0 and depth in (8, 16) and ctype in (0, 2)
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
        if kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    bpp = (3 if ctype == 2 else 1) * depth // 8
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        prev = line
        if depth == 16:
            rows.append([line[i] << 8 | line[i + 1] for i in range(0, stride, 2)])
        else:
            rows.append(list(line))
    return w, h, depth, ctype, kinds, rows
