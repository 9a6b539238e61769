"""CPU (CI): every rope_type end to end against transformers: its rotary module (cos/sin with the
attention scaling, dynamic / longrope updates by sequence length) and apply_rotary_pos_emb, vs
mlops' RotaryEmbedding on the same q, k and positions. fp32 and bf16, within the rounding bound
of test_positional_rope.py (fp32: both compute the same products; cos/sin differ by <= 1 ulp)."""

import pytest
import torch
from mlops_testing import randn

import mlops.positional as P

transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb  # noqa: E402

BASE = dict(hidden_size=1024, num_attention_heads=8, head_dim=128, max_position_embeddings=4096)
TYPES = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "linear": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
    "yarn": {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "rope_theta": 10000.0},
    "yarn_mscale": {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 256, "mscale": 0.707,
                    "mscale_all_dim": 0.707 * 1.5, "rope_theta": 10000.0},
    "longrope": {"rope_type": "longrope", "short_factor": [1.0 + 0.01 * i for i in range(64)],
                 "long_factor": [1.5 + 0.05 * i for i in range(64)], "original_max_position_embeddings": 1024,
                 "rope_theta": 10000.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 512, "rope_theta": 500000.0},
}


def _bound(x, scaling, dtype):
    p = {torch.bfloat16: 8, torch.float32: 24}[dtype]
    xf = x.float().abs()
    pair = xf[..., :64] + xf[..., 64:]
    return 4 * 2.0 ** -p * torch.cat((pair, pair), -1) * max(scaling, 1.0) + 1e-30


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(TYPES))
def test_rope_type_end_to_end_vs_transformers(name, dtype):
    d = {**BASE, "rope_parameters": dict(TYPES[name])}
    hf = LlamaRotaryEmbedding(LlamaConfig(**{**d, "rope_parameters": dict(TYPES[name])}))
    mine = P.RotaryEmbedding(d, max_positions=8192)  # the cache covers the 5000-token step
    assert mine.attention_scaling == hf.attention_scaling
    # lengths that cross the dynamic / longrope thresholds and come back
    for step, length in enumerate((64, 1500, 5000, 300)):
        pos = torch.arange(length)[None]
        if length > 1000:  # keep the CPU time short: a sample of the positions, the max kept
            idx = torch.cat((torch.randperm(length - 1, generator=torch.Generator().manual_seed(step))[:63],
                             torch.tensor([length - 1])))
        else:
            idx = torch.arange(length)
        q = randn((1, 4, idx.numel(), 128), dtype, seed=step)
        k = randn((1, 2, idx.numel(), 128), dtype, seed=step + 10)
        cos, sin = hf(q, pos)  # HF updates its frequencies from max(position_ids) + 1
        qh, kh = apply_rotary_pos_emb(q, k, cos[:, idx], sin[:, idx])
        qm, km = mine(q, k, idx[None], seq_len=length, head_first=True)
        for a, b, x in ((qm, qh, q), (km, kh, k)):
            err = (a.float() - b.float()).abs()
            assert bool((err <= _bound(x, hf.attention_scaling, dtype)).all()), \
                f"{name} length {length}: worst {float(err.max())}"
        assert int(mine.out_of_range) == 0
        if mine.mode == "on_the_fly":
            assert torch.equal(mine.inv_freq, hf.inv_freq), f"{name} length {length}: inv_freq"
