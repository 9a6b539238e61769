"""CPU (CI): the CUDA kernels' own source (src/rope_kernel.cuh, src/rope_kernel_early.cuh) compiled as
host C++ and run as a GPU runs it (a CTA = 256 threads with a barrier for __syncthreads), behind the
real C API: its bits against the host emulation over 150 cases for each kernel variant and for the
planner's pick (variant 0) (dtypes, NeoX /
GPT-J, shapes, 16-byte and scalar paths, in place / out of place, cache / on the fly, mrope,
out-of-range positions, CTA splits). So the kernels' indexing is checked in CI, which has no GPU; the
GPU suite checks the real thing."""

import pathlib
import subprocess

from mlops_testing import build_cxx

VARIANTS = ["step2", "early2", "early4", "early8", "early2x5", "early2x6", "stage4", "stage8", "stage4x6", "flat2",
            "flat2p", "flat4p", "dec", "dec2", "dec4", "decx5"]  # rope_launch.h's table
PKG = pathlib.Path(__file__).resolve().parents[1]
COMMON = PKG.parent / "common" / "include"


def test_kernel_emulation_matches_host_emulation(tmp_path):
    exe = build_cxx(tmp_path / "rope_kernel_emulation",
                    ["-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-ffp-contract=off", "-fno-strict-aliasing",
                     "-DMLOPS_ROPE_EMULATE_KERNEL", f"-I{PKG / 'tests' / 'c' / 'emulation'}", f"-I{PKG / 'include'}",
                     f"-I{COMMON}", f"-I{PKG / 'src'}", PKG / "tests" / "c" / "rope_kernel_emulation.cpp",
                     PKG / "src" / "rope_api.cpp", PKG / "src" / "rope_host.cpp"], missing_ok=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith(f"{150 * (len(VARIANTS) + 1) + 2} passed, 0 failed"), r.stdout[-4000:]
