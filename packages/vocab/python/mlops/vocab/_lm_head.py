"""mlops.vocab.lm_head: the BF16 LM head for 1 .. 8 tokens, with the sampler's statistics."""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from ._common import check_tensor, fail, on_device, ptr, resolve_variant, stream_of
from ._native import C

_VARIANTS = C.lm_head_variants()


class LmHeadOutput(NamedTuple):
    """logits fp32 [M, V]; max fp32 [M]; argmax int64 [M] (lowest index of the max); key_hist
    int32 [M, 256] (counts of the order-preserving key's top byte); best int64 [M] (the raw
    (key << 32) | (0xffffffff - index) the kernel reduces)."""

    logits: torch.Tensor
    max: torch.Tensor
    argmax: torch.Tensor
    key_hist: torch.Tensor
    best: torch.Tensor


def lm_head_variants() -> list[dict]:
    """The LM head instances as data: index, name, kind, min_sm, ctas_per_sm, bitwise_host."""
    return [dict(v) for v in _VARIANTS]


def lm_head_variant_runs(variant) -> bool:
    """Whether a variant (name or index) can run on the current CUDA device with this build."""
    return bool(C.lm_head_variant_runs(resolve_variant("variant", variant, _VARIANTS)))


def decode_best(best: torch.Tensor):
    """(max, argmax) from the packed (key << 32) | (0xffffffff - index) values."""
    key = (best >> 32) & 0xFFFFFFFF
    bits = torch.where(key >= 0x80000000, key ^ 0x80000000, (~key) & 0xFFFFFFFF)
    bits = torch.where(bits >= 0x80000000, bits - (1 << 32), bits).to(torch.int32)
    return bits.view(torch.float32), 0xFFFFFFFF - (best & 0xFFFFFFFF)


def _lm_head_impl(x, weight, row_scale, logits, best, key_hist, logit_scale: float, variant: int) -> None:
    M, H = x.shape
    V = weight.shape[0]

    def run():
        C.lm_head(x.is_cuda, stream_of(x), M, H, V, x.data_ptr(), x.stride(0), weight.data_ptr(), weight.stride(0),
                  logits.data_ptr(), logits.stride(0), ptr(row_scale), logit_scale, ptr(best), ptr(key_hist), variant)

    on_device(x, run)


@torch.library.custom_op("mlops_vocab::lm_head_into", mutates_args=("logits", "best", "key_hist"),
                         device_types=("cpu", "cuda"))
def _lm_head_into(x: torch.Tensor, weight: torch.Tensor, row_scale: Optional[torch.Tensor], logits: torch.Tensor,
                  best: Optional[torch.Tensor], key_hist: Optional[torch.Tensor], logit_scale: float,
                  variant: int) -> None:
    _lm_head_impl(x, weight, row_scale, logits, best, key_hist, logit_scale, variant)


@_lm_head_into.register_fake
def _(x, weight, row_scale, logits, best, key_hist, logit_scale, variant):
    return None


@torch.library.custom_op("mlops_vocab::decode_best_into", mutates_args=("max", "argmax"), device_types=("cuda",))
def _decode_best_into(best: torch.Tensor, max: torch.Tensor, argmax: torch.Tensor) -> None:
    # one kernel (decode_best's torch expression is a dozen element-wise launches: ~20 us of graph
    # nodes at M = 1 on the H200, most of what the statistics cost in bench run 12)
    on_device(best, lambda: C.lm_head_decode_best(stream_of(best), best.data_ptr(), best.shape[0], max.data_ptr(),
                                                  argmax.data_ptr()))


@_decode_best_into.register_fake
def _(best, max, argmax):
    return None


