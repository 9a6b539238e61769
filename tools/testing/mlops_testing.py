"""Helpers every package's tests share: device detection, bit comparison, ulp distance,
reference dtypes. Imported by the root conftest.py (tools/testing is put on sys.path)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (the GPU suite runs on the H200: nox -s gpu_tests)")

FLOAT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def seeded(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def randn(shape, dtype, seed, scale=1.0, device="cpu"):
    """Random normal values in `dtype` (drawn in float32 on the CPU, so every device gets the same data)."""
    t = torch.randn(shape, generator=seeded(seed), dtype=torch.float32) * scale
    return t.to(dtype).to(device)


def _ordered_int(t: torch.Tensor) -> torch.Tensor:
    """Maps floats to integers whose difference counts ulps (sign-magnitude -> two's complement)."""
    if t.dtype == torch.bfloat16 or t.dtype == torch.float16:
        i = t.view(torch.int16).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFF), i)
    if t.dtype == torch.float32:
        i = t.view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)
    raise TypeError(t.dtype)


def ulp_diff(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b| in units in the last place of their dtype (both the same float dtype)."""
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    return (_ordered_int(a.cpu()) - _ordered_int(b.cpu())).abs()


def assert_bits_equal(a: torch.Tensor, b: torch.Tensor, what: str = ""):
    """Bit-for-bit equality (NaNs compare by their bits too)."""
    assert a.shape == b.shape, f"{what}: shapes {tuple(a.shape)} != {tuple(b.shape)}"
    assert a.dtype == b.dtype, f"{what}: dtypes {a.dtype} != {b.dtype}"
    ab, bb = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    if ab.element_size() == 1:
        ai, bi = ab.view(torch.uint8), bb.view(torch.uint8)
    elif ab.element_size() == 2:
        ai, bi = ab.view(torch.int16), bb.view(torch.int16)
    elif ab.element_size() == 4:
        ai, bi = ab.view(torch.int32), bb.view(torch.int32)
    else:
        ai, bi = ab.view(torch.int64), bb.view(torch.int64)
    diff = (ai != bi)
    n = int(diff.sum())
    if n:
        idx = diff.nonzero()[0].tolist()
        raise AssertionError(f"{what}: {n} of {diff.numel()} elements differ; first at {idx}: "
                             f"{ab[tuple(idx)].item()!r} vs {bb[tuple(idx)].item()!r}")


def gpu_arch_tag() -> str:
    """Which build the GPU suite runs (nox -s gpu_tests sets MLOPS_ARCH_TAG per virtual-arch build)."""
    return os.environ.get("MLOPS_ARCH_TAG", "native")


def build_cxx(exe, args, missing_ok: bool = False):
    """Compiles and links a host C++ test program to exe (a path) with the system compiler; args: the flags, include
    dirs and sources (the caller's: -ffp-contract=off as the library is built). No compiler on PATH: pytest.skip with
    missing_ok, else a failure. A failed compile fails with the compiler's last 4000 characters. Returns exe."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None and missing_ok:
        pytest.skip("no C++ compiler")
    assert cxx, "a C++ compiler on PATH"
    r = subprocess.run([cxx, *map(str, args), "-o", str(exe)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-4000:]
    return exe
