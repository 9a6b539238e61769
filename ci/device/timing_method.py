"""What the bench's measurement adds to a large read (run 19: the lm_head kernel reads 151936x4096 bf16
in 283 us under ncu, 317-320 us in bench_vocab.py; cuBLAS 285 vs 317): the same calls timed
(a) by CUDA events with one weight buffer and L2 flushed, (b) by events rotating 2 and 4 weight
copies (bench_vocab.py's way), (c) by CUPTI kernel durations (Bench.kernel_time) for each, and the
2 GiB copy by events and by CUPTI. Writes JSON lines through the bench harness (case timing_method)."""

import sys
import pathlib

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "testing"))
from mlops_bench import Bench  # noqa: E402

import mlops.vocab as mv  # noqa: E402

b = Bench("vocab")
b.header()
V, H = 151936, 4096
x = torch.randn(1, H, device="cuda", dtype=torch.bfloat16)
out = torch.empty(1, V, device="cuda")
ws = [torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(4)]


def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


makers = {"cublas": lambda w: (lambda: torch.nn.functional.linear(x, w)),
          "mlops+stats": lambda w: (lambda: mv.lm_head(x, w, out=out, stats=True)),
          "mlops": lambda w: (lambda: mv.lm_head(x, w, out=out))}
for impl, make in makers.items():
    for copies in (1, 2, 4):
        replays = [graphed(make(w)) for w in ws[:copies]]
        st = {"i": 0}

        def rot(replays=replays, st=st):
            st["i"] = (st["i"] + 1) % len(replays)
            replays[st["i"]]()

        te = b.time(rot, flush=True, reps=60)
        tk = b.kernel_time(rot, flush=True, reps=30)
        b.record(case="timing_method lm_head 151936x4096 M=1", impl=impl, copies=copies, seconds=te,
                 kernel_us=None if tk is None else round(tk * 1e6, 2), bytes=V * H * 2)
a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
c = torch.empty_like(a)
te = b.time(lambda: c.copy_(a), flush=False, reps=30)
tk = b.kernel_time(lambda: c.copy_(a), flush=False, reps=10)
b.record(case="timing_method copy 2 GiB", impl="torch copy_", seconds=te,
         kernel_us=None if tk is None else round(tk * 1e6, 2), bytes=2 << 30)
