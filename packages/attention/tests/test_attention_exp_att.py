"""CPU (CI): the refine's branch-free arithmetic (src/fbla_math.h, session 27) against what it stands for:
exp_att against the float64 exp for floats x in [-87, 0] (within 2 ulp, monotone, and its edge cases), digit_scale's
power-of-two scales and digits_of's digits against rint(w * S) in float64 (amax every positive float: w = +-amax,
+-amax / 2, +- the float below, 0), and the encoder's scale arithmetic of record version 4 (bf16_up over the
non-negative floats; quant_range / quant_code over pairs of bf16 values: every value within half a stored step). Every
97th bit pattern here; tests/c/exp_att_check.cpp with stride 1 checks them
all (docs/attention.md, "The query against a closed group")."""

import pathlib
import re
import subprocess

from mlops_testing import build_cxx

PKG = pathlib.Path(__file__).resolve().parents[1]
COMMON = PKG.parent / "common" / "include"


def test_exp_att_and_digits(tmp_path):
    exe = build_cxx(tmp_path / "exp_att_check", ["-std=c++20", "-O2", "-ffp-contract=off", "-fno-strict-aliasing",
                                                 f"-I{PKG / 'include'}", f"-I{COMMON}", f"-I{PKG / 'src'}",
                                                 PKG / "tests" / "c" / "exp_att_check.cpp"], missing_ok=True)
    r = subprocess.run([str(exe), "97"], capture_output=True, text=True, timeout=600)
    m = re.search(r"exp_att: (\d+) checked, (\d+) bad .*digits: (\d+) checked, (\d+) bad; "
                  r"encoder: (\d+) checked, (\d+) bad", r.stdout)
    assert r.returncode == 0 and m, r.stdout[-2000:]
    assert int(m[1]) > 10**7 and m[2] == "0" and int(m[3]) > 10**8 and m[4] == "0", r.stdout[-2000:]
    assert int(m[5]) > 10**7 and m[6] == "0", r.stdout[-2000:]  # record version 4's bf16_up / quant_range / quant_code
