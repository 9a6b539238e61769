"""RotaryEmbedding: a model config's rope, applied to q and k by the mlops kernels."""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

from ._ops import apply_rope, build_cos_sin_cache
from .frequencies import POSITION_DEPENDENT, rope_parameters

__all__ = ["RotaryEmbedding", "cos_sin_cache_from_config"]


def cos_sin_cache_from_config(config: Any, max_positions: Optional[int] = None, device=None,
                              head_dim: Optional[int] = None) -> torch.Tensor:
    """The fp32 [max_positions, rotary_dim] cos/sin cache of a config (its initial frequencies:
    for 'dynamic' / 'longrope', use RotaryEmbedding, which follows the sequence length)."""
    inv_freq, scaling, rc = rope_parameters(config, head_dim=head_dim)
    n = max_positions or rc.max_position_embeddings
    if not n:
        raise ValueError("max_positions: the config has no max_position_embeddings; pass one")
    return build_cos_sin_cache(inv_freq, n, scaling, device=device)


class RotaryEmbedding(nn.Module):
    """RoPE from a transformers-style config (dict or object).

    mode 'cache' reads a precomputed fp32 cos/sin cache of max_positions rows; 'on_the_fly'
    computes cos/sin from the inv_freq buffer; 'auto' takes the cache unless the frequencies
    depend on the sequence length (dynamic NTK, longrope), where inv_freq is updated in place by
    transformers' rule (so a captured CUDA graph sees the new values) and the kernel computes on
    the fly. Both modes give the same bits for the same inv_freq.

    forward(q, k, positions, seq_len=None, inplace=False, head_first=False) -> (q, k).
    For dynamic / longrope, seq_len (max position + 1) picks the frequencies; without it the
    module reads positions.max() (a device-to-host copy, as transformers does).
    out_of_range: int32 [1] buffer, set to 1 by a call that met a position outside the cache.

    In cache mode a call of at least on_the_fly_from_tokens tokens computes cos/sin on the fly from
    the same inv_freq and scaling instead (the same bits, and the same out-of-range bound,
    max_positions): H200 run 17, 32 + 8 heads x 128 bf16, the planner's early2x5 on both paths:
    T = 32768 171.57 us on the fly against 175.5 from the cache, T = 4096 28.22 against 29.76
    (run 14, early4 / early2: 172.1 against 181.6); decode stays on the cache (T = 1: 6.46 against
    6.69 in run 14). Run 27 (the planner's dec from the cache) keeps both: decode from the cache T = 1
    5.76 us (1.41 over the empty kernel) against 6.10 on the fly, T = 32 6.05 against 6.53; T = 4096
    on the fly 25.63 (early2x5) against 25.92 from the cache (dec).
    """

    on_the_fly_from_tokens = 2048

    def __init__(self, config: Any, max_positions: Optional[int] = None, *, mode: str = "auto",
                 head_dim: Optional[int] = None, device=None):
        super().__init__()
        inv_freq, scaling, rc = rope_parameters(config, head_dim=head_dim)
        if mode not in ("auto", "cache", "on_the_fly"):
            raise ValueError(f"mode: expected 'auto', 'cache' or 'on_the_fly', got {mode!r}")
        if mode == "auto":
            mode = "on_the_fly" if rc.rope_type in POSITION_DEPENDENT else "cache"
        if mode == "cache" and rc.rope_type in POSITION_DEPENDENT:
            raise ValueError(f"mode: 'cache' holds fixed frequencies; rope_type {rc.rope_type!r} changes them with the "
                             "sequence length (use 'on_the_fly')")
        self.rc = rc
        self.mode = mode
        self.rope_type = rc.rope_type
        self.rotary_dim = rc.rotary_dim
        self.head_dim = rc.head_dim
        self.attention_scaling = scaling
        self.interleaved = False
        self.mrope_section = list(rc.mrope_section) if rc.mrope_section else None
        self.max_positions = max_positions or rc.max_position_embeddings
        self.original_max_seq_len = rc.max_position_embeddings
        self.max_seq_len_cached = rc.max_position_embeddings
        self.register_buffer("inv_freq", inv_freq.to(device), persistent=False)
        self.register_buffer("original_inv_freq", inv_freq.clone().to(device), persistent=False)
        self.register_buffer("out_of_range", torch.zeros(1, dtype=torch.int32, device=device), persistent=False)
        if mode == "cache":
            if not self.max_positions:
                raise ValueError("max_positions: the config has no max_position_embeddings; pass one")
            self.register_buffer("cos_sin_cache", build_cos_sin_cache(inv_freq, self.max_positions, scaling,
                                                                      device=device), persistent=False)
        else:
            self.cos_sin_cache = None

    def _apply(self, fn, recurse=True):
        """model.to(dtype) / .half() move the buffers but keep them fp32 (the kernels read fp32
        inv_freq and cache; a bf16 copy would change every cos/sin)."""
        fp32 = {n: b for n, b in self._buffers.items() if b is not None and b.dtype == torch.float32}
        out = super()._apply(fn, recurse)
        for n, b in fp32.items():
            nb = self._buffers[n]
            if nb is not None and nb.dtype != torch.float32:
                self._buffers[n] = b.to(device=nb.device)
        return out

    def _update_frequencies(self, seq_len: int):
        """transformers' dynamic_rope_update, with in-place copies (stable addresses)."""
        if self.rope_type == "dynamic":
            if seq_len > self.max_seq_len_cached:  # growth
                f, _, _ = rope_parameters(self.rc, seq_len=torch.tensor(seq_len))  # as HF's runtime update
                self.inv_freq.copy_(f)
                self.max_seq_len_cached = seq_len
            if seq_len < self.original_max_seq_len and self.max_seq_len_cached > self.original_max_seq_len:  # reset
                self.inv_freq.copy_(self.original_inv_freq)
                self.max_seq_len_cached = self.original_max_seq_len
        elif self.rope_type == "longrope":
            omp = self.rc.params["original_max_position_embeddings"]
            f, _, _ = rope_parameters(self.rc, seq_len=seq_len if seq_len > omp else None)
            self.inv_freq.copy_(f)

    def forward(self, q, k, positions, seq_len: Optional[int] = None, inplace: bool = False,
                head_first: bool = False):
        if self.rope_type in POSITION_DEPENDENT:
            if seq_len is None:
                seq_len = int(positions.max()) + 1
            self._update_frequencies(int(seq_len))
        cache = self.cos_sin_cache
        if cache is not None and positions.numel() >= self.on_the_fly_from_tokens * (3 if self.mrope_section else 1):
            cache = None  # large calls: no cache row a token to wait for (class docstring)
        # rotary_dim is the cache's / inv_freq's (left out so the eager fast path can take the call)
        return apply_rope(q, k, positions, cache, inv_freq=self.inv_freq if cache is None else None,
                          attention_scaling=self.attention_scaling,
                          max_positions=self.max_positions if self.cos_sin_cache is not None else None,
                          interleaved=self.interleaved, mrope_section=self.mrope_section, head_first=head_first,
                          inplace=inplace, out_of_range=self.out_of_range)

    def extra_repr(self):
        return (f"rope_type={self.rope_type}, rotary_dim={self.rotary_dim}, head_dim={self.head_dim}, "
                f"mode={self.mode}, max_positions={self.max_positions}")
