"""A decoder layer's norms with mlops.norm: the residual stream added and normalized in one call,
the input of the next projection quantized to FP8 on the way out (GPU if there is one)."""

import torch

import mlops.norm as mn

dev = "cuda" if torch.cuda.is_available() else "cpu"
T, H = 16, 2048
hidden = torch.randn(T, H, dtype=torch.bfloat16, device=dev)
residual = torch.randn(T, H, dtype=torch.bfloat16, device=dev)
attn_norm = mn.RMSNorm(H, eps=1e-6, dtype=torch.bfloat16, device=dev)
mlp_norm = mn.RMSNorm(H, eps=1e-6, dtype=torch.bfloat16, device=dev, quant="fp8")

out = attn_norm(hidden, residual=residual)          # out.y feeds attention, out.residual carries on
attn_out = out.y * 0.5                               # stand-in for attention
q = mlp_norm(attn_out, residual=out.residual)        # FP8 codes + per-row scale for the MLP's GEMM
print("fp8 codes", tuple(q.q.shape), q.q.dtype, "row scales", tuple(q.scale.shape))
