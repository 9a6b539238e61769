#!/usr/bin/env python3
"""Lay out FlashInfer's wheels in .carry/flashinfer/ for the GPU machine, which has no network.

    python3 tools/device_bundle.py                   # download, then lay out call1/ (call2/ ...)
    python3 tools/device_bundle.py --no-download     # lay out again from .carry/flashinfer/wheels/
    python3 tools/device_bundle.py --version 0.7.4   # another flashinfer-python (101 MB: two calls)

A device call carries at most 64 MiB (the working tree, about 6 MiB, included), so the wheels are
laid out in call folders .carry/flashinfer/call1, call2, ... of at most --budget-mib each. A wheel
above --part-mib travels as parts NAME.partKK-of-NN (cut at byte offsets; `cat` of the parts in
name order is the wheel). Every call folder holds SHA256SUMS (sha256sum's format) of the WHOLE
wheels, so ci/device/flashinfer_setup.sh can tell when it has them all: it gathers what each call
brought in /tmp, joins and checks, and installs once all are there (docs/vocab.md, "FlashInfer on
the device"). The machine stays warm 30 s after a call; a later call finds /tmp empty otherwise.

Which wheels: flashinfer-python (pure Python, with its CUDA sources and headers for the JIT) and
apache-tvm-ffi (its FFI: a compiled module, headers and libtvm_ffi.so). `import flashinfer` and
flashinfer.sampling need nothing else that the device image lacks (torch, numpy, pynvml, requests,
filelock, packaging, tqdm, einops, click, tabulate, ninja and cuda-bindings are there); the other
declared needs (cuda-tile, nccl4py, nvidia-cudnn-frontend, nvidia-cutlass-dsl, ...) serve other
kernels and are imported lazily or under contextlib.suppress(ImportError), so they are left out
(pip --no-deps). The sampling kernels are JIT-built there by nvcc 13.0 (a minute or so).
"""
from __future__ import annotations

import argparse
import hashlib
import pathlib
import re
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
DEST = REPO / ".carry" / "flashinfer"
MIB = 1 << 20
# flashinfer-python 0.6.18.post1: 18 MB, the sampling API bench_vocab.py calls, torch-independent
# (TVM-FFI) JIT modules; 0.7.x grew to 32 / 64 / 101 MB with no change to that API.
FLASHINFER = "0.6.18.post1"
TVM_FFI = "0.1.15.post2"  # flashinfer 0.6.18.post1 asks for >=0.1.6,<0.2 (not 0.1.8)
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
PART_RE = re.compile(r"^(?P<name>.+)\.part(?P<k>\d+)-of-(?P<n>\d+)$")


def sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


def part_name(name: str, k: int, n: int) -> str:
    """NAME.partKK-of-NN, zero-padded so that the name order is the byte order."""
    w = max(2, len(str(n)))
    return f"{name}.part{k:0{w}d}-of-{n:0{w}d}"


