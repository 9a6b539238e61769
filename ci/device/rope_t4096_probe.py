"""Issue 3's open measurements in one clean call (written in session 5; its device time ran out before
it ran): at T=4096 decx5 from the cache (run 28: 20.96 us of kernel, its events host-bound there)
beside dec from the cache, stage4 on the fly, the planner's rows and torch mul_ of the same bytes; at
T=1 / 32 the planner's decode rows (dec from the cache: run 27 1.41 / 1.70 us over the empty kernel,
run 28's T=32 row host-bound). The bench's shape and harness (bench_positional.py: fused-qkv views, in
place, read L2 flush, GPU lead), events interleaved over 300 rounds + CUPTI kernel times, nothing else
on the machine. JSON lines where MLOPS_BENCH_OUT says."""
import torch

import mlops.positional as mp
from mlops_bench import Bench

HQ, HK, D, MAXP = 32, 8, 128, 131072
b = Bench("positional")
b.header()
inv_freq = mp.rope_parameters({"head_dim": D, "rope_theta": 500000.0})[0].cuda()
cache = mp.build_cos_sin_cache(inv_freq, MAXP)
for T in (1, 32, 4096):
    qkv = torch.randn(T, (HQ + 2 * HK) * D, device="cuda", dtype=torch.bfloat16)
    q, k = qkv[:, : HQ * D].view(T, HQ, D), qkv[:, HQ * D:(HQ + HK) * D].view(T, HK, D)
    pos = torch.randint(0, MAXP, (T,), device="cuda")
    qk = qkv[:, : (HQ + HK) * D]
    fns = {
        "empty kernel": lambda: torch.cuda._sleep(0),
        "planner, cache": lambda: mp.apply_rope(q, k, pos, cache, inplace=True),
        "planner, on the fly": lambda: mp.apply_rope(q, k, pos, inv_freq=inv_freq, max_positions=MAXP, inplace=True),
        "torch mul_(1.0), same bytes": lambda: qk.mul_(1.0),
    }
    if T == 4096:
        fns.update({
            "decx5, cache": lambda: mp.apply_rope(q, k, pos, cache, inplace=True, variant="decx5"),
            "dec, cache": lambda: mp.apply_rope(q, k, pos, cache, inplace=True, variant="dec"),
            "stage4, on the fly": lambda: mp.apply_rope(q, k, pos, inv_freq=inv_freq, inplace=True, variant="stage4"),
        })
    t = b.time_interleaved(fns, reps=300)
    for key, fn in fns.items():
        kt = b.kernel_time(fn, reps=30)
        b.record(case="rope issue-3 probe", shape=f"T={T} {HQ}+{HK}x{D} bf16", impl=key, seconds=t[key],
                 bytes=2 * T * (HQ + HK) * D * 2, kernel_us=None if kt is None else round(kt * 1e6, 2),
                 over_empty_kernel_us=round((t[key] - t["empty kernel"]) * 1e6, 2))
