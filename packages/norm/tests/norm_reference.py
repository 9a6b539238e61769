"""Independent references for mlops.norm: float64 math, and the roundings spelled out in torch
ops (not the package's code) so tests can say which rounding they expect."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def norm64(x, weight=None, bias=None, *, kind="rms", eps=1e-6, weight_offset=0.0, residual=None, gate=None,
           gate_position="after", group_size=None):
    """The exact result in float64 (inputs taken as their stored values)."""
    v = x.double()
    if residual is not None:
        v = (x.double() + residual.double()).to(x.dtype).double()  # the residual sum is rounded to x's dtype
    if gate is not None and gate_position == "before":
        v = v * F.silu(gate.double())
    H = v.shape[-1]
    G = group_size or H
    vg = v.reshape(*v.shape[:-1], H // G, G)
    if kind == "layer":
        vg = vg - vg.mean(-1, keepdim=True)
    n = (vg / torch.sqrt(vg.pow(2).mean(-1, keepdim=True) + eps)).reshape(v.shape)
    if weight is not None:
        n = n * (weight.double() + weight_offset)
    if bias is not None:
        n = n + bias.double()
    if gate is not None and gate_position == "after":
        n = n * F.silu(gate.double())
    return n


def hf_order_rms(x, weight, eps):
    """LlamaRMSNorm's arithmetic in float32 torch ops: round(round(v*r)*w)."""
    v = x.float()
    r = torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)
    return weight * (v * r).to(x.dtype)
