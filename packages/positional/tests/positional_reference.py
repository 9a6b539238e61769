"""Independent references for the positional tests: transformers-style cos/sin and rotation,
and a float64 rotation. Kept apart from the package (nothing here calls mlops)."""

from __future__ import annotations

import torch


def hf_cos_sin(inv_freq: torch.Tensor, positions: torch.Tensor, scaling: float = 1.0):
    """cos, sin fp32 [..., rotary_dim] as transformers' RotaryEmbedding.forward builds them."""
    freqs = positions[..., None].float() * inv_freq.float()
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * scaling, emb.sin() * scaling


def cache_from_cos_sin(cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor, max_positions: int):
    """A [max_positions, rotary_dim] cos|sin cache holding the given rows at the given positions."""
    half = cos.shape[-1] // 2
    cache = torch.zeros(max_positions, 2 * half, dtype=torch.float32)
    cache[positions.reshape(-1)] = torch.cat((cos[..., :half], sin[..., :half]), -1).reshape(-1, 2 * half)
    return cache


def rope_ref64(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor, scaling: float, rotary_dim: int,
               interleaved: bool = False, section=None) -> torch.Tensor:
    """float64 rotation of x [T, H, D] (tokens first) by positions [T] (or [3, T] with section):
    the angle is the fp32 product transformers computes, everything after it is float64."""
    half = rotary_dim // 2
    if section is None:
        pos = positions.reshape(1, -1).expand(half, -1)  # [half, T]
    else:
        rows = torch.cat([torch.full((s,), i % 3) for i, s in enumerate(section)])
        pos = positions.reshape(3, -1)[rows]  # [half, T]
    ang = (pos.T.float() * inv_freq.float()[None, :]).double()  # [T, half]
    c, s = torch.cos(ang) * scaling, torch.sin(ang) * scaling
    xd = x.double()
    out = xd.clone()
    if interleaved:
        a, b = xd[..., 0:rotary_dim:2], xd[..., 1:rotary_dim:2]
    else:
        a, b = xd[..., :half], xd[..., half:rotary_dim]
    c, s = c[:, None, :], s[:, None, :]
    ra, rb = a * c - b * s, b * c + a * s
    if interleaved:
        out[..., 0:rotary_dim:2], out[..., 1:rotary_dim:2] = ra, rb
    else:
        out[..., :half], out[..., half:rotary_dim] = ra, rb
    return out


_PRECISION = {torch.bfloat16: 8, torch.float16: 11, torch.float32: 24}


def pair_magnitude(x: torch.Tensor, rotary_dim: int, interleaved: bool = False) -> torch.Tensor:
    """|x| + |y| of each element's rotation pair (|x| past rotary_dim), float64."""
    xd = x.double().abs()
    mag = xd.clone()
    half = rotary_dim // 2
    if interleaved:
        p = xd[..., 0:rotary_dim:2] + xd[..., 1:rotary_dim:2]
        mag[..., 0:rotary_dim:2], mag[..., 1:rotary_dim:2] = p, p
    else:
        p = xd[..., :half] + xd[..., half:rotary_dim]
        mag[..., :half], mag[..., half:rotary_dim] = p, p
    return mag


def assert_within_rounding(out: torch.Tensor, ref64: torch.Tensor, x: torch.Tensor, rotary_dim: int,
                           interleaved: bool = False, scaling: float = 1.0):
    """The kernels' error bound against float64: the fp32 value before the store is within
    4 * 2^-24 * (|x| + |y|) * scaling of exact (cos/sin 1/2 ulp, two products, one sum, each
    rounded once), and the store adds half an ulp of the output dtype: so at most one ulp of the
    result plus that fp32 term (cancellation can make the fp32 term exceed an ulp of a tiny result)."""
    p = _PRECISION[out.dtype]
    _, e = torch.frexp(ref64.abs().clamp_min(2.0 ** -126))
    ulp = torch.ldexp(torch.ones_like(ref64), (e - p).to(torch.int32)).double()
    bound = ulp + 4 * 2.0 ** -24 * pair_magnitude(x, rotary_dim, interleaved) * scaling
    err = (out.double() - ref64).abs()
    bad = err > bound
    assert not bool(bad.any()), f"{int(bad.sum())} elements beyond the rounding bound; worst excess {float((err - bound).max())}"
