"""A compressed KV cache for one layer, step by step as a generator uses it:
encode the prompt's K/V, then each step append the new token's K/V and decode its query.
Runs on the GPU if there is one, else on the CPU (the host emulation: the same bits, slowly)."""

import torch

import mlops.attention as A

dev = "cuda" if torch.cuda.is_available() else "cpu"
B, HQ, HK, D, prompt, steps = 2, 8, 2, 128, 1000, 5
k = torch.randn(B, HK, prompt + steps, D, device=dev).bfloat16()
v = torch.randn(B, HK, prompt + steps, D, device=dev).bfloat16()

cache = A.encode(k[:, :, :prompt], v[:, :, :prompt], capacity=4096, mode="3+3")
for t in range(prompt, prompt + steps):
    A.append(cache, k[:, :, t:t + 1], v[:, :, t:t + 1])
    q = torch.randn(B, HQ, D, device=dev).bfloat16()
    out = A.decode(q, cache)  # [B, HQ, D] bf16
    ref = A.reference_decode(q.cpu(), cache)  # float64 over the same cached values
    print(f"step {t}: lengths {cache.lengths.tolist()}, max |out - float64| = "
          f"{(out.cpu().double() - ref).abs().max().item():.2e}")
