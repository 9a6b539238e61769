"""One call of each given shape/variant, for ncu (which profiles the norm kernels only):
    ncu --clock-control none -k regex:norm_kernel python packages/norm/bench/profile_one.py 16384x4096:w4"""

import sys

import torch

import mlops.norm as mn

for spec in sys.argv[1:] or ["16384x4096:"]:
    shape, _, variant = spec.partition(":")
    T, H = map(int, shape.split("x"))
    x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(H, device="cuda", dtype=torch.bfloat16)
    mn.rms_norm(x, w, variant=variant or None)
torch.cuda.synchronize()
