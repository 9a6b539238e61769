"""RoPE for a Llama-3.1-style model with mlops.positional: q and k rotated in place inside the
fused qkv projection output, positions from a continuous batch (any order). Runs on the GPU
when there is one, else on the CPU (the host emulation: the same bits).

    python packages/positional/samples/rope_demo.py
"""

import torch

import mlops.positional as mp

config = {  # what config.json says (meta-llama/Llama-3.1-8B)
    "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192},
}
dev = "cuda" if torch.cuda.is_available() else "cpu"
rope = mp.RotaryEmbedding(config, max_positions=32768, device=dev)
print(rope)

# three sequences of a continuous batch, flattened: 5 + 3 + 1 tokens at their own positions
positions = torch.tensor([0, 1, 2, 3, 4, 1200, 1201, 1202, 77], device=dev)
T, hq, hk, d = positions.numel(), 32, 8, 128
qkv = torch.randn(T, (hq + 2 * hk) * d, device=dev, dtype=torch.bfloat16)
q = qkv[:, : hq * d].view(T, hq, d)              # views: no copy
k = qkv[:, hq * d:(hq + hk) * d].view(T, hk, d)
v_before = qkv[:, (hq + hk) * d:].clone()

rope(q, k, positions, inplace=True)
assert torch.equal(qkv[:, (hq + hk) * d:], v_before), "v is untouched"
assert int(rope.out_of_range) == 0
print("q[8, 0, :4] after RoPE:", q[8, 0, :4].float().tolist())
