#!/usr/bin/env python3
"""Session 15, GPU run 83: where the open targets' time goes, at the GPU's own clocks (no ncu clock lock).

For each planned call of an open target (issue 6 decode, issue 5 sampling at B = 1 / 64, issue 2 quantized norm at
2048 rows), REPS calls each after an L2 flush (a read of 2x L2), profiled by torch.profiler (CUPTI activity records):
per kernel its median duration, and the call's span (first kernel start to last kernel end, the flush excluded) and the
gaps between its kernels. Prints one table; writes JSON lines to argv[1] when given.
"""

import json
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

REPS = 20
# float32, summed as float32: a read only (run 83 summed a uint8 buffer as int64, which made torch write a 1 GB
# int64 copy first: the timed calls then started on dirty L2 lines)
FLUSH = torch.zeros(2 * 60 * 2**20 // 4, dtype=torch.float32, device="cuda")


def timeline(fn):
    """Per kernel median durations (µs), the median span and the median gap before each kernel of fn's call."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            FLUSH.sum()  # L2 clean (a read) before the call
            torch.cuda._sleep(50_000)  # the GPU busy, so the call's launches queue ahead of the GPU
            fn()
        torch.cuda.synchronize()
    ev = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                 and "reduce" not in e.name and "sleep" not in e.name.lower()
                 and "Memcpy" not in e.name and "Memset" not in e.name),
                key=lambda e: e.time_range.start)
    per = len(ev) // REPS
    calls = [ev[i * per:(i + 1) * per] for i in range(REPS)]
    names = [e.name for e in calls[0]]
    dur = [statistics.median(c[j].time_range.elapsed_us() for c in calls) for j in range(per)]
    gaps = [statistics.median(c[j].time_range.start - c[j - 1].time_range.end for c in calls) if j else 0.0
            for j in range(per)]
    span = statistics.median(c[-1].time_range.end - c[0].time_range.start for c in calls)
    return names, dur, gaps, span


def attention_cases():
    import mlops.attention as A
    for B, L in ((1, 4096), (1, 16384), (8, 16384), (8, 131072)):
        g = torch.Generator(device="cuda").manual_seed(B * 7 + L)
        k = torch.randn(B, 8, L, 128, device="cuda", generator=g).bfloat16()
        v = torch.randn(B, 8, L, 128, device="cuda", generator=g).bfloat16()
        q = torch.randn(B, 32, 128, device="cuda", generator=g).bfloat16()
        c = A.encode(k, v, mode="3+3")
        del k, v
        out = torch.empty(B, 32, 128, dtype=torch.bfloat16, device="cuda")
        yield (f"attention decode 3+3 exact B{B} L{L // 1024}K",
               lambda q=q, c=c, out=out: A.decode(q, c, exact=True, out=out))


def sdpa_case(B, L):
    k = torch.randn(B, 8, L, 128, device="cuda").bfloat16()
    v = torch.randn(B, 8, L, 128, device="cuda").bfloat16()
    q = torch.randn(B, 32, 1, 128, device="cuda").bfloat16()
    F = torch.nn.functional
    return lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def vocab_cases():
    import mlops.vocab as mv
    V = 151936
    cfgs = [("temperature", dict(temperature=0.8)), ("top-k 50", dict(temperature=0.8, top_k=50)),
            ("top-p 0.9", dict(temperature=0.8, top_p=0.9)),
            ("top-k+top-p+min-p", dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05))]
    for B in (1, 64):
        z = torch.randn(B, V, device="cuda") * 3
        for name, cfg in cfgs:
            s = mv.Sampler(B, V, device="cuda", seed=1, **cfg)
            yield f"sampler B{B} {name}", (lambda s=s, z=z: s(z))


def norm_cases():
    import mlops.norm as mn
    for T in (2048, 16384):
        x = torch.randn(T, 4096, device="cuda").bfloat16()
        w = torch.randn(4096, device="cuda").bfloat16()
        for quant in (None, "int8", "nvfp4"):
            yield f"rms_norm {T}x4096 {quant or 'y'}", (lambda x=x, w=w, q=quant: mn.rms_norm(x, w, quant=q))


def main():
    out = open(sys.argv[1], "a") if len(sys.argv) > 1 else None
    which = sys.argv[2].split(",") if len(sys.argv) > 2 else ["attention", "vocab", "norm"]
    gens = {"attention": lambda: list(attention_cases()) + [
                (f"sdpa B{B} L{L // 1024}K", sdpa_case(B, L)) for B, L in ((1, 16384), (8, 131072))],
            "vocab": lambda: list(vocab_cases()), "norm": lambda: list(norm_cases())}
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} REPS {REPS}, L2 flushed, medians, µs")
    for pkg in which:
        try:
            cases = gens[pkg]()
        except Exception as e:  # a package missing from PYTHONPATH: say so, go on
            print(f"{pkg}: skipped ({type(e).__name__}: {e})")
            continue
        for label, fn in cases:
            names, dur, gaps, span = timeline(fn)
            print(f"{label}: span {span:.2f}")
            for n, d, gp in zip(names, dur, gaps):
                print(f"    {d:8.2f}  (gap before {gp:6.2f})  {n[:110]}")
            if out:
                out.write(json.dumps(dict(case=label, span_us=span, kernels=[
                    dict(name=n, us=d, gap_us=gp) for n, d, gp in zip(names, dur, gaps)])) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
