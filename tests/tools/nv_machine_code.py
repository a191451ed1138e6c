#!/usr/bin/env python3
"""nv_machine_code.py - the machine code inside NVIDIA pipeline-cache dumps,
as raw instruction files for nvdisasm: how a shader's SASS is read when
tuning a kernel (no profiler reads Vulkan dispatches on the H200 machine).

On the NVIDIA machine, VKINR_PIPELINE_STATS=1 VKINR_PIPELINE_DUMP=DIR makes
every new pipeline write DIR/VARIANT.cache. Then, anywhere with zstd:

    tests/tools/nv_machine_code.py DIR        # writes DIR/VARIANT.bin

and on the NVIDIA machine, with the CUDA toolkit:

    nvdisasm -b SM90 DIR/VARIANT.bin          # (SM90: Hopper)

The layout is the driver's own and undocumented; what this relies on was
read off driver 580 (2026-12): after the Vulkan cache header the entry is a
zstd frame; decompressed, it starts with "NVDA", holds the code's size at
byte 0x4c, and the code itself starts at byte 0x198.
"""
import glob
import os
import struct
import subprocess
import sys

ZSTD_MAGIC = bytes.fromhex("28b52ffd")


def machine_code(blob):
    at = blob.find(ZSTD_MAGIC)
    if at < 0:
        raise ValueError("no zstd frame")
    raw = subprocess.run(["zstd", "-d", "-c", "-q"], input=blob[at:],
                         capture_output=True, check=True).stdout
    if not raw.startswith(b"NVDA"):
        raise ValueError("not an NVIDIA entry")
    size, = struct.unpack_from("<I", raw, 0x4c)
    return raw[0x198:0x198 + size]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: nv_machine_code.py DIR")
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.cache"))):
        try:
            code = machine_code(open(path, "rb").read())
        except (ValueError, subprocess.CalledProcessError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            continue
        out = path[:-len(".cache")] + ".bin"
        open(out, "wb").write(code)
        print(f"{out}: {len(code)} bytes")


if __name__ == "__main__":
    main()
