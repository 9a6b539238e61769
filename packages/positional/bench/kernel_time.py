"""Kernel-only durations under ncu, without the event harness's ~4.5 us launch / event overhead
(bench_positional.py's empty-kernel row): the bench shape (32 q + 8 kv heads x 128, bf16, fused
qkv views, in place) at T = 1 and 32 (decode candidates) and 4096 and 32768, the planner's call and
the candidates of runs 14-20, round B's flat kernels and session 5's dec kernels, each launched once (ncu serializes
kernels and flushes caches before each profiled one by default).

    ncu --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \\
        -k regex:rope_kernel python packages/positional/bench/kernel_time.py

The profiled kernels come in the order of the lines this script prints (one kernel a line).
"""

import torch

import mlops.positional as mp

HQ, HK, D = 32, 8, 128
CANDIDATES = [  # (label, apply_rope keywords besides the inputs)
    ("planner cache", dict()),
    ("planner on the fly", dict(on_the_fly=True)),
    ("early2 tpc=4 cache", dict(variant="early2", tokens_per_cta=4)),
    ("early2 tpc=8 cache (one wave at T=4096)", dict(variant="early2", tokens_per_cta=8)),
    ("early4 tpc=3 cache", dict(variant="early4", tokens_per_cta=3)),
    ("early4 tpc=3 on the fly", dict(variant="early4", tokens_per_cta=3, on_the_fly=True)),
    ("early2 tpc=4 on the fly", dict(variant="early2", tokens_per_cta=4, on_the_fly=True)),
    ("early2x5 tpc=4 cache", dict(variant="early2x5", tokens_per_cta=4)),
    ("early2x6 tpc=4 cache", dict(variant="early2x6", tokens_per_cta=4)),
    ("step2 tpc=4 cache (round-A planner)", dict(variant="step2", tokens_per_cta=4)),
    # session 4: q / k staged in shared memory by cp.async (160 / 192 KB an SM in flight)
    ("stage4 tpc=3 cache", dict(variant="stage4", tokens_per_cta=3)),
    ("stage4 tpc=3 on the fly", dict(variant="stage4", tokens_per_cta=3, on_the_fly=True)),
    ("stage4x6 tpc=3 cache", dict(variant="stage4x6", tokens_per_cta=3)),
    ("stage8 tpc=6 cache", dict(variant="stage8", tokens_per_cta=6)),
    # session 4 round B: one grid-stride list of items, no shared memory, no barrier
    ("flat2 cache", dict(variant="flat2")),
    ("flat2p cache (persistent, SMs x 4)", dict(variant="flat2p")),
    ("flat4p cache (persistent, SMs x 2)", dict(variant="flat4p")),
    # session 5: a warp a (token, head group), no CTA barrier; dec4 on the fly shares a token's sincos over 14 heads
    ("dec4 on the fly (warp = token x 14 heads)", dict(variant="dec4", on_the_fly=True)),
    ("dec4 cache", dict(variant="dec4")),
    ("dec on the fly", dict(variant="dec", on_the_fly=True)),
    # session 5, round B: dec at 5 CTAs an SM on the direct cache path (48 registers, no spills)
    ("decx5 cache", dict(variant="decx5")),
    ("dec cache", dict(variant="dec")),
]


# decode (session 4): early2 from the cache (positions -> cache row: two DRAM round trips; the planner's
# until run 27, dec since) against the stage kernels on the fly (positions, inv_freq and data in one round trip)
DECODE = [
    ("planner cache (dec since run 27)", dict()),
    ("early2 cache (the planner's until run 27)", dict(variant="early2", tokens_per_cta=1, heads_per_cta=16)),
    ("early2 on the fly", dict(variant="early2", on_the_fly=True)),
    ("planner on the fly (dec up to 8 tokens, stage4 since run 20 above)", dict(on_the_fly=True)),
    ("stage4 cache", dict(variant="stage4")),
    ("flat2 cache (no barrier, no shared memory)", dict(variant="flat2")),
    ("step2 cache (3 round trips, the smallest code)", dict(variant="step2", tokens_per_cta=1, heads_per_cta=16)),
    # session 5 (run 25: decode is each warp's instruction chain): a warp a (token, 4 heads), no CTA barrier
    ("dec cache (cos/sin straight from the cache row)", dict(variant="dec")),
    ("dec on the fly (sincos over the warp's lanes, __syncwarp)", dict(variant="dec", on_the_fly=True)),
]


def main():
    inv_freq, _, _ = mp.rope_parameters({"head_dim": D, "rope_theta": 500000.0})
    inv_freq = inv_freq.cuda()
    cache = mp.build_cos_sin_cache(inv_freq, 131072)
    torch.cuda.synchronize()
    print("kernel order (the rope kernels; the cache builder is rope_cache_kernel, excluded by -k):")
    for T in (1, 32, 4096, 32768):
        qkv = torch.randn(T, (HQ + 2 * HK) * D, device="cuda", dtype=torch.bfloat16)
        q = qkv[:, : HQ * D].view(T, HQ, D)
        k = qkv[:, HQ * D:(HQ + HK) * D].view(T, HK, D)
        pos = torch.randint(0, 131072, (T,), device="cuda")
        for label, kw in DECODE if T <= 32 else CANDIDATES:
            kw = dict(kw)
            src = dict(inv_freq=inv_freq) if kw.pop("on_the_fly", False) else dict(cos_sin_cache=cache)
            mp.apply_rope(q, k, pos, inplace=True, **src, **kw)
            torch.cuda.synchronize()
            print(f"T={T} {label}", flush=True)


if __name__ == "__main__":
    main()