def split_file(path: pathlib.Path, out_dir: pathlib.Path, part_bytes: int) -> list[pathlib.Path]:
    """Cut path into ceil(size / part_bytes) parts in out_dir; a file that fits is copied whole."""
    out_dir.mkdir(parents=True, exist_ok=True)
    size = path.stat().st_size
    if size <= part_bytes:
        dst = out_dir / path.name
        shutil.copyfile(path, dst)
        return [dst]
    n = -(-size // part_bytes)
    parts = []
    with open(path, "rb") as f:
        for k in range(1, n + 1):
            dst = out_dir / part_name(path.name, k, n)
            dst.write_bytes(f.read(part_bytes))
            parts.append(dst)
    return parts


def join_parts(parts: list[pathlib.Path], out: pathlib.Path) -> pathlib.Path:
    """What the device script does with `cat`: the parts of one file, checked complete, in order."""
    got = {}
    for p in parts:
        m = PART_RE.match(p.name)
        if not m:
            raise ValueError(f"not a part: {p.name}")
        got[int(m["k"])] = (m["name"], int(m["n"]), p)
    names = {v[0] for v in got.values()}
    counts = {v[1] for v in got.values()}
    if len(names) != 1 or len(counts) != 1:
        raise ValueError(f"parts of different files: {sorted(p.name for p in parts)}")
    n = counts.pop()
    missing = sorted(set(range(1, n + 1)) - set(got))
    if missing:
        raise ValueError(f"{names.pop()}: parts {missing} of {n} missing")
    with open(out, "wb") as f:
        for k in range(1, n + 1):
            f.write(got[k][2].read_bytes())
    return out


def plan_calls(sizes: dict[str, int], budget: int, part_bytes: int) -> list[list[tuple[str, int, int, int]]]:
    """Pieces (file, k, n, bytes) grouped into calls of at most budget bytes (first fit, in order).

    k = n = 0 marks a whole file. A file above part_bytes becomes n = ceil(size / part_bytes) pieces.
    """
    if part_bytes > budget:
        raise ValueError("a part must fit in one call")
    pieces = []
    for name, size in sizes.items():
        if size <= part_bytes:
            pieces.append((name, 0, 0, size))
        else:
            n = -(-size // part_bytes)
            pieces += [(name, k, n, min(part_bytes, size - (k - 1) * part_bytes)) for k in range(1, n + 1)]
    calls: list[list[tuple[str, int, int, int]]] = []
    used: list[int] = []
    for piece in pieces:
        for i, u in enumerate(used):
            if u + piece[3] <= budget:
                calls[i].append(piece)
                used[i] += piece[3]
                break
        else:
            calls.append([piece])
            used.append(piece[3])
    return calls


def lay_out(wheels: list[pathlib.Path], dest: pathlib.Path, budget: int, part_bytes: int) -> list[pathlib.Path]:
    """Write dest/call1, call2, ... (old call folders removed) with pieces and SHA256SUMS; returns them."""
    for old in dest.glob("call*"):
        shutil.rmtree(old)
    sums = "".join(f"{sha256(w)}  {w.name}\n" for w in wheels)
    by_name = {w.name: w for w in wheels}
    calls = plan_calls({w.name: w.stat().st_size for w in wheels}, budget, part_bytes)
    dirs = []
    for i, call in enumerate(calls, 1):
        d = dest / f"call{i}"
        d.mkdir(parents=True)
        (d / "SHA256SUMS").write_text(sums)
        for name, k, n, nbytes in call:
            if k == 0:
                shutil.copyfile(by_name[name], d / name)
            else:
                with open(by_name[name], "rb") as f:
                    f.seek((k - 1) * part_bytes)
                    (d / part_name(name, k, n)).write_bytes(f.read(nbytes))
        dirs.append(d)
    return dirs


def download(version: str, tvm_ffi: str, wheel_dir: pathlib.Path) -> list[pathlib.Path]:
    """pip download --no-deps of the two wheels for CPython 3.12 on x86-64 (the device's python3)."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    for old in wheel_dir.glob("*.whl"):
        old.unlink()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
           "--implementation", "cp", "-d", str(wheel_dir)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + [f"flashinfer-python=={version}", f"apache-tvm-ffi=={tvm_ffi}"], check=True)
    return sorted(wheel_dir.glob("*.whl"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default=FLASHINFER, help="flashinfer-python version")
    ap.add_argument("--tvm-ffi", default=TVM_FFI, help="apache-tvm-ffi version")
    ap.add_argument("--dest", type=pathlib.Path, default=DEST)
    ap.add_argument("--budget-mib", type=float, default=56, help="carried bytes a call (64 MiB less the tree)")
    ap.add_argument("--part-mib", type=float, default=48, help="wheels above this travel in parts")
    ap.add_argument("--no-download", action="store_true", help="use the wheels already in DEST/wheels")
    a = ap.parse_args(argv)
    wheel_dir = a.dest / "wheels"
    wheels = sorted(wheel_dir.glob("*.whl")) if a.no_download else download(a.version, a.tvm_ffi, wheel_dir)
    if not wheels:
        print(f"no wheels in {wheel_dir}", file=sys.stderr)
        return 1
    dirs = lay_out(wheels, a.dest, int(a.budget_mib * MIB), int(a.part_mib * MIB))
    for w in wheels:
        print(f"{w.name}: {w.stat().st_size / MIB:.1f} MiB")
    for i, d in enumerate(dirs, 1):
        size = sum(p.stat().st_size for p in d.iterdir())
        try:
            shown = d.relative_to(REPO)
        except ValueError:
            shown = d
        print(f"call {i}: carry [\"{shown}\"] ({size / MIB:.1f} MiB): " + ", ".join(sorted(p.name for p in d.iterdir())))
    print("each call's command begins: . ci/device/flashinfer_setup.sh  (the last one installs; see docs/vocab.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
