"""nn.Module front ends of mlops.norm."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from ._ops import norm


class RMSNorm(nn.Module):
    """RMSNorm over the last dimension.

    weight_offset=1 stores w and uses 1 + w (Gemma, Qwen3-Next; initialized to zeros then).
    group_size: normalize groups (Mamba-2 / Nemotron-H gated norms). order: see norm().
    forward(x, residual=None, gate=None) returns y, or NormOutput with a residual/quant.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-6, *, weight_offset: float = 0.0,
                 elementwise_affine: bool = True, group_size: Optional[int] = None, gate_position: str = "after",
                 order: Optional[str] = None, quant: Optional[str] = None, device=None, dtype=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps
        self.weight_offset = weight_offset
        self.group_size = group_size
        self.gate_position = gate_position
        self.order = order
        self.quant = quant
        if elementwise_affine:
            init = torch.zeros if weight_offset else torch.ones
            self.weight = nn.Parameter(init(hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x, residual=None, gate=None, scale=None):
        offset = self.weight_offset if self.weight is not None else 0.0
        return norm(x, self.weight, kind="rms", eps=self.eps, weight_offset=offset,
                    residual=residual, gate=gate, gate_position=self.gate_position, group_size=self.group_size,
                    order=self.order, quant=self.quant, scale=scale)

    def extra_repr(self):
        return f"{self.hidden_size}, eps={self.eps}, weight_offset={self.weight_offset}"


class LayerNorm(nn.Module):
    """LayerNorm over the last dimension (weight, optional bias; weight_offset=1: LayerNorm1P)."""

    def __init__(self, hidden_size: int, eps: float = 1e-5, *, bias: bool = True, weight_offset: float = 0.0,
                 quant: Optional[str] = None, device=None, dtype=None):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps
        self.weight_offset = weight_offset
        self.quant = quant
        init = torch.zeros if weight_offset else torch.ones
        self.weight = nn.Parameter(init(hidden_size, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(hidden_size, device=device, dtype=dtype)) if bias else None

    def forward(self, x, residual=None, scale=None):
        return norm(x, self.weight, self.bias, kind="layer", eps=self.eps, weight_offset=self.weight_offset,
                    residual=residual, quant=self.quant, scale=scale)

    def extra_repr(self):
        return f"{self.hidden_size}, eps={self.eps}, weight_offset={self.weight_offset}"
