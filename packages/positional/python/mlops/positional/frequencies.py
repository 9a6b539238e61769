"""Inverse frequencies and attention scaling for every Hugging Face rope_type, from a
transformers-style config (a dict or a config object).

The arithmetic repeats transformers' modeling_rope_utils op for op (the same torch calls in
the same order, on the CPU in fp32), so inv_freq is bit for bit what transformers 5.x computes
(tests/test_positional_frequencies.py checks it against ROPE_INIT_FUNCTIONS). transformers is
not imported here: it is a test dependency only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import torch

__all__ = ["RopeConfig", "rope_config", "rope_parameters", "ROPE_TYPES", "POSITION_DEPENDENT"]

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional", "mrope")
# inv_freq depends on the sequence length for these: the kernels compute cos/sin on the fly from
# an inv_freq buffer that RotaryEmbedding updates in place (docs/positional.md).
POSITION_DEPENDENT = ("dynamic", "longrope")


@dataclass
class RopeConfig:
    """The flattened rope settings of a model config."""

    rope_type: str
    rope_theta: float
    head_dim: int
    rotary_dim: int
    partial_rotary_factor: float
    max_position_embeddings: Optional[int]
    params: dict  # the rope_parameters / rope_scaling dict (rope_type, factor, ...)
    mrope_section: Optional[tuple] = None


def _get(config: Any, key: str, default=None):
    if isinstance(config, dict):
        return config.get(key, default)
    return getattr(config, key, default)


def rope_config(config: Any, head_dim: Optional[int] = None) -> RopeConfig:
    """Reads rope_theta, rope_parameters / rope_scaling, partial_rotary_factor, head_dim (or
    hidden_size // num_attention_heads), max_position_embeddings and, for Phi-3,
    original_max_position_embeddings from a config dict or object."""
    params = dict(_get(config, "rope_parameters", None) or _get(config, "rope_scaling", None) or {})
    rope_type = params.get("rope_type", params.get("type", "default"))
    theta = params.get("rope_theta", _get(config, "rope_theta", 10000.0))
    prf = params.get("partial_rotary_factor", _get(config, "partial_rotary_factor", None))
    prf = 1.0 if prf is None else prf
    if head_dim is None:
        head_dim = _get(config, "head_dim", None)
        if head_dim is None:
            hs, nh = _get(config, "hidden_size", None), _get(config, "num_attention_heads", None)
            if hs is None or nh is None:
                raise ValueError("config: expected head_dim or hidden_size and num_attention_heads")
            head_dim = hs // nh
    max_pos = _get(config, "max_position_embeddings", None)
    if rope_type in ("llama3", "yarn", "longrope"):
        omp = _get(config, "original_max_position_embeddings", None)  # Phi-3 keeps it outside (HF gives it priority)
        if omp is not None:
            params["original_max_position_embeddings"] = omp
        else:
            params.setdefault("original_max_position_embeddings", max_pos)
    section = params.get("mrope_section")
    if rope_type == "mrope":  # older Qwen2-VL configs: {"type": "mrope", "mrope_section": [...]}
        rope_type = "default"
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"config: rope_type {rope_type!r} is not one of {ROPE_TYPES}")
    if rope_type == "proportional":
        rotary_dim = int(head_dim)  # proportional rotates the whole head (zero frequencies past the rope part)
    else:
        rotary_dim = int(head_dim * prf)
    return RopeConfig(rope_type, float(theta), int(head_dim), rotary_dim, float(prf), max_pos, params,
                      tuple(int(s) for s in section) if section else None)


def _arange_f32(dim: int) -> torch.Tensor:
    return torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float)


def _default(rc: RopeConfig, seq_len):
    dim = rc.rotary_dim
    return 1.0 / (rc.rope_theta ** (_arange_f32(dim) / dim)), 1.0


def _linear(rc: RopeConfig, seq_len):
    inv_freq, _ = _default(rc, seq_len)
    inv_freq /= rc.params["factor"]
    return inv_freq, 1.0


def _dynamic(rc: RopeConfig, seq_len):
    dim, factor, mpe = rc.rotary_dim, rc.params["factor"], rc.max_position_embeddings
    # As transformers: a Python int (init, direct calls) is float64 math; a tensor (what its
    # dynamic_rope_update passes, max(position_ids) + 1) is float32 tensor math: other bits.
    if seq_len is None:
        seq_len = mpe
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(mpe, dtype=seq_len.dtype, device=seq_len.device))
    else:
        seq_len = max(seq_len, mpe)
    base = rc.rope_theta * ((factor * seq_len / mpe) - (factor - 1)) ** (dim / (dim - 2))
    return 1.0 / (base ** (_arange_f32(dim) / dim)), 1.0


def _yarn(rc: RopeConfig, seq_len):
    p, dim, base = rc.params, rc.rotary_dim, rc.rope_theta
    factor = p.get("factor")
    omp = p["original_max_position_embeddings"]
    if factor is None:
        factor = rc.max_position_embeddings / omp
    attention_factor, mscale, mscale_all_dim = p.get("attention_factor"), p.get("mscale"), p.get("mscale_all_dim")

    def get_mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = get_mscale(factor)
    beta_fast = p.get("beta_fast") or 32
    beta_slow = p.get("beta_slow") or 1

    def corr_dim(n_rot):
        return (dim * math.log(omp / (n_rot * 2 * math.pi))) / (2 * math.log(base))

    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # as HF: no division by zero in the ramp
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_extra = 1.0 / pos_freqs
    inv_inter = 1.0 / (factor * pos_freqs)
    extra_factor = 1 - ramp.to(dtype=torch.float)
    inv_freq = inv_inter * (1 - extra_factor) + inv_extra * extra_factor
    return inv_freq, attention_factor


def _longrope(rc: RopeConfig, seq_len):
    p, dim, base = rc.params, rc.rotary_dim, rc.rope_theta
    omp = p["original_max_position_embeddings"]
    factor, attention_factor = p.get("factor"), p.get("attention_factor")
    if factor is None:
        factor = rc.max_position_embeddings / omp
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(omp))
    ext = p["long_factor"] if (seq_len and seq_len > omp) else p["short_factor"]
    ext_factors = torch.tensor(ext, dtype=torch.float32)
    shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    return 1.0 / (ext_factors * base**shape), attention_factor


def _llama3(rc: RopeConfig, seq_len):
    p = rc.params
    inv_freq, _ = _default(rc, seq_len)
    factor, lff, hff = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    old = p["original_max_position_embeddings"]
    low_wl, high_wl = old / lff, old / hff
    wavelen = 2 * math.pi / inv_freq
    inv_llama = torch.where(wavelen > low_wl, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - lff) / (hff - lff)
    smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
    medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
    return torch.where(medium, smoothed, inv_llama), 1.0


def _proportional(rc: RopeConfig, seq_len):
    hd, base = rc.head_dim, rc.rope_theta
    factor = rc.params.get("factor", 1.0)
    angles = int(rc.partial_rotary_factor * hd // 2)
    rot = 1.0 / (base ** (torch.arange(0, 2 * angles, 2, dtype=torch.int64).to(dtype=torch.float) / hd))
    nope = hd // 2 - angles
    inv_freq = torch.cat((rot, torch.zeros(nope, dtype=torch.float32))) if nope > 0 else rot
    inv_freq /= factor
    return inv_freq, 1.0


_FUNCS = {"default": _default, "linear": _linear, "dynamic": _dynamic, "yarn": _yarn, "longrope": _longrope,
          "llama3": _llama3, "proportional": _proportional}


def rope_parameters(config: Any, seq_len: Optional[int] = None, head_dim: Optional[int] = None):
    """(inv_freq fp32 [rotary_dim/2] on the CPU, attention_scaling float, RopeConfig) for a config.

    seq_len matters for 'dynamic' (the NTK base grows with it) and 'longrope' (long factors past
    original_max_position_embeddings); None means the initial state, as transformers' init. An
    int is taken as transformers takes an int; a 0-dim int64 tensor as its runtime update passes
    one (fp32 tensor arithmetic for the dynamic base)."""
    rc = config if isinstance(config, RopeConfig) else rope_config(config, head_dim)
    if rc.rotary_dim < 2 or rc.rotary_dim % 2:
        raise ValueError(f"rotary_dim: head_dim * partial_rotary_factor = {rc.rotary_dim} is not an even value >= 2")
    if rc.mrope_section is not None and sum(rc.mrope_section) != rc.rotary_dim // 2:
        raise ValueError(f"mrope_section: expected values summing to rotary_dim/2 = {rc.rotary_dim // 2}, "
                         f"got {list(rc.mrope_section)}")
    inv_freq, scaling = _FUNCS[rc.rope_type](rc, seq_len)
    return inv_freq.to(torch.float32).contiguous(), float(scaling), rc
