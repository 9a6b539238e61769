#!/usr/bin/env python3
"""The vocab kernels of the open performance targets, one call each after a warm-up, for a profiler:

    ncu --set full --clock-control none -k regex:'lm_head_pipe_kernel|lm_head_stream_kernel|sample_cluster_kernel' \\
        python3 packages/vocab/bench/profile_vocab.py > ncu-vocab.log 2>&1     (20 launches, ~120 s)

LM head 151936 x 4096 with the statistics: M = 1 planned (the 6-stage pipe on sm_90: 283 us in run
19's ncu, 4.40 TB/s), then the stream candidates: stream8 at M = 1 and 8 (8-row chunks of 1 KB a
row, x in registers), stream32 at M = 1 (32-row chunks of 256 B a row). Then the sampler
at V = 151936, session 4's candidates (run 19 profiled the staged cluster16_smem / cluster8_smem):
B = 1 greedy and temperature through cluster16_lean (the fixed cost of launch, staging and
barriers; the exp pass), B = 1 top-p 0.9 and top-k 50 (T = 0.8) through cluster16_gather (rounds
after the first in each CTA alone), B = 64 temperature through cluster8_lean and top-p through
cluster8_gather: the launches the ncu report names in that order (each after its warm-up call).
`--cases s9` (GPU run 51): the sampler launches of session 6's plan instead (B = 1 top-p wide / top-k
gather, B = 64 temperature lean, top-p wide, top-k lean and wide); `--cases s13`: session 13's plan at B = 64
(temperature lean, top-k and the combination tk, top-p tp); `--cases s35`: the planner's picks at B = 64 for
temperature, top-p, top-k and the combination; `--no-lm-head` skips the LM head.
"""

import argparse

import torch

import mlops.vocab as mv

# The LM head launches: (M, variant)
LM_HEAD_CASES = [(1, None), (1, "mma_m16n8k16_bf16_stream8"), (8, "mma_m16n8k16_bf16_stream8"),
                 (1, "mma_m16n8k16_bf16_stream32")]
# The sampler launches (B, variant, configuration): s4, session 4's candidates; s9, the plan of session 6
# (runs 31 / 33) for the open targets (issue 5)
SAMPLER_CASES = {
    "s4": [(1, "cluster16_lean", dict(temperature=0.0)),
           (1, "cluster16_lean", dict(temperature=0.8)),
           (1, "cluster16_gather", dict(temperature=0.8, top_p=0.9)),
           (1, "cluster16_gather", dict(temperature=0.8, top_k=50)),
           (64, "cluster8_lean", dict(temperature=0.8)),
           (64, "cluster8_gather", dict(temperature=0.8, top_p=0.9))],
    "s9": [(1, "cluster16_wide", dict(temperature=0.8, top_p=0.9)),
           (1, "cluster16_gather", dict(temperature=0.8, top_k=50)),
           (64, "cluster8_lean", dict(temperature=0.8)),
           (64, "cluster8_wide", dict(temperature=0.8, top_p=0.9)),
           (64, "cluster8_lean", dict(temperature=0.8, top_k=50)),
           (64, "cluster8_wide", dict(temperature=0.8, top_k=50))],
    # session 13's plan for the modes still above issue 5's 60 us at B = 64 (runs 69 / 76): top-k alone and
    # top-k + top-p + min-p through cluster8_tk, top-p through cluster8_tp; temperature through cluster8_lean
    # as the floor they are measured against
    "s13": [(64, "cluster8_lean", dict(temperature=0.8)),
            (64, "cluster8_tk", dict(temperature=0.8, top_k=50)),
            (64, "cluster8_tk", dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)),
            (64, "cluster8_tp", dict(temperature=0.8, top_p=0.9))],
    # session 16 (GPU run 90): the planner's own picks at B = 1 (variant None) for the modes above issue 5's 15 us
    # there, with temperature alone as the floor they are measured against
    "s16": [(1, None, dict(temperature=0.8)),
            (1, None, dict(temperature=0.8, top_k=50)),
            (1, None, dict(temperature=0.8, top_p=0.9)),
            (1, None, dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05))],
    # session 35 (ci/device/s35n.sh): the planner's picks at B = 64 for the modes whose rows are exp-heavy, where
    # 45abaeb took two XU conversions an element out of the lean forms' weights: which pipe now limits them
    "s35": [(64, None, dict(temperature=0.8)),
            (64, None, dict(temperature=0.8, top_p=0.9)),
            (64, None, dict(temperature=0.8, top_k=50)),
            (64, None, dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05))],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="s4", choices=sorted(SAMPLER_CASES), help="the sampler launches")
    ap.add_argument("--no-lm-head", action="store_true", help="the sampler launches only")
    a = ap.parse_args()
    V, H = 151936, 4096
    w = None if a.no_lm_head else torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02
    o = None
    for M, variant in [] if a.no_lm_head else LM_HEAD_CASES:
        x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
        for _ in range(1):  # one warm-up (first-call attribute queries): ncu profiles it too
            o = mv.lm_head(x, w, stats=True, variant=variant)
        torch.cuda.synchronize()
        o = mv.lm_head(x, w, stats=True, variant=variant)
        torch.cuda.synchronize()
    for B, variant, cfg in SAMPLER_CASES[a.cases]:
        z = torch.randn(B, V, device="cuda") * 3
        s = mv.Sampler(B, V, device="cuda", seed=1, variant=variant, **cfg)
        for _ in range(1):  # one warm-up (first-call attribute queries): ncu profiles it too
            s(z.clone())
        torch.cuda.synchronize()
        s(z)
        torch.cuda.synchronize()
    print("done", None if o is None else int(o.argmax[0]))


if __name__ == "__main__":
    main()
