#!/usr/bin/env python3
"""The vocab kernels of the open performance targets, one call each after a warm-up, for a profiler:

    ncu --set full -k regex:'lm_head_pipe|sample_cluster|decode_best' python packages/vocab/bench/profile_vocab.py

LM head 151936 x 4096 at M = 1 with the statistics (the pipe kernel, the memset, the decode), then
the sampler at V = 151936, B = 1, top-p 0.9 (T = 0.8) through cluster16 and cluster16_smem, and
B = 64 temperature through cluster8_smem: the launches the ncu report names in that order.
"""

import torch

import mlops.vocab as mv


def main():
    V, H = 151936, 4096
    w = torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02
    x = torch.randn(1, H, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        o = mv.lm_head(x, w, stats=True)
    torch.cuda.synchronize()
    o = mv.lm_head(x, w, stats=True)
    torch.cuda.synchronize()
    for B, variant, cfg in [(1, "cluster16", dict(temperature=0.8, top_p=0.9)),
                            (1, "cluster16_smem", dict(temperature=0.8, top_p=0.9)),
                            (64, "cluster8_smem", dict(temperature=0.8))]:
        z = torch.randn(B, V, device="cuda") * 3
        s = mv.Sampler(B, V, device="cuda", seed=1, variant=variant, **cfg)
        for _ in range(3):
            s(z.clone())
        torch.cuda.synchronize()
        s(z)
        torch.cuda.synchronize()
    print("tokens", int(o.argmax[0]))


if __name__ == "__main__":
    main()
