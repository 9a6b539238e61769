"""Independent references for the attention tests: the FBLA encoder written again in torch fp32
(elementwise IEEE ops, one op at a time, so the codes must match the C++ encoder's bit for bit),
float64 quantization error models, and synthetic K with outlier channels."""

from __future__ import annotations

import torch

GROUP = 128


def bf16_up(x: torch.Tensor) -> torch.Tensor:
    """float32 x >= 0 rounded toward +inf to bf16, as float32 (fbla_math.h bf16_up, by its integer steps)."""
    u = x.contiguous().view(torch.int32)
    hi = (u >> 16) + ((u & 0xFFFF) != 0).to(torch.int32)
    return (hi << 16).view(torch.float32)


def quantize_axis(x: torch.Tensor, dim: int):
    """6-bit min/max quantization of fp32 x (bf16 values) along dim, the encoder's arithmetic in torch fp32 (record
    version 4): min (a bf16 value, stored exactly), scale = (max - min) / 63 rounded up to bf16, inv = 1 / scale (0
    for a zero scale), code = clamp(rne((x - min) * inv))."""
    mn = x.amin(dim=dim, keepdim=True)
    mx = x.amax(dim=dim, keepdim=True)
    rng = mx - mn
    # tensor / tensor: torch turns `scalar / tensor` into reciprocal * scalar, a different rounding
    scale = bf16_up(rng / torch.full_like(rng, 63.0))
    inv = torch.where(scale > 0, torch.ones_like(scale) / torch.where(scale > 0, scale, torch.ones_like(scale)),
                      torch.zeros_like(scale))
    code = torch.round((x - mn) * inv).clamp(0, 63)
    return code.to(torch.int64), mn, scale


def encode_group(k: torch.Tensor, v: torch.Tensor):
    """k, v: bf16 [128, D] -> (k_codes [128, D], k_min [D], k_scale [D], v_codes, v_min [128], v_scale [128])."""
    kc, kmn, ks = quantize_axis(k.float(), 0)
    vc, vmn, vs = quantize_axis(v.float(), 1)
    return kc, kmn[0], ks[0], vc, vmn[:, 0], vs[:, 0]


def outlier_k(tokens: int, dim: int, seed: int, outliers=(3, 17, 40), gain: float = 12.0) -> torch.Tensor:
    """K with a few outlier channels (large, per-channel offsets and scales), as real models' K has."""
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(tokens, dim, generator=g)
    for c in outliers:
        k[:, c] = k[:, c] * gain + gain
    return k


def fake_quant(x: torch.Tensor, axis: str, bits: int = 6) -> torch.Tensor:
    """float64 min/max fake quantization of x [tokens, D] in groups of 128 tokens: per 'channel'
    (statistics over the group's tokens, one a channel) or per 'token' (over a token's channels)."""
    levels = (1 << bits) - 1
    out = torch.empty_like(x, dtype=torch.float64)
    for t0 in range(0, x.shape[0], GROUP):
        g = x[t0:t0 + GROUP].double()
        dim = 0 if axis == "channel" else 1
        mn, mx = g.amin(dim=dim, keepdim=True), g.amax(dim=dim, keepdim=True)
        s = (mx - mn).clamp_min(1e-30) / levels
        out[t0:t0 + GROUP] = mn + torch.round((g - mn) / s) * s
    return out
