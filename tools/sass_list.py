#!/usr/bin/env python3
"""List the GPU code inside .so/.o files without CUDA tools (notes/toolchains.md §2.6).

    python tools/sass_list.py build/_ops.abi3.so other.o       # path: sass=sm_50,sm_90 ptx=compute_90
    python tools/sass_list.py --json x.so                       # {"x.so": {"sass": [...], "ptx": [...]}}

    from sass_list import list_archs; list_archs("x.so") -> {"sass": ["sm_50", ...], "ptx": ["compute_90"]}

nvcc puts a fatbin into the host ELF section .nv_fatbin (__nv_relfatbin with -rdc); a linked .so has
one fatbin container per .cu. Layout (little endian, matched against cuobjdump 12.4 on objects from
nvcc 12.4 and 13.0):
    container: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload size; 8-byte aligned
    entry:     u16 kind (1 = PTX, 2 = ELF/SASS), u16, u32 header size, u64 payload size, ...,
               u32 arch at +28 (90 for sm_90), u64 flags at +40; the next entry follows
               header size + payload size later.
    flags bit 0x100000 marks an arch-specific target (sm_90a), 0x200000 a family one (sm_100f),
    seen with 12.4 and 13.0. cuobjdump instead reads each cubin's own ELF e_flags, so 12.4's
    cuobjdump prints sm_90 for a 13.0-built sm_90a cubin (13.x cubins, ELF ABI v8, carry no "a"
    there) and for nvcc's device-link cubin in a 12.4 sm_90a .so; this reader says sm_90a for both.
Compressed payloads need no decompression: only headers are read. A raw .fatbin file works too.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin")
KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC, FLAG_FAMILY = 0x100000, 0x200000


def _fatbin_sections(data: bytes) -> list:
    """The bytes of the fatbin sections of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def section(i):  # (name offset, type, file offset, size)
        name, typ, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, typ, off, size

    _, _, stroff, _ = section(shstrndx)
    out = []
    for i in range(shnum):
        name, typ, off, size = section(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] in FATBIN_SECTIONS and typ != 8:  # 8 = SHT_NOBITS
            out.append(data[off:off + size])
    return out


def _scan(blob: bytes, found: dict) -> None:
    pos = 0
    while pos + 16 <= len(blob):
        magic, _version, hsize, fsize = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8
            continue
        entry, end = pos + hsize, pos + hsize + fsize
        while entry + 48 <= end:
            kind, _, ehsize, esize = struct.unpack_from("<HHIQ", blob, entry)
            arch, = struct.unpack_from("<I", blob, entry + 28)
            flags, = struct.unpack_from("<Q", blob, entry + 40)
            suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
            if kind == KIND_ELF:
                found["sass"].add((arch, suffix))
            elif kind == KIND_PTX:
                found["ptx"].add((arch, suffix))
            if ehsize == 0:
                break
            entry += ehsize + esize
        pos = (end + 7) & ~7


def list_archs(path) -> dict:
    """{"sass": ["sm_50", ...], "ptx": ["compute_90", ...]}, sorted, of one ELF (.so/.o/executable)
    or raw .fatbin file. Empty lists if it holds no GPU code."""
    with open(path, "rb") as f:
        data = f.read()
    blobs = [data] if data[:4] == struct.pack("<I", FATBIN_MAGIC) else _fatbin_sections(data)
    found = {"sass": set(), "ptx": set()}
    for blob in blobs:
        _scan(blob, found)
    return {"sass": [f"sm_{a}{s}" for a, s in sorted(found["sass"])],
            "ptx": [f"compute_{a}{s}" for a, s in sorted(found["ptx"])]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="List SASS (sm_NN) and PTX (compute_NN) archs in .so/.o files.")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--json", action="store_true", help="one JSON object {path: {sass, ptx}}")
    a = ap.parse_args(argv)
    result, rc = {}, 0
    for p in a.files:
        try:
            result[p] = list_archs(p)
        except (OSError, ValueError, struct.error) as e:
            print(f"{p}: error: {e}", file=sys.stderr)
            rc = 1
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        for p, r in result.items():
            print(f"{p}: sass={','.join(r['sass']) or '-'} ptx={','.join(r['ptx']) or '-'}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
