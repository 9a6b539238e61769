"""Session 55 (run 253): the CUDA activities of one Sampler call (graph replay) a mode at B = 1 and 8, as
torch.profiler (CUPTI) records them: which kernels a call holds and each one's median duration. N: calls (20)."""
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "tools/testing")
import mlops.vocab as mv  # noqa: E402
from mlops_bench import graphed  # noqa: E402

V = 151936
N = int(os.environ.get("N", "20"))
MODES = {"temperature": dict(temperature=0.8), "top_k50": dict(temperature=0.8, top_k=50),
         "top_p0.9": dict(temperature=0.8, top_p=0.9)}


def cuda_events(prof):
    evs = (e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return sorted(evs, key=lambda e: e.time_range.start)


for B in (1, 8):
    gen = torch.Generator(device="cuda").manual_seed(1000 + B)  # bench_vocab.py's rows
    z = torch.randn(B, V, device="cuda", generator=gen) * 3
    for mode, cfg in MODES.items():
        s = mv.Sampler(B, V, device="cuda", seed=1, **cfg)
        toks = torch.empty(B, dtype=torch.int32, device="cuda")
        replay = graphed(lambda: s(z, tokens=toks))
        for _ in range(N):
            replay()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(N):
                torch.cuda._sleep(20000)
                replay()
            torch.cuda.synchronize()
        names = {}
        for e in cuda_events(prof):
            if "spin" not in e.name:
                names.setdefault(e.name[:90], []).append(e.time_range.elapsed_us())
        print(f"B={B} {mode}:")
        for n, d in names.items():
            print(f"   {len(d):3d} x {statistics.median(d):7.2f} us  {n}")
