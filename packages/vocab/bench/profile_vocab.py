#!/usr/bin/env python3
"""The vocab kernels of the open performance targets, one call each after a warm-up, for a profiler:

    ncu --set full --clock-control none -k regex:'lm_head_pipe_kernel|lm_head_stream_kernel|sample_cluster_kernel' \\
        python3 packages/vocab/bench/profile_vocab.py > ncu-vocab.log 2>&1     (16 launches, ~100 s)

LM head 151936 x 4096 with the statistics: M = 1 planned (the 6-stage pipe on sm_90: 283 us in run
19's ncu, 4.40 TB/s), then the stream candidates: stream8 at M = 1 and 8 (8-row chunks of 1 KB a
row, x in registers), stream32 at M = 1 (32-row chunks of 256 B a row). Then the sampler
at V = 151936: B = 1 greedy through cluster16_smem (its 11 us with nothing but the max to find: the
fixed cost of a cluster launch, staging and barriers), B = 1 top-p 0.9 (T = 0.8) through
cluster16_smem and cluster16_smem_es (the rounds' early stop), B = 64 temperature through
cluster8_smem: the launches the ncu report names in that order.
"""

import torch

import mlops.vocab as mv


def main():
    V, H = 151936, 4096
    w = torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02
    for M, variant in [(1, None), (1, "mma_m16n8k16_bf16_stream8"), (8, "mma_m16n8k16_bf16_stream8"),
                       (1, "mma_m16n8k16_bf16_stream32")]:
        x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
        for _ in range(1):  # one warm-up (first-call attribute queries): ncu profiles it too
            o = mv.lm_head(x, w, stats=True, variant=variant)
        torch.cuda.synchronize()
        o = mv.lm_head(x, w, stats=True, variant=variant)
        torch.cuda.synchronize()
    for B, variant, cfg in [(1, "cluster16_smem", dict(temperature=0.0)),
                            (1, "cluster16_smem", dict(temperature=0.8, top_p=0.9)),
                            (1, "cluster16_smem_es", dict(temperature=0.8, top_p=0.9)),
                            (64, "cluster8_smem", dict(temperature=0.8))]:
        z = torch.randn(B, V, device="cuda") * 3
        s = mv.Sampler(B, V, device="cuda", seed=1, variant=variant, **cfg)
        for _ in range(1):  # one warm-up (first-call attribute queries): ncu profiles it too
            s(z.clone())
        torch.cuda.synchronize()
        s(z)
        torch.cuda.synchronize()
    print("tokens", int(o.argmax[0]))


if __name__ == "__main__":
    main()
