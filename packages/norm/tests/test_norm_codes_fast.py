"""CPU (CI): the lx kernels' cheaper quantizers (src/norm_codes_fast.h) against norm_math.h's,
which the host emulation runs, compiled by the host C++ compiler (tests/c/codes_fast_exhaustive.cpp):
every bf16 / fp16 block amax for the FMA-corrected divisions and the INT8 bound, every float near
each INT8 / E2M1 rounding boundary, every float in [0, 8] for e2m1_nibble (every 7th for the "f"
variants' e2m1_nibble_f / _near / _finite, against e2m1_nibble), the block bound that
e2m1_nibble_near needs on every bf16 / fp16 amax, every E4M3 normal code, and for the packed
multiply of y = t * w (mul_packed8) every pair of finite bf16 values; session 13's INT8 table
(int8_tab, every bf16 amax) and NVFP4 word encoder (e2m1_word_finite / e2m1_signs8). The device-only cvt
of FP8 is the GPU suite's (test_norm_gpu.py::test_lean_quant_every_value)."""

import pathlib
import subprocess

from mlops_testing import build_cxx

PKG = pathlib.Path(__file__).resolve().parents[1]


def test_fast_codes_equal_host_quantizers(tmp_path):
    # -ffp-contract=off: as the library is built (cmake/mlops.cmake), so a*b+c is never fused
    exe = build_cxx(tmp_path / "codes_fast_exhaustive",
                    ["-std=c++20", "-O2", "-ffp-contract=off", "-w", f"-I{PKG / 'include'}",
                     f"-I{PKG.parent / 'common' / 'include'}", f"-I{PKG / 'src'}",
                     PKG / "tests" / "c" / "codes_fast_exhaustive.cpp"])
    r = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("18 passed, 0 failed"), r.stdout
