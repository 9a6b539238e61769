"""Session 55: the bench's sampling rows (bench_vocab.py: seed 1000 + B, torch.randn * 3) as raw fp32 files
<dir>/rows-b<B>.f32, for the timeline probe's MLOPS_PROBE_ROWS."""
import sys

import torch

V = 151936
for B in (1, 8):
    gen = torch.Generator(device="cuda").manual_seed(1000 + B)
    z = torch.randn(B, V, device="cuda", generator=gen) * 3
    z.cpu().numpy().tofile(f"{sys.argv[1]}/rows-b{B}.f32")
