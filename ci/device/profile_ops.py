"""One call of each hot kernel the perf issues are about, for ncu (run under `ncu -k regex:...`):
norm RMSNorm 16384x4096 and 2048x4096 bf16, RoPE T=4096 / 32768 (32 q + 8 kv heads, D=128, views
of a fused qkv, in place with the cos/sin cache), FBLA decode 3+3 exact B=1 / B=8, L=16K.
    ncu --set full -k regex:'norm|rope|fbla' python3 ci/device/profile_ops.py norm rope attention"""

import sys

import torch

which = set(sys.argv[1:]) or {"norm", "rope", "attention"}
g = torch.Generator(device="cuda").manual_seed(0)
if "norm" in which:
    import mlops.norm as mn
    for T in (16384, 2048):
        x = torch.randn(T, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(4096, device="cuda", dtype=torch.bfloat16, generator=g)
        mn.rms_norm(x, w)
if "rope" in which:
    import mlops.positional as mp
    inv_freq, _, _ = mp.rope_parameters({"head_dim": 128, "rope_theta": 500000.0})
    cache = mp.build_cos_sin_cache(inv_freq.cuda(), 131072)
    for T in (4096, 32768):
        qkv = torch.randn(T, 48 * 128, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k = qkv[:, :4096].view(T, 32, 128), qkv[:, 4096:5120].view(T, 8, 128)
        pos = torch.randint(0, 131072, (T,), device="cuda", generator=g)
        mp.apply_rope(q, k, pos, cache, inplace=True)
if "attention" in which:
    import mlops.attention as A
    for B in (1, 8):
        k = torch.randn(B, 8, 16384, 128, device="cuda", generator=g).bfloat16()
        v = torch.randn(B, 8, 16384, 128, device="cuda", generator=g).bfloat16()
        q = torch.randn(B, 32, 128, device="cuda", generator=g).bfloat16()
        c = A.encode(k, v, mode="3+3")
        A.decode(q, c, exact=True)
torch.cuda.synchronize()
