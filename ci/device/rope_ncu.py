"""One decode call for ncu (session 7): apply_rope at T tokens, 32 q + 8 kv heads x 128, bf16, in place,
from the cache or on the fly, after warm-up calls, between two torch.cuda._sleep markers so
`ncu -k regex:rope_kernel --launch-skip 5 --launch-count 1` profiles exactly one planned launch.

    ncu --set full -k regex:rope_kernel --launch-skip 5 --launch-count 1 python3 ci/device/rope_ncu.py --fly"""
import argparse

import torch

import mlops.positional as mp

ap = argparse.ArgumentParser()
ap.add_argument("--tokens", type=int, default=1)
ap.add_argument("--fly", action="store_true", help="on the fly (inv_freq) instead of the cos/sin cache")
args = ap.parse_args()
HQ, HK, D, MAXP, T = 32, 8, 128, 131072, args.tokens
inv_freq = mp.rope_parameters({"head_dim": D, "rope_theta": 500000.0})[0].cuda()
cache = None if args.fly else mp.build_cos_sin_cache(inv_freq, MAXP)
qkv = torch.randn(T, (HQ + 2 * HK) * D, device="cuda", dtype=torch.bfloat16)
q, k = qkv[:, : HQ * D].view(T, HQ, D), qkv[:, HQ * D:(HQ + HK) * D].view(T, HK, D)
pos = torch.randint(0, MAXP, (T,), device="cuda")
for _ in range(8):
    if args.fly:
        mp.apply_rope(q, k, pos, inv_freq=inv_freq, max_positions=MAXP, inplace=True)
    else:
        mp.apply_rope(q, k, pos, cache, inplace=True)
torch.cuda.synchronize()
print("done")
