"""mlops.vocab.embed: embedding rows widened to FP32, with the inputs of the first RMSNorm."""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from ._common import DTYPE, check_tensor, fail, on_device, ptr, resolve_variant, row_stride, stream_of
from ._native import C

_VARIANTS = C.embed_variants()


class EmbedOutput(NamedTuple):
    """x: fp32 [T, H]; xw: bf16(x * norm_weight) [T, H] or None; unit_sumsq: fp32 [T, ceil(H/256)]
    or None (mlops-norm's order); rms_r: fp32 [T] = 1/sqrt(mean(x^2) + eps) or None; oov: int32 [1],
    1 when an id was outside the table (its row is zero)."""

    x: Optional[torch.Tensor]
    xw: Optional[torch.Tensor]
    unit_sumsq: Optional[torch.Tensor]
    rms_r: Optional[torch.Tensor]
    oov: torch.Tensor


def embed_variants() -> list[dict]:
    """The embed kernel instances as data: index, name, warps_per_token (all give the same bits)."""
    return [dict(v) for v in _VARIANTS]


def _embed_impl(ids, table, norm_weight, out, xw, unit_sumsq, rms_r, oov, eps: float, variant: int) -> None:
    T, (V, H) = ids.numel(), table.shape
    device = ids.is_cuda
    wdt = DTYPE[norm_weight.dtype] if norm_weight is not None else 0

    def run():
        C.embed(device, stream_of(ids), T, H, V, DTYPE[ids.dtype], ids.data_ptr(), DTYPE[table.dtype], table.data_ptr(),
                table.stride(0), ptr(out), 0 if out is None else row_stride(out), wdt, ptr(norm_weight), ptr(xw),
                0 if xw is None else row_stride(xw), ptr(unit_sumsq), 0 if unit_sumsq is None else row_stride(unit_sumsq),
                ptr(rms_r), eps, ptr(oov), variant)

    on_device(ids, run)


@torch.library.custom_op("mlops_vocab::embed_into", mutates_args=("out", "xw", "unit_sumsq", "rms_r", "oov"),
                         device_types=("cpu", "cuda"))
def _embed_into(ids: torch.Tensor, table: torch.Tensor, norm_weight: Optional[torch.Tensor], out: Optional[torch.Tensor],
                xw: Optional[torch.Tensor], unit_sumsq: Optional[torch.Tensor], rms_r: Optional[torch.Tensor],
                oov: torch.Tensor, eps: float, variant: int) -> None:
    _embed_impl(ids, table, norm_weight, out, xw, unit_sumsq, rms_r, oov, eps, variant)


@_embed_into.register_fake
def _(ids, table, norm_weight, out, xw, unit_sumsq, rms_r, oov, eps, variant):
    return None


def embed(ids: torch.Tensor, table: torch.Tensor, norm_weight: Optional[torch.Tensor] = None, *,
          eps: Optional[float] = None, sums: bool = False, out: Optional[torch.Tensor] = None,
          oov: Optional[torch.Tensor] = None, variant=None) -> EmbedOutput:
    """Rows of table for ids (int32 / int64, any shape: flattened to T tokens).

    table: [V, H] bf16 / fp16 / fp32 on ids' GPU, or pinned CPU memory (mapped: read over PCIe),
    or on the CPU with CPU ids (the host emulation). norm_weight [H]: also return bf16(x * w),
    the deferred-scalar input of the first RMSNorm. eps: also return rms_r = 1/sqrt(mean(x^2) + eps),
    bit for bit mlops.norm's. sums: also return the per-256 sums of squares. oov: an int32 [1]
    flag to set (default: a new zero one). An id outside [0, V) gives a zero row and sets oov.
    """
    check_tensor("ids", ids, (torch.int32, torch.int64), contiguous_last=False)
    if ids.numel() == 0:
        fail("ids", "expected at least one token id")
    if not ids.is_contiguous():
        fail("ids", "expected a contiguous tensor")
    check_tensor("table", table, (torch.bfloat16, torch.float16, torch.float32), dims=(2,))
    dev = ids.device
    if ids.is_cuda:
        if not (table.device == dev or (table.device.type == "cpu" and table.is_pinned())):
            fail("table", f"expected a tensor on {dev} or in pinned CPU memory, got {table.device}"
                 + (" (not pinned)" if table.device.type == "cpu" else ""))
    elif table.device.type != "cpu":
        fail("table", f"expected a CPU tensor with CPU ids, got {table.device}")
    V, H = table.shape
    if V == 0 or H == 0:
        fail("table", f"expected a non-empty [V, H] table, got shape {tuple(table.shape)}")
    T = ids.numel()
    lead = tuple(ids.shape)
    if norm_weight is not None:
        check_tensor("norm_weight", norm_weight, (torch.bfloat16, torch.float16, torch.float32), dims=(1,), device=dev)
        if norm_weight.shape[0] != H:
            fail("norm_weight", f"expected shape ({H},) matching the table's hidden size, got {tuple(norm_weight.shape)}")
        if not norm_weight.is_contiguous():
            fail("norm_weight", "expected a contiguous tensor")
    if eps is not None and not eps >= 0:
        fail("eps", f"expected >= 0, got {eps}")
    vi = resolve_variant("variant", variant, _VARIANTS)
    if out is None:
        out = torch.empty(lead + (H,), dtype=torch.float32, device=dev)
    else:
        check_tensor("out", out, (torch.float32,), device=dev)
        if tuple(out.shape) != lead + (H,) or not out.is_contiguous():
            fail("out", f"expected a contiguous float32 tensor of shape {lead + (H,)}, got {tuple(out.shape)}")
    xw = torch.empty(lead + (H,), dtype=torch.bfloat16, device=dev) if norm_weight is not None else None
    units = (H + 255) // 256
    unit_sumsq = torch.empty(lead + (units,), dtype=torch.float32, device=dev) if sums else None
    rms_r = torch.empty(lead, dtype=torch.float32, device=dev) if eps is not None else None
    if oov is None:
        oov = torch.zeros(1, dtype=torch.int32, device=dev)
    else:
        check_tensor("oov", oov, (torch.int32,), device=dev)
        if oov.numel() != 1:
            fail("oov", f"expected one int32 element, got shape {tuple(oov.shape)}")
    args = (ids, table, norm_weight, out.view(T, H), None if xw is None else xw.view(T, H),
            None if unit_sumsq is None else unit_sumsq.view(T, units), rms_r, oov,
            float(eps if eps is not None else 0.0), vi)
    if torch.compiler.is_compiling():
        _embed_into(*args)
    else:  # eager: straight to the implementation, the dispatcher adds microseconds a call
        _embed_impl(*args)
    return EmbedOutput(out, xw, unit_sumsq, rms_r, oov)
