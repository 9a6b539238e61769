"""One decode step of a toy model with mlops.vocab: embed (with the first RMSNorm's inputs), the LM
head fed the deferred norm scalar, and sampling fed the head's statistics. Runs on the GPU when
there is one, else on the CPU (the host emulation, slowly: the same bits as the GPU's CUDA-core LM
head; on sm_70+ the planner picks a tensor-core one, within the float64 bound of docs/vocab.md).

    python packages/vocab/samples/python/decode_step.py
"""

import torch

import mlops.vocab as mv

device = "cuda" if torch.cuda.is_available() else "cpu"
V, H, B = 32000, 1024, 4
g = torch.Generator().manual_seed(0)
table = (torch.randn(V, H, generator=g) * 0.02).bfloat16().to(device)
norm_w = (1 + 0.1 * torch.randn(H, generator=g)).bfloat16().to(device)
head = (torch.randn(V, H, generator=g) * 0.02).bfloat16().to(device)

sampler = mv.Sampler(B, V, device=device, seed=1234, configs=[
    {"temperature": 0.0},                       # greedy
    {"temperature": 0.8, "top_p": 0.9},
    {"temperature": 1.0, "top_k": 50, "min_p": 0.05},
    {"temperature": 0.7, "top_k": 20, "top_p": 0.95},
])
ids = torch.tensor([1, 2, 3, 4], dtype=torch.int32, device=device)
for step in range(4):
    e = mv.embed(ids, table, norm_w, eps=1e-6)              # x fp32, bf16(x * w), 1/rms per token
    o = mv.lm_head(e.xw, head, row_scale=e.rms_r, stats=True)  # logits of the normed tokens
    out = sampler(o.logits, stats=o, logprobs=True)
    ids = out.tokens
    print(f"step {step}: tokens {ids.tolist()} logprobs {[round(x, 3) for x in out.logprobs.tolist()]}"
          f" flags {out.flags.tolist()} oov {int(e.oov)}")