def lm_head(x: torch.Tensor, weight: torch.Tensor, *, row_scale: Optional[torch.Tensor] = None,
            logit_scale: float = 1.0, stats: bool = False, out: Optional[torch.Tensor] = None, variant=None):
    """logits = ((x @ weight.T) * row_scale[:, None]) * logit_scale in FP32, for 1 .. 8 tokens.

    x: bf16 [M, H] or [H]; weight: bf16 [V, H] (V any, H a multiple of 8); row_scale: fp32 [M],
    the deferred RMSNorm scalar 1/rms (optional). The sum's order is fixed (docs/vocab.md): the
    logits do not depend on the variant, the grid or the GPU. stats: also each row's max, its
    lowest argmax and the key-byte histogram (an LmHeadOutput). M > 8 is an error (a GEMM is the
    tool for prefill).
    """
    check_tensor("x", x, (torch.bfloat16,), dims=(1, 2))
    check_tensor("weight", weight, (torch.bfloat16,), dims=(2,), device=x.device)
    if x.device.type not in ("cpu", "cuda"):
        fail("x", f"expected a CPU or CUDA tensor, got {x.device}")
    x2 = x.unsqueeze(0) if x.dim() == 1 else x
    M, H = x2.shape
    V, Hw = weight.shape
    if not 1 <= M <= 8:
        fail("x", f"the LM head takes 1 .. 8 tokens a call (decode), got {M}; use a GEMM (x @ weight.T) for prefill")
    if Hw != H:
        fail("weight", f"expected hidden size {H} (x's last dimension), got weight of shape {tuple(weight.shape)}")
    if H % 8:
        fail("x", f"expected a hidden size that is a multiple of 8, got {H}")
    if V == 0:
        fail("weight", "expected at least one vocabulary row")
    # Pointers exist only eagerly (torch.compile traces fake tensors); the C API checks alignment
    # again at run time either way, with the same message.
    if x2.is_cuda and not torch.compiler.is_compiling():
        if x2.data_ptr() % 16 or x2.stride(0) % 8:  # x is small: a fresh (aligned) copy is cheap
            x2 = x2.clone(memory_format=torch.contiguous_format)
        if weight.data_ptr() % 16 or weight.stride(0) % 8:
            fail("weight", "expected a 16-byte aligned tensor with a row stride that is a multiple of 8")
    if row_scale is not None:
        check_tensor("row_scale", row_scale, (torch.float32,), dims=(1,), device=x.device)
        if row_scale.shape[0] != M or not row_scale.is_contiguous():
            fail("row_scale", f"expected a contiguous float32 tensor of shape ({M},), got {tuple(row_scale.shape)}")
    vi = resolve_variant("variant", variant, _VARIANTS)
    if out is None:
        out = torch.empty((M, V), dtype=torch.float32, device=x.device)
    else:
        check_tensor("out", out, (torch.float32,), dims=(2,), device=x.device)
        if tuple(out.shape) != (M, V):
            fail("out", f"expected shape {(M, V)}, got {tuple(out.shape)}")
    best = key_hist = None
    if stats and not torch.compiler.is_compiling():  # key_hist right after best: one memset clears both
        buf = torch.empty(M + 128 * M, dtype=torch.int64, device=x.device)
        best, key_hist = buf[:M], buf[M:].view(torch.int32).view(M, 256)
    elif stats:  # traced: two mutated arguments of the custom op must not alias one buffer
        best = torch.empty(M, dtype=torch.int64, device=x.device)
        key_hist = torch.empty((M, 256), dtype=torch.int32, device=x.device)
    args = (x2, weight, row_scale, out, best, key_hist, float(logit_scale), vi)
    if torch.compiler.is_compiling():
        _lm_head_into(*args)
    else:
        _lm_head_impl(*args)
    logits = out if x.dim() == 2 else out[0]
    if not stats:
        return logits
    if x.is_cuda:
        mx = torch.empty(M, dtype=torch.float32, device=x.device)
        am = torch.empty(M, dtype=torch.int64, device=x.device)
        _decode_best_into(best, mx, am)
    else:
        mx, am = decode_best(best)
    return LmHeadOutput(logits, mx, am, key_hist, best)
