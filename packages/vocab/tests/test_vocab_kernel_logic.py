"""CPU (CI): the sampler's device code (src/sample_kernel.cuh) compiled by the host C++ compiler and
run with one host thread an emulated GPU thread (tests/c/sample_kernel_on_host.cpp) against the host
emulation, bit for bit: pass 1, the radix selections on the row and on the shared-memory candidates,
the draw, the penalty kernels and every phase of the split variant (tokens, flags, log-probabilities,
steps, penalized logits, the penalty workspace back to zero). Mutations of the candidate gather, the
split draw's chunk target, phase A2's masses and phase A's counts are each caught by it (checked when
it was written). What it cannot see is the GPU's own scheduling and memory model: the GPU suite's."""

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
PKG = ROOT / "packages" / "vocab"
sys.path.insert(0, str(ROOT / "tools"))


def test_sampler_device_code_on_host_equals_host_emulation(tmp_path):
    import cuda_toolkit

    cxx = shutil.which("c++") or shutil.which("g++")
    assert cxx, "a C++ compiler on PATH"
    root = cuda_toolkit.toolkit_root(cuda_toolkit.provide(os.environ.get("MLOPS_TEST_CUDA", "13.0")))
    exe = tmp_path / "sample_kernel_on_host"
    # -ffp-contract=off: as the library is built (cmake/mlops.cmake), so a*b+c is never fused
    cmd = [cxx, "-std=c++20", "-O1", "-pthread", "-ffp-contract=off", "-w", f"-I{root / 'include'}",
           f"-I{PKG / 'include'}", f"-I{ROOT / 'packages' / 'common' / 'include'}", f"-I{PKG / 'src'}",
           str(PKG / "tests" / "c" / "sample_kernel_on_host.cpp"), str(PKG / "src" / "sample_host.cpp"), "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(exe)], capture_output=True, text=True, check=False, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith(" 0 failed"), r.stdout[-4000:] + r.stderr[-2000:]
    assert int(r.stdout.split()[-4]) >= 250, r.stdout[-200:]
