"""CPU timer of rms_norm's eager fast path (the Python layer of bench_norm.py's python_overhead
row) without a GPU: the module's source runs with x.is_cuda read as x.is_cpu, a stub raw stream
and a stub C.run_plain (a Python function that counts its calls), on bf16 CPU tensors of 1x4096
with out=. Times a git revision's _ops.py against the working tree's, in process CPU time (so a
loaded host reads close to a quiet one).

    python packages/norm/bench/python_part_cpu.py [REV]      # REV defaults to HEAD
"""
import os
import subprocess
import sys
import time
import timeit
import types

import torch

OPS = "packages/norm/python/mlops/norm/_ops.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class StubC:
    calls = 0

    @staticmethod
    def run_plain(*a):
        StubC.calls += 1
        return True

    run_rms = run_plain  # the 10-argument entry of rms_norm's fast path (session 5)

    @staticmethod
    def variants():
        return []


def load(src, tag):
    src = (src.replace("x.is_cuda", "x.is_cpu").replace("from ._native import C", "C = StubC")
           .replace("mlops_norm::", f"mlops_norm_{tag}::"))  # a library name of its own per copy
    m = types.ModuleType(f"ops_{tag}")
    m.StubC = StubC
    exec(compile(src, f"_ops.py ({tag})", "exec"), m.__dict__)
    m._raw_stream = lambda d: 0
    return m


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    old = load(subprocess.check_output(["git", "-C", ROOT, "show", f"{rev}:{OPS}"], text=True), "rev")
    new = load(open(os.path.join(ROOT, OPS)).read(), "tree")
    x = torch.randn(1, 4096, dtype=torch.bfloat16)
    w = torch.randn(4096, dtype=torch.bfloat16)
    out = torch.empty_like(x)
    for m in (old, new):  # the fast path must reach the (stub) native call: else this times norm()
        c = StubC.calls
        assert m.rms_norm(x, w, out=out) is out and StubC.calls == c + 1, m.__name__
    n = 100000
    for name, m in ((rev, old), ("tree", new)) * 2:
        f = m.rms_norm
        t = min(timeit.repeat(lambda: f(x, w, out=out), number=n, repeat=5, timer=time.process_time)) / n
        print(f"{name:>8}: {t * 1e6:.3f} us a call (process time)")


if __name__ == "__main__":
    main()
