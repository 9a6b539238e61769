"""CPU (CI): inverse frequencies and attention scaling for every rope_type against transformers'
own functions (ROPE_INIT_FUNCTIONS and the models' rotary modules), bit for bit; the cos/sin the
kernels use against transformers' fp32 cos/sin (within 1 fp32 ulp) and float64 (correctly
rounded but for rare near-ties); the dynamic-NTK growing-length rule and longrope's switch."""

import math

import pytest
import torch
from mlops_testing import ulp_diff

import mlops.positional as P
from positional_reference import hf_cos_sin

transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

# Real model settings (Llama-3.1, DeepSeek-V3-style yarn with mscale, Phi-3-style longrope with
# a partial rotary factor, Qwen-style yarn, CodeLlama linear, dynamic NTK).
CASES = {
    "default": {"rope_type": "default"},
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    "yarn_mscale": {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 1.0,
                    "mscale_all_dim": 0.707, "beta_fast": 32, "beta_slow": 1},
    "longrope": {"rope_type": "longrope", "short_factor": [1.0 + 0.01 * i for i in range(48)],
                 "long_factor": [1.5 + 0.1 * i for i in range(48)], "original_max_position_embeddings": 4096},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192},
    "proportional": {"rope_type": "proportional", "partial_rotary_factor": 0.25},
}


def _config(name):
    rp = dict(rope_theta=500000.0, **CASES[name])
    d = dict(hidden_size=4096, num_attention_heads=32, head_dim=128, max_position_embeddings=131072,
             rope_parameters=rp)
    if name == "longrope":
        d["partial_rotary_factor"] = 0.75
    return d


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", [n for n in CASES if n != "default"])
@pytest.mark.parametrize("seq_len", [None, 4096, 200000])
def test_inv_freq_matches_transformers(name, seq_len):
    d = _config(name)
    hf = LlamaConfig(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in d.items()})
    f_hf, a_hf = ROPE_INIT_FUNCTIONS[CASES[name]["rope_type"]](hf, "cpu", seq_len=seq_len)
    f, a, rc = P.rope_parameters(d, seq_len=seq_len)
    assert f.dtype == torch.float32
    assert torch.equal(f, f_hf), f"{name}: inv_freq differs from transformers"
    assert a == a_hf
    if name != "proportional":
        assert rc.rotary_dim == 2 * f.shape[0]


def test_default_matches_llama_rotary_embedding():
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    d = _config("default")
    f_hf, a_hf = LlamaRotaryEmbedding.compute_default_rope_parameters(LlamaConfig(**d))
    f, a, _ = P.rope_parameters(d)
    assert torch.equal(f, f_hf) and a == a_hf == 1.0


def test_rope_scaling_key_and_top_level_theta():
    """Older configs: rope_scaling {"type": ...} and rope_theta / partial_rotary_factor at the top."""
    old = dict(hidden_size=2048, num_attention_heads=16, max_position_embeddings=4096, rope_theta=10000.0,
               partial_rotary_factor=0.5, rope_scaling={"type": "linear", "factor": 2.0})
    f, a, rc = P.rope_parameters(old)
    assert rc.rope_type == "linear" and rc.head_dim == 128 and rc.rotary_dim == 64
    expect = 1.0 / (10000.0 ** (torch.arange(0, 64, 2, dtype=torch.int64).float() / 64)) / 2.0
    assert torch.equal(f, expect)


@pytest.mark.parametrize("name", ["default", "yarn", "llama3", "longrope"])
def test_cos_sin_cache_vs_transformers_and_float64(name):
    """The cache (= the kernels' on-the-fly values): within 1 fp32 ulp of torch's cos/sin of the
    same fp32 angle (torch's are not correctly rounded), and correctly rounded from float64 but
    for near-ties (at most 1 ulp, in a tiny fraction of entries)."""
    f, scale, _ = P.rope_parameters(_config(name))
    pos = torch.cat((torch.arange(0, 4096), torch.randint(4096, 131072, (2048,), generator=torch.Generator().manual_seed(0))))
    cache = P.build_cos_sin_cache(f, 131072, scale)
    half = f.shape[0]
    c_hf, s_hf = hf_cos_sin(f, pos, scale)
    mine = cache[pos]
    # 1 ulp apart before the scaling; a scaling > 1 (yarn, longrope) can stretch that to 2 after it
    bound = 1 if scale == 1.0 else 2
    assert int(ulp_diff(mine[:, :half], c_hf[:, :half]).max()) <= bound
    assert int(ulp_diff(mine[:, half:], s_hf[:, :half]).max()) <= bound
    ang = (pos[:, None].float() * f[None]).double()
    c64 = torch.cos(ang).float() * scale  # rounded to fp32, then scaled in fp32: the kernels' order
    s64 = torch.sin(ang).float() * scale
    dc, ds = ulp_diff(mine[:, :half], c64), ulp_diff(mine[:, half:], s64)
    assert int(dc.max()) <= 1 and int(ds.max()) <= 1
    assert float((dc > 0).float().mean()) < 1e-3 and float((ds > 0).float().mean()) < 1e-3


