"""CPU (CI): the CUDA kernels' own source (src/fbla_kernels.cuh) compiled as host C++ and run as a
GPU runs them (a CTA = blockDim cooperative fibers, barriers for __syncthreads, per-warp exchanges
for shuffles and ballots, CTAs looping over the work items), behind the real C API: the records of
encode / append and the decode outputs against the host emulation bit for bit over both modes,
head dims 64 / 128, GQA 1 / 2 / 4 / 5 / 8 / 16, lengths across group boundaries, appends in steps,
exact / skip (gaps 20, 3, inf), fp32 / bf16 outputs, 1 ... 5 CTAs, scratch and records starting
with garbage, and a full cache (flag set, nothing written). So the kernels' indexing, item loops and
warp logic are checked in CI, which has no GPU; device-only instructions (cvt.rn.bf16x2 on sm_80+,
rintf, DP4A) are the GPU suite's (tests/test_attention_gpu.py)."""

import os
import pathlib
import subprocess

from mlops_testing import build_cxx

PKG = pathlib.Path(__file__).resolve().parents[1]
COMMON = PKG.parent / "common" / "include"


def test_kernel_emulation_matches_host_emulation(tmp_path):
    # -D__CUDACC__: the common headers' device helpers (warp_butterfly32) are compiled too;
    # -U_FORTIFY_SOURCE: the fibers switch stacks by _longjmp, which the fortified longjmp rejects
    exe = build_cxx(tmp_path / "fbla_kernel_emulation",
                    ["-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-ffp-contract=off", "-fno-strict-aliasing", "-D__CUDACC__",
                     f"-I{PKG / 'tests' / 'c' / 'emulation'}", f"-I{PKG / 'include'}", f"-I{COMMON}", f"-I{PKG / 'src'}",
                     PKG / "tests" / "c" / "fbla_kernel_emulation.cpp", PKG / "src" / "fbla_api.cpp",
                     PKG / "src" / "fbla_host.cpp"], missing_ok=True)
    # -j: the cases in worker processes, one a core (serially ~15 min on one core of a 2-core CI machine, which ran
    # past the old 900 s limit once); each case's time is on stderr
    jobs = max(1, min(4, len(os.sched_getaffinity(0))))
    r = subprocess.run([str(exe), "-j", str(jobs)], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0 and r.stdout.strip().endswith("4110 passed, 0 failed"), r.stdout[-4000:] + r.stderr[-2000:]
