"""CPU (CI): mlops/common/testing/fibers.h, the cooperative scheduler every kernel-on-host runner runs its emulated GPU
threads on (tests/c/fibers_check.cpp): barriers across 1 ... 16384 fibers, the split arrive / wait, the alternating
pass order that exposes a missing barrier in both directions, the resume hook; a barrier one fiber never reaches
aborts with a message instead of hanging, and a stack overflow faults on the guard page."""

import os
import pathlib
import re
import signal
import subprocess

from mlops_testing import build_cxx

COMMON = pathlib.Path(__file__).resolve().parents[1]


def _exe(tmp_path):
    # -U_FORTIFY_SOURCE: fibers.h switches stacks by _longjmp, which the fortified longjmp rejects
    return build_cxx(tmp_path / "fibers_check",
                     ["-std=c++20", "-O1", "-U_FORTIFY_SOURCE", f"-I{COMMON / 'include'}",
                      COMMON / "tests" / "c" / "fibers_check.cpp"], missing_ok=True)


def test_fibers_barriers_order_and_hooks(tmp_path):
    # MLOPS_FIBERS_STACK_REPORT: the stack-depth report as well (stderr), which must name a depth inside the stack
    env = dict(os.environ, MLOPS_FIBERS_STACK_REPORT="1")
    r = subprocess.run([str(_exe(tmp_path))], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("11 passed, 0 failed"), r.stdout[-2000:] + r.stderr[-2000:]
    depths = [(int(a), int(b)) for a, b in re.findall(r"deepest stack (\d+) of (\d+) bytes", r.stderr)]
    assert depths and all(0 < a < b for a, b in depths), r.stderr[-2000:]


def test_fibers_deadlock_aborts_with_message(tmp_path):
    r = subprocess.run([str(_exe(tmp_path)), "deadlock"], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGABRT, (r.returncode, r.stdout[-2000:])
    assert "1 of 64 threads" not in r.stdout and "63 of 64 threads wait at a barrier" in r.stdout, r.stdout[-2000:]


def test_fibers_stack_overflow_faults(tmp_path):
    r = subprocess.run([str(_exe(tmp_path)), "overflow"], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stdout[-2000:])
