"""Session 17 (helper n): LayerNorm A/B on the H200. bf16, T x H for T in 1, 128, 2048, 16384 and H in 2048, 4096,
8192: the planned call mn.layer_norm(x, w, b), F.layer_norm beside it, and each lean LayerNorm variant named (ln1 /
ln2 / ln4w, where the installed wheel has them), timed interleaved (tools/testing/mlops_bench.py: L2 flushed, events,
medians). One JSON line a case (Bench.record); argv[1]: a label (before / new)."""

import sys

import torch
import torch.nn.functional as F
from mlops_bench import Bench

import mlops.norm as mn

label = sys.argv[1] if len(sys.argv) > 1 else "?"
b = Bench("norm", reps=100, lead_us=150.0)
b.header()
names = [v["name"] for v in mn.norm_variants()]
lns = [n for n in ("ln1", "ln2", "ln4w", "ln4wp") if n in names]
props = torch.cuda.get_device_properties(0)
sms, sm = props.multi_processor_count, props.major * 10 + props.minor
dt = torch.bfloat16
for H in (8192, 4096, 2048):  # the widest first: the run-92 gap, and a timeout keeps what is done
    for T in (1, 128, 2048, 16384):
        g = torch.Generator(device="cuda").manual_seed(T + H)
        x = torch.randn(T, H, device="cuda", dtype=dt, generator=g)
        w = torch.randn(H, device="cuda", dtype=dt, generator=g)
        bias = torch.randn(H, device="cuda", dtype=dt, generator=g)
        fns = {"planned": lambda: mn.layer_norm(x, w, bias), "F.layer_norm": lambda: F.layer_norm(x, (H,), w, bias, 1e-5)}
        for n in lns:
            fns[n] = (lambda n: lambda: mn.layer_norm(x, w, bias, variant=n))(n)
        t = b.time_interleaved(fns)
        io = 2 * T * H * 2 + 2 * H * 2
        try:  # the planner's pick for this call (the session-17 hook: LayerNorm in the single order, a weight)
            pick = names[mn._ops.C.plan_call(T, H, 1, 1, False, 0, sms, sm)]
        except Exception:  # noqa: BLE001
            pick = None
        for n, s in t.items():
            b.record(case="layer_norm_ab", label=label, shape=f"{T}x{H}", impl=n, seconds=s, bytes=io,
                     peer="F.layer_norm", peer_seconds=t["F.layer_norm"], planner=pick)
