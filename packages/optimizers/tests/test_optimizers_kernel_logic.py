"""CPU (CI): the kernels' device code (src/optim_kernel.cuh, src/optim_norm_kernel.cuh) compiled
by the host C++ compiler and run with one fiber an emulated GPU thread
(tests/c/kernel_on_host.cpp) against the host emulation, bit for bit: the chunk walk, the unit /
lane layout, vector loads and stores, ragged tails, unaligned rows, the stochastic-rounding
indices, the 8-bit blocks (a warp max: shuffles meet at a barrier) and the global norm's
fixed summation order (a reversed fold is caught) are checked without a GPU. The device-only
arithmetic (cvt) is the GPU suite's."""

import os
import pathlib
import subprocess
import sys

from mlops_testing import build_cxx

ROOT = pathlib.Path(__file__).resolve().parents[3]
PKG = ROOT / "packages" / "optimizers"
sys.path.insert(0, str(ROOT / "tools"))


def test_kernel_device_code_on_host_equals_host_emulation(tmp_path):
    import cuda_toolkit

    root = cuda_toolkit.toolkit_root(cuda_toolkit.provide(os.environ.get("MLOPS_TEST_CUDA", "13.0")))
    # -ffp-contract=off: as the library is built (cmake/mlops.cmake), so a*b+c is never fused
    exe = build_cxx(tmp_path / "kernel_on_host",
                    ["-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-ffp-contract=off", "-w", f"-I{root / 'include'}",
                     f"-I{PKG / 'include'}", f"-I{ROOT / 'packages' / 'common' / 'include'}", f"-I{PKG / 'src'}",
                     PKG / "tests" / "c" / "kernel_on_host.cpp", PKG / "src" / "optim_host.cpp",
                     PKG / "src" / "optim_api.cpp"])
    r = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and " 0 failed" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().endswith("15 passed, 0 failed")


def test_qtables_are_generated_from_the_dynamic_maps():
    """src/optim_qtables.h is tools/gen_qtables.py's output (the maps, thresholds and buckets it
    derives from the spec, quantize_nearest, re-derived here)."""
    r = subprocess.run([sys.executable, str(PKG / "tools" / "gen_qtables.py"), "--check"], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0, "src/optim_qtables.h differs from tools/gen_qtables.py's output: rerun it\n" + r.stderr


def test_table_quantizer_equals_quantize_nearest(tmp_path):
    """The kernels' table quantizer (src/optim_quant.h) against quantize_nearest (the spec, which
    the host emulation runs) on both standard maps: every 61st float bit pattern of all 2^32 and
    every float within 64 ulps of each map entry, threshold and bucket edge (stride 1, all 2^32:
    run by hand, see docs/optimizers.md). kernel_on_host.cpp checks the maps are
    mlops_optim_dynamic_map's."""
    exe = build_cxx(tmp_path / "qtables_exhaustive",
                    ["-std=c++20", "-O2", "-ffp-contract=off", "-w", f"-I{PKG / 'include'}",
                     f"-I{ROOT / 'packages' / 'common' / 'include'}", f"-I{PKG / 'src'}",
                     PKG / "tests" / "c" / "qtables_exhaustive.cpp"])
    r = subprocess.run([str(exe), "61"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "mismatches 0, uncovered 0" in r.stdout, r.stdout + r.stderr
