"""Issue 3's measurements alone on the machine (session 5 wrote it for T = 4096, run 29 ran it; session 6
made the token counts, the variants and the number of blocks arguments). The bench's shape and harness
(bench_positional.py: fused-qkv views, in place, read L2 flush, GPU lead): each block is one
time_interleaved of the rows (events, 300 rounds, medians) plus CUPTI kernel times; several blocks show
the figures' spread between blocks (run 29's T = 1 empty-kernel row read 3.84 us, its T = 32 one 2.98).
JSON lines where MLOPS_BENCH_OUT says.

    python3 ci/device/rope_probe.py --tokens 1,32 --blocks 3
    python3 ci/device/rope_probe.py --tokens 256,1024,4096 --variants decx5,dec,early2x5
    python3 ci/device/rope_probe.py --tokens 1,32 --graph --max-positions 8192

Session 7 added --max-positions (the cache's rows; the positions are drawn below it) and --graph: each
row also captured alone in a CUDA graph and timed by replay (the way serving engines run decode), the
L2 flush and the lead spin outside the graph, beside its eager row."""
import argparse

import torch

import mlops.positional as mp
from mlops_bench import Bench

ap = argparse.ArgumentParser()
ap.add_argument("--tokens", default="1,32,4096")
ap.add_argument("--variants", default="", help="variants from the cache, beside the planner's rows")
ap.add_argument("--blocks", type=int, default=1)
ap.add_argument("--positions", default="random", choices=["random", "arange"],
                help="random positions (a batch of decode requests, the bench's) or 0 ... T-1 (one prefill)")
ap.add_argument("--max-positions", type=int, default=131072)
ap.add_argument("--graph", action="store_true", help="also time each row replayed from a CUDA graph")
args = ap.parse_args()

HQ, HK, D, MAXP = 32, 8, 128, args.max_positions
b = Bench("positional")
b.header()
inv_freq = mp.rope_parameters({"head_dim": D, "rope_theta": 500000.0})[0].cuda()
cache = mp.build_cos_sin_cache(inv_freq, MAXP)
one = torch.zeros(1, device="cuda")
for T in (int(t) for t in args.tokens.split(",")):
    qkv = torch.randn(T, (HQ + 2 * HK) * D, device="cuda", dtype=torch.bfloat16)
    q, k = qkv[:, : HQ * D].view(T, HQ, D), qkv[:, HQ * D:(HQ + HK) * D].view(T, HK, D)
    pos = torch.randint(0, MAXP, (T,), device="cuda") if args.positions == "random" else torch.arange(T, device="cuda")
    # mul_ over a contiguous tensor of q and k's bytes, as bench_positional.py's reference row (run 29 /
    # 30 took the strided qk view of qkv: torch's strided elementwise path, 53 us at T = 4096)
    qk = torch.randn(T, (HQ + HK) * D, device="cuda", dtype=torch.bfloat16)
    fns = {
        "empty kernel": lambda: torch.cuda._sleep(0),
        # a near-empty kernel CUPTI can time (the sleep kernels are the harness's markers)
        "torch fill_ of one element": lambda: one.fill_(0.0),
        "planner, cache": lambda: mp.apply_rope(q, k, pos, cache, inplace=True),
        "planner, on the fly": lambda: mp.apply_rope(q, k, pos, inv_freq=inv_freq, max_positions=MAXP, inplace=True),
        "torch mul_(1.0), same bytes": lambda: qk.mul_(1.0),
    }
    for v in filter(None, args.variants.split(",")):
        fns[f"{v}, cache"] = lambda v=v: mp.apply_rope(q, k, pos, cache, inplace=True, variant=v)
    if args.graph:
        for key, fn in list(fns.items()):
            fn()  # warm: the op's first call loads the module and plans outside the capture
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            fns[f"{key} [graph]"] = g.replay
    def base(key):  # a graph row against the empty kernel's graph, an eager row against its launch
        return "empty kernel [graph]" if key.endswith("[graph]") else "empty kernel"

    for block in range(args.blocks):
        t = b.time_interleaved(fns, reps=300)
        for key, fn in fns.items():
            kt = b.kernel_time(fn, reps=30)
            b.record(case="rope issue-3 probe", shape=f"T={T} {HQ}+{HK}x{D} bf16", impl=key, block=block,
                     positions=args.positions, max_positions=MAXP,
                     seconds=t[key], bytes=2 * T * (HQ + HK) * D * 2,
                     kernel_us=None if kt is None else round(kt * 1e6, 2),
                     over_empty_kernel_us=round((t[key] - t[base(key)]) * 1e6, 2))
