"""One call of each hot kernel the perf issues are about, for ncu. Every section warms up first and
brackets its measured call(s) in cudaProfilerStart/Stop, so run ncu with --profile-from-start off:
    ncu --set full --clock-control none --profile-from-start off -o rep \
        python3 ci/device/profile_ops.py norm int8 rope attention sample lm_head
Sections: rope_decode (T=1/32 planned cache / on the fly, mul_ of the same bytes at T=1/32/4096),
norm2048 (2048x4096 plain / int8 / fp8 / nvfp4 planned), norm (RMSNorm 16384x4096 / 2048x4096 bf16,
planned), int8 (RMSNorm + INT8 planned and r16lq), rope (T=4096 / 32768, 32 q + 8 kv heads, D=128,
fused-qkv views, in place, cache and on the fly), attention (FBLA 3+3 exact B=1 L=16K, the planned
variant), sample (V=151936, B=1 / 64: temperature, top_p 0.9, top_k 50, planned), lm_head (151936x4096
and 32000x4096, M=1 / 8, stats)."""

import sys

import torch

which = set(sys.argv[1:]) or {"norm", "rope", "attention"}
g = torch.Generator(device="cuda").manual_seed(0)


def measured(fn, label):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    print(f"# profiled: {label}", flush=True)
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if "norm" in which or "int8" in which:
    import mlops.norm as mn
    for T in (16384, 2048):
        x = torch.randn(T, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(4096, device="cuda", dtype=torch.bfloat16, generator=g)
        if "norm" in which:
            measured(lambda: mn.rms_norm(x, w), f"rms_norm {T}x4096")
        if "int8" in which:
            measured(lambda: mn.rms_norm(x, w, quant="int8"), f"rms_norm int8 {T}x4096 planned")
            measured(lambda: mn.rms_norm(x, w, quant="int8", variant="r16lq"), f"rms_norm int8 {T}x4096 r16lq")
if "rope" in which:
    import mlops.positional as mp
    inv_freq, _, _ = mp.rope_parameters({"head_dim": 128, "rope_theta": 500000.0})
    cache = mp.build_cos_sin_cache(inv_freq.cuda(), 131072)
    for T in (4096, 32768):
        qkv = torch.randn(T, 48 * 128, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k = qkv[:, :4096].view(T, 32, 128), qkv[:, 4096:5120].view(T, 8, 128)
        pos = torch.randint(0, 131072, (T,), device="cuda", generator=g)
        measured(lambda: mp.apply_rope(q, k, pos, cache, inplace=True), f"rope T={T} cache")
        measured(lambda: mp.apply_rope(q, k, pos, inv_freq=inv_freq.cuda(), max_positions=131072, inplace=True),
                 f"rope T={T} on the fly")
if "rope_decode" in which:
    # session 5: why decode sits ~1.2 us of kernel over mul_ of the same bytes, and T=4096 ~2.8 us
    # (run 22: T=1 2.38 / 1.09, T=32 2.66 / 1.44, T=4096 21.71 / 18.93 us CUPTI)
    import mlops.positional as mp
    inv_freq, _, _ = mp.rope_parameters({"head_dim": 128, "rope_theta": 500000.0})
    cache = mp.build_cos_sin_cache(inv_freq.cuda(), 131072)
    for T in (1, 32, 4096):
        qkv = torch.randn(T, 48 * 128, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k = qkv[:, :4096].view(T, 32, 128), qkv[:, 4096:5120].view(T, 8, 128)
        pos = torch.randint(0, 131072, (T,), device="cuda", generator=g)
        if T < 4096:
            measured(lambda: mp.apply_rope(q, k, pos, cache, inplace=True), f"rope T={T} cache planned")
            measured(lambda: mp.apply_rope(q, k, pos, inv_freq=inv_freq.cuda(), max_positions=131072, inplace=True),
                     f"rope T={T} on the fly planned")
        qk = qkv[:, :5120]
        measured(lambda: qk.mul_(1.0), f"torch mul_ T={T} same bytes")
if "norm2048" in which:
    # session 5: the quantized outputs at 2048x4096 (run 22: plain 12.13, INT8 14.14, FP8 dyn 13.95 us)
    import mlops.norm as mn
    x = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16, generator=g)
    measured(lambda: mn.rms_norm(x, w), "rms_norm 2048x4096 planned")
    for q in ("int8", "fp8", "nvfp4"):
        measured(lambda: mn.rms_norm(x, w, quant=q), f"rms_norm {q} 2048x4096 planned")
if "attention" in which:
    import mlops.attention as A
    B = 1
    k = torch.randn(B, 8, 16384, 128, device="cuda", generator=g).bfloat16()
    v = torch.randn(B, 8, 16384, 128, device="cuda", generator=g).bfloat16()
    q = torch.randn(B, 32, 128, device="cuda", generator=g).bfloat16()
    c = A.encode(k, v, mode="3+3")
    measured(lambda: A.decode(q, c, exact=True), "fbla decode B1 L16K exact planned")
if "sample" in which:
    import mlops.vocab as mv
    V = 151936
    for B in (1, 64):
        z = torch.randn(B, V, device="cuda", generator=g) * 3
        toks = torch.empty(B, dtype=torch.int32, device="cuda")
        for mode, cfg in {"temperature": dict(temperature=0.8), "top_p0.9": dict(temperature=0.8, top_p=0.9),
                          "top_k50": dict(temperature=0.8, top_k=50)}.items():
            s = mv.Sampler(B, V, device="cuda", seed=1, **cfg)
            zz = z.clone()
            measured(lambda: s(zz, tokens=toks), f"sample B={B} {mode} planned")
if "lm_head" in which:
    import mlops.vocab as mv
    for V in (151936, 32000):
        W = (torch.randn(V, 4096, device="cuda", generator=g) * 0.02).bfloat16()
        for M in (1, 8):
            x = torch.randn(M, 4096, device="cuda", generator=g).bfloat16()
            out = torch.empty(M, V, device="cuda")
            measured(lambda: mv.lm_head(x, W, out=out, stats=True), f"lm_head {V}x4096 M={M} stats planned")
            measured(lambda: x @ W.T, f"cublas {V}x4096 M={M}")
torch.cuda.synchronize()
