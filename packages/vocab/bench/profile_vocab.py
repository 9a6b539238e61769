#!/usr/bin/env python3
"""The vocab kernels of the open performance targets, one call each after a warm-up, for a profiler:

    ncu --set full --clock-control none -k regex:'lm_head_pipe_kernel|sample_cluster_kernel' \\
        python3 packages/vocab/bench/profile_vocab.py > ncu-vocab.log 2>&1     (14 launches, ~90 s)

LM head 151936 x 4096 with the statistics: M = 1 planned (the 6-stage pipe on sm_90), then M = 8
through the 4-stage pipe and the 6-stage pipe (the 6-stage form wins at M = 1 and loses at M = 8 in
run 14: 319.7 / 379.2 us against 325.9 / 336.1: its main loop is what to compare). Then the sampler
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
    for M, variant in [(1, None), (8, "mma_m16n8k16_bf16_pipe"), (8, "mma_m16n8k16_bf16_pipe_deep")]:
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
