"""A first look at mlops: RMSNorm (+ residual, + an INT8 output) on the GPU when there is one,
else on the CPU path (the host emulation: the same bits, slowly), checked against torch."""

import torch

import mlops.norm as mn

dev = "cuda" if torch.cuda.is_available() else "cpu"
print(f"device: {torch.cuda.get_device_name(0) if dev == 'cuda' else 'CPU (host emulation)'}")
T, H = 8, 4096
x = torch.randn(T, H, dtype=torch.bfloat16, device=dev)
r = torch.randn(T, H, dtype=torch.bfloat16, device=dev)
w = torch.randn(H, dtype=torch.bfloat16, device=dev)

y = mn.rms_norm(x, w)
ref = torch.nn.functional.rms_norm(x.float(), (H,), w.float(), 1e-6).to(torch.bfloat16)
print(f"rms_norm {T}x{H} bf16: max |y - torch| = {(y.float() - ref.float()).abs().max().item():.4f}")

out = mn.rms_norm(x, w, residual=r, quant="int8", return_y=True)
print(f"add + rms_norm + int8: residual ok = {torch.equal(out.residual, x + r)}, "
      f"q {tuple(out.q.shape)} {out.q.dtype}, scales {tuple(out.scale.shape)}")
variants = [v["name"] for v in mn.norm_variants()]
same = all(torch.equal(mn.rms_norm(x, w, variant=v), y) for v in variants)
print(f"variants {variants}: identical bits = {same}")