def test_cache_host_equals_on_the_fly_path():
    """build_cos_sin_cache and the kernels' on-the-fly cos/sin are one function: rotating with
    either gives the same bits (checked through apply_rope on the CPU)."""
    f, scale, _ = P.rope_parameters(_config("yarn"))
    cache = P.build_cos_sin_cache(f, 70000, scale)
    q = torch.randn(64, 4, 128)
    pos = torch.randint(0, 70000, (64,))
    a, _ = P.apply_rope(q, None, pos, cache)
    b, _ = P.apply_rope(q, None, pos, inv_freq=f, attention_scaling=scale)
    assert torch.equal(a, b)


@pytest.mark.filterwarnings("ignore")
def test_dynamic_growth_rule_follows_transformers():
    """transformers' dynamic_rope_update: grow past the cached length, reset below the original."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    d = dict(hidden_size=1024, num_attention_heads=8, head_dim=128, max_position_embeddings=2048,
             rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})
    hf = LlamaRotaryEmbedding(LlamaConfig(**{**d, "rope_parameters": dict(d["rope_parameters"])}))
    mine = P.RotaryEmbedding(d)
    assert mine.mode == "on_the_fly"
    x = torch.zeros(1, 1, 128)
    for length in (100, 3000, 2500, 5000, 1000, 4000):
        pos = torch.arange(length)[None]
        hf(x, pos)
        q = torch.randn(length, 1, 128)
        mine(q, None, pos[0])
        assert torch.equal(mine.inv_freq, hf.inv_freq), f"length {length}"
        assert mine.max_seq_len_cached == hf.max_seq_len_cached


@pytest.mark.filterwarnings("ignore")
def test_longrope_switch_follows_transformers():
    from transformers import Phi3Config
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

    rp = {"rope_type": "longrope", "short_factor": [1.0 + 0.02 * i for i in range(48)],
          "long_factor": [2.0 + 0.1 * i for i in range(48)], "rope_theta": 10000.0}
    d = dict(hidden_size=3072, num_attention_heads=32, max_position_embeddings=131072,
             original_max_position_embeddings=4096, rope_parameters=rp)
    hf = Phi3RotaryEmbedding(Phi3Config(**{**d, "rope_parameters": dict(rp)}))
    mine = P.RotaryEmbedding(d)
    assert mine.attention_scaling == hf.attention_scaling
    x = torch.zeros(1, 1, 96)
    for length in (10, 5000, 100):
        pos = torch.arange(length)[None]
        hf(x, pos)
        mine(torch.randn(length, 1, 96), None, pos[0])
        assert torch.equal(mine.inv_freq, hf.inv_freq), f"length {length}"


@pytest.mark.filterwarnings("ignore")
def test_mrope_cos_sin_follow_qwen2_vl():
    """Qwen2-VL's multimodal sections: frequency i reads position row (section of i) % 3."""
    from transformers import Qwen2VLConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding

    d = dict(hidden_size=1536, num_attention_heads=12, max_position_embeddings=32768,
             rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1000000.0})
    cfg = Qwen2VLConfig(text_config={**d, "rope_parameters": dict(d["rope_parameters"])})
    hf = Qwen2VLRotaryEmbedding(cfg.text_config)
    f, scale, rc = P.rope_parameters(d)
    assert rc.mrope_section == (16, 24, 24) and torch.equal(f, hf.inv_freq)
    g = torch.Generator().manual_seed(1)
    pos = torch.randint(0, 5000, (3, 1, 40), generator=g)
    c_hf, s_hf = hf(torch.zeros(1, dtype=torch.float32), pos)  # [1, 40, 128]
    cache = P.build_cos_sin_cache(f, 5000, scale)
    rows = torch.cat([torch.full((s,), i % 3) for i, s in enumerate(rc.mrope_section)])
    mine_c = torch.stack([cache[pos[rows[i], 0], i] for i in range(64)], -1)
    assert int(ulp_diff(mine_c, c_hf[0, :, :64]).max()) <= 1
    mine_s = torch.stack([cache[pos[rows[i], 0], 64 + i] for i in range(64)], -1)
    assert int(ulp_diff(mine_s, s_hf[0, :, :64]).max()) <= 1


def test_config_errors_are_named():
    with pytest.raises(ValueError, match="rope_type"):
        P.rope_parameters(dict(head_dim=128, rope_parameters={"rope_type": "nonsense"}))
    with pytest.raises(ValueError, match="head_dim"):
        P.rope_parameters(dict(rope_theta=10000.0))
    with pytest.raises(ValueError, match="rotary_dim"):
        P.rope_parameters(dict(head_dim=128, partial_rotary_factor=0.01))
    with pytest.raises(ValueError, match="mrope_section"):
        P.rope_parameters(dict(head_dim=128, rope_parameters={"mrope_section": [16, 16, 16]}))
    assert math.isclose(P.rope_parameters(dict(head_dim=64))[1], 1.0)
