"""CPU (CI): the refine's branch-free pieces (src/fbla_math.h, session 17) against the functions they stand for, bit
for bit: exp_det_le against exp_det for floats x <= 88.5 and NaN, bounded_digits against qhat_digits for a slice's
weights and the q digits (w = +-wmax, +-wmax / 2, +- the float below wmax, 0, with inv = pv_inv(wmax)). Every 97th bit
pattern here (3.4e7 exp and 1.5e8 digit cases); tests/c/exp_le_check.cpp with stride 1 checks all of them (docs/attention.md, session 17)."""

import pathlib
import subprocess

from mlops_testing import build_cxx

PKG = pathlib.Path(__file__).resolve().parents[1]
COMMON = PKG.parent / "common" / "include"


def test_exp_det_le_and_bounded_digits_match(tmp_path):
    exe = build_cxx(tmp_path / "exp_le_check", ["-std=c++20", "-O2", "-ffp-contract=off", "-fno-strict-aliasing",
                                                f"-I{PKG / 'include'}", f"-I{COMMON}", f"-I{PKG / 'src'}",
                                                PKG / "tests" / "c" / "exp_le_check.cpp"], missing_ok=True)
    r = subprocess.run([str(exe), "97"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and " 0 differ; " in r.stdout and r.stdout.strip().endswith(" 0 differ"), r.stdout[-2000:]
