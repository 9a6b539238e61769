"""mlops.positional: rotary position embeddings on torch tensors.

CUDA tensors run the kernels on torch's current stream; CPU tensors run the host emulation
(the same arithmetic, the same bits). Both ops are registered with torch.library
(mlops_positional::rope_ and ::rope_out, with fake implementations), so
torch.compile(fullgraph=True) and CUDA graphs hold them; eager calls skip the dispatcher.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from ._native import C

__all__ = ["apply_rope", "build_cos_sin_cache", "rope_variants"]

_DTYPE = {torch.bfloat16: 1, torch.float16: 2, torch.float32: 3}  # mlops/common/status.h
_POS_DTYPE = {torch.int32: 7, torch.int64: 8}
_NO_LIMIT = (1 << 62)  # max_positions on the fly: every non-negative position is valid


def rope_variants() -> list[dict]:
    """The kernel variants as data: id, name, items_per_thread, early (q / k loads issued before the
    positions are read), pipe (a persistent grid pipelining token blocks). Every variant gives the
    same bits; apply_rope(variant=name) picks one."""
    return C.variants()


_VARIANT_ID = {v["name"]: v["id"] for v in C.variants()}


def _fail(arg: str, msg: str):
    raise ValueError(f"{arg}: {msg}")


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _fast(q, k, positions, cos_sin_cache, inv_freq, attention_scaling, max_positions, interleaved, inplace,
          out_of_range):
    """The common eager call with the fewest checks that keep it safe: CUDA, q / k [T, H, D] (views
    of a fused qkv are fine), one position row, a cache or inv_freq, no split / variant / out_q /
    out_k. None when the general path must decide (it also raises every error). One nanobind call
    of 24 arguments (C.run_fast), which also checks that q is on the current device. H200 run 14:
    the general eager path cost 24 ... 36 us of host time a call (bench "rope host overhead")."""
    if type(q) is not torch.Tensor or not q.is_cuda or q.dim() != 3 or _raw_stream is None:
        return None
    dt = _DTYPE.get(q.dtype)
    T, Hq, D = q.shape
    if dt is None or T == 0 or Hq == 0 or not (64 <= D <= 256) or q.stride(2) != 1:
        return None
    dev = q.get_device()
    if k is not None:
        if (type(k) is not torch.Tensor or k.dtype is not q.dtype or k.dim() != 3 or k.shape[0] != T
                or k.shape[2] != D or k.shape[1] == 0 or k.stride(2) != 1 or k.get_device() != dev):
            return None
    pdt = _POS_DTYPE.get(positions.dtype) if type(positions) is torch.Tensor else None
    if pdt is None or positions.shape != (T,) or not positions.is_contiguous() or positions.get_device() != dev:
        return None
    if cos_sin_cache is not None and inv_freq is not None:
        return None  # the general path checks both
    if cos_sin_cache is not None:
        t, rd = cos_sin_cache, cos_sin_cache.shape[-1]
        if cos_sin_cache.dim() != 2:
            return None
        rows = cos_sin_cache.shape[0]
        if max_positions is None:
            max_positions = rows
        elif not 1 <= max_positions <= rows:
            return None
    elif inv_freq is not None:
        t, rd = inv_freq, 2 * inv_freq.shape[0]
        if inv_freq.dim() != 1:
            return None
        if max_positions is None:
            max_positions = _NO_LIMIT
        elif max_positions < 1:
            return None
    else:
        return None
    if (type(t) is not torch.Tensor or t.dtype is not torch.float32 or not t.is_contiguous() or t.get_device() != dev
            or rd < 2 or rd > D or rd % 2):
        return None
    if out_of_range is not None and (type(out_of_range) is not torch.Tensor or out_of_range.dtype is not torch.int32
                                     or out_of_range.numel() != 1 or out_of_range.get_device() != dev):
        return None
    if inplace:
        qo, ko = q, k
    else:
        qo = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        ko = None if k is None else torch.empty(k.shape, dtype=k.dtype, device=k.device)
    if k is None:
        kx, kh, kss, khs = 0, 0, 0, 0
    else:
        kx, kh, kss, khs = k.data_ptr(), k.shape[1], k.stride(0), k.stride(1)
    if not C.run_fast(dev, _raw_stream(dev), T, D, rd, 1 if interleaved else 0, dt, q.data_ptr(),
                      0 if inplace else qo.data_ptr(), Hq, q.stride(0), q.stride(1), kx,
                      0 if inplace or k is None else ko.data_ptr(), kh, kss, khs, pdt, positions.data_ptr(),
                      0 if cos_sin_cache is None else cos_sin_cache.data_ptr(), int(max_positions),
                      0 if cos_sin_cache is not None else inv_freq.data_ptr(), float(attention_scaling),
                      0 if out_of_range is None else out_of_range.data_ptr()):
        return None  # q is not on the current device: the general path switches to it
    return qo, ko


def _stream(t: torch.Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def _token_view(name: str, t: torch.Tensor, head_first: bool):
    """(batch, seq, heads, head_dim, (batch_stride, seq_stride, head_stride)) of a [T, H, D],
    [B, S, H, D] or (head_first) [B, H, S, D] tensor."""
    if t.dim() == 3:
        if head_first:
            return 1, t.shape[1], t.shape[0], t.shape[2], (0, t.stride(1), t.stride(0))
        return 1, t.shape[0], t.shape[1], t.shape[2], (0, t.stride(0), t.stride(1))
    if t.dim() == 4:
        if head_first:
            return t.shape[0], t.shape[2], t.shape[1], t.shape[3], (t.stride(0), t.stride(2), t.stride(1))
        return t.shape[0], t.shape[1], t.shape[2], t.shape[3], (t.stride(0), t.stride(1), t.stride(2))
    _fail(name, f"expected [tokens, heads, head_dim] or [batch, seq, heads, head_dim] (head_first: "
                f"[batch, heads, seq, head_dim]), got shape {tuple(t.shape)}")


def _check_tensor(name: str, t: torch.Tensor, like: Optional[torch.Tensor]):
    if not isinstance(t, torch.Tensor):
        _fail(name, f"expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _DTYPE:
        _fail(name, f"expected bfloat16, float16 or float32, got {t.dtype}")
    if t.device.type not in ("cpu", "cuda"):
        _fail(name, f"expected a CPU or CUDA tensor, got device {t.device}")
    if like is not None:
        if t.dtype != like.dtype:
            _fail(name, f"expected dtype {like.dtype} (q's), got {t.dtype}")
        if t.device != like.device:
            _fail(name, f"expected device {like.device} (q's), got {t.device}")
    if t.numel() and t.stride(-1) != 1:
        _fail(name, f"expected a contiguous last dimension (head_dim), got stride {t.stride(-1)}")


def _check_float_buffer(name: str, t: Optional[torch.Tensor], q: torch.Tensor, dims: int):
    if t is None:
        return
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
        _fail(name, f"expected a float32 tensor, got {getattr(t, 'dtype', type(t).__name__)}")
    if t.dim() != dims:
        _fail(name, f"expected {dims} dimension(s), got shape {tuple(t.shape)}")
    if t.device != q.device:
        _fail(name, f"expected device {q.device} (q's), got {t.device}")
    if not t.is_contiguous():
        _fail(name, "expected a contiguous tensor")


class _Call:
    """The validated arguments of one call, as the C API takes them."""

    __slots__ = ("batch", "seq", "head_dim", "rotary_dim", "layout", "dtype", "q_geo", "k_geo", "pos_dtype",
                 "pos_row_stride", "section", "max_positions", "scaling", "head_first", "q_geo", "k_geo")

    # q_geo / k_geo: (heads, batch_stride, seq_stride, head_stride) of q and k, read once


def _prepare(q, k, positions, cos_sin_cache, inv_freq, attention_scaling, max_positions, rotary_dim, interleaved,
             mrope_section, head_first, out_of_range) -> _Call:
    _check_tensor("q", q, None)
    c = _Call()
    c.head_first = bool(head_first)
    B, S, Hq, D, qs = _token_view("q", q, head_first)
    c.q_geo = (Hq, *qs)
    c.k_geo = (0, 0, 0, 0)
    if k is not None:
        _check_tensor("k", k, q)
        Bk, Sk, Hk, Dk, ks = _token_view("k", k, head_first)
        c.k_geo = (Hk, *ks)
        if (Bk, Sk) != (B, S) or k.dim() != q.dim():
            _fail("k", f"expected the tokens of q ({B} x {S}), got shape {tuple(k.shape)}")
        if Dk != D:
            _fail("k", f"expected head_dim {D} (q's), got {Dk}")
    if not (64 <= D <= 256):
        _fail("q", f"expected head_dim in 64 ... 256, got {D}")
    if cos_sin_cache is None and inv_freq is None:
        _fail("cos_sin_cache", "expected a cos/sin cache or inv_freq (on the fly)")
    _check_float_buffer("cos_sin_cache", cos_sin_cache, q, 2)
    _check_float_buffer("inv_freq", inv_freq, q, 1)
    if rotary_dim is None:
        rotary_dim = cos_sin_cache.shape[1] if cos_sin_cache is not None else 2 * inv_freq.shape[0]
    rotary_dim = int(rotary_dim)
    if rotary_dim % 2 or rotary_dim < 2:
        _fail("rotary_dim", f"expected an even value >= 2, got {rotary_dim}")
    if rotary_dim > D:
        _fail("rotary_dim", f"expected at most head_dim = {D}, got {rotary_dim}")
    if cos_sin_cache is not None and cos_sin_cache.shape[1] != rotary_dim:
        _fail("cos_sin_cache", f"expected [max_positions, rotary_dim={rotary_dim}], got {tuple(cos_sin_cache.shape)}")
    if inv_freq is not None and inv_freq.shape[0] != rotary_dim // 2:
        _fail("inv_freq", f"expected rotary_dim/2 = {rotary_dim // 2} frequencies, got {inv_freq.shape[0]}")
    if not isinstance(positions, torch.Tensor):
        _fail("positions", f"expected a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype not in _POS_DTYPE:
        _fail("positions", f"expected int32 or int64, got {positions.dtype}")
    if positions.device != q.device:
        _fail("positions", f"expected device {q.device} (q's), got {positions.device}")
    tok_shape = (S,) if q.dim() == 3 else (B, S)
    if mrope_section is not None:
        sec = [int(s) for s in mrope_section]
        if len(sec) != 3 or min(sec) < 0 or sum(sec) != rotary_dim // 2:
            _fail("mrope_section", f"expected three values >= 0 summing to rotary_dim/2 = {rotary_dim // 2}, got {sec}")
        if tuple(positions.shape) != (3,) + tok_shape:
            _fail("positions", f"mrope expects shape {(3,) + tok_shape}, got {tuple(positions.shape)}")
        if not positions[0].is_contiguous():
            _fail("positions", "expected each of the three rows contiguous")
        c.pos_row_stride = positions.stride(0)
        c.section = sec
    else:
        if tuple(positions.shape) != tok_shape:
            _fail("positions", f"expected shape {tok_shape} (one position a token), got {tuple(positions.shape)}")
        if not positions.is_contiguous():
            _fail("positions", "expected a contiguous tensor")
        c.pos_row_stride = 0
        c.section = [0, 0, 0]
    if out_of_range is not None:
        if (not isinstance(out_of_range, torch.Tensor) or out_of_range.dtype != torch.int32
                or out_of_range.numel() != 1 or out_of_range.device != q.device):
            _fail("out_of_range", f"expected an int32 tensor of one element on {q.device}")
    if max_positions is None:
        max_positions = cos_sin_cache.shape[0] if cos_sin_cache is not None else _NO_LIMIT
    elif cos_sin_cache is not None and max_positions > cos_sin_cache.shape[0]:
        _fail("max_positions", f"expected at most the cache's {cos_sin_cache.shape[0]} rows, got {max_positions}")
    c.batch, c.seq, c.head_dim, c.rotary_dim = B, S, D, rotary_dim
    c.layout = 1 if interleaved else 0
    c.dtype = _DTYPE[q.dtype]
    c.pos_dtype = _POS_DTYPE[positions.dtype]
    c.max_positions = int(max_positions)
    c.scaling = float(attention_scaling)
    return c


def _geometry(c: _Call, q_out: Optional[torch.Tensor], k_out: Optional[torch.Tensor], inplace: bool) -> list[int]:
    """[q heads, q strides (3), q_out strides (3), the same for k]: what C.run takes, read once a call."""
    def out_strides(geo, out, name):
        if inplace or out is None:
            return geo[1:]
        return _token_view(name, out, c.head_first)[4]
    return [*c.q_geo, *out_strides(c.q_geo, q_out, "out_q"), *c.k_geo, *out_strides(c.k_geo, k_out, "out_k")]


def _ptr(t: Optional[torch.Tensor]) -> int:
    return 0 if t is None else t.data_ptr()


def _run(q, k, q_out, k_out, positions, cos_sin_cache, inv_freq, out_of_range, batch: int, seq: int,
         head_dim: int, rotary_dim: int, layout: int, pos_row_stride: int, section: Sequence[int],
         max_positions: int, scaling: float, geo: list[int], split: list[int]) -> None:
    if q.is_cuda and q.device.index is not None and q.device.index != torch.cuda.current_device():
        with torch.cuda.device(q.device.index):
            return _run(q, k, q_out, k_out, positions, cos_sin_cache, inv_freq, out_of_range, batch, seq, head_dim,
                        rotary_dim, layout, pos_row_stride, section, max_positions, scaling, geo,
                        split)
    C.run(q.is_cuda, _stream(q), batch, seq, head_dim, rotary_dim, layout, _DTYPE[q.dtype],
          _ptr(q), _ptr(q_out), *geo[:7], _ptr(k), _ptr(k_out), *geo[7:],
          _POS_DTYPE[positions.dtype], positions.data_ptr(), pos_row_stride, section[0], section[1], section[2],
          _ptr(cos_sin_cache), max_positions, _ptr(inv_freq), scaling, _ptr(out_of_range), split[0], split[1],
          split[2])


@torch.library.custom_op("mlops_positional::rope_", mutates_args=("q", "k", "out_of_range"),
                         device_types=("cpu", "cuda"))
def _rope_inplace(q: torch.Tensor, k: Optional[torch.Tensor], positions: torch.Tensor,
                  cos_sin_cache: Optional[torch.Tensor], inv_freq: Optional[torch.Tensor],
                  out_of_range: Optional[torch.Tensor], batch: int, seq: int, head_dim: int, rotary_dim: int,
                  layout: int, pos_row_stride: int, section: list[int], max_positions: int, scaling: float,
                  geo: list[int], split: list[int]) -> None:
    _run(q, k, q, k, positions, cos_sin_cache, inv_freq, out_of_range, batch, seq, head_dim, rotary_dim, layout,
         pos_row_stride, section, max_positions, scaling, geo, split)


@_rope_inplace.register_fake
def _(q, k, positions, cos_sin_cache, inv_freq, out_of_range, batch, seq, head_dim, rotary_dim, layout,
      pos_row_stride, section, max_positions, scaling, geo, split):
    return None


@torch.library.custom_op("mlops_positional::rope_out", mutates_args=("q_out", "k_out", "out_of_range"),
                         device_types=("cpu", "cuda"))
def _rope_out(q: torch.Tensor, k: Optional[torch.Tensor], q_out: torch.Tensor, k_out: Optional[torch.Tensor],
              positions: torch.Tensor, cos_sin_cache: Optional[torch.Tensor], inv_freq: Optional[torch.Tensor],
              out_of_range: Optional[torch.Tensor], batch: int, seq: int, head_dim: int, rotary_dim: int,
              layout: int, pos_row_stride: int, section: list[int], max_positions: int, scaling: float,
              geo: list[int], split: list[int]) -> None:
    _run(q, k, q_out, k_out, positions, cos_sin_cache, inv_freq, out_of_range, batch, seq, head_dim, rotary_dim,
         layout, pos_row_stride, section, max_positions, scaling, geo, split)


@_rope_out.register_fake
def _(q, k, q_out, k_out, positions, cos_sin_cache, inv_freq, out_of_range, batch, seq, head_dim, rotary_dim,
      layout, pos_row_stride, section, max_positions, scaling, geo, split):
    return None


def _check_out(name: str, out: torch.Tensor, like: torch.Tensor):
    if tuple(out.shape) != tuple(like.shape) or out.dtype != like.dtype or out.device != like.device:
        _fail(name, f"expected {tuple(like.shape)} {like.dtype} on {like.device}, got "
                    f"{tuple(out.shape)} {out.dtype} on {out.device}")
    if out.stride(-1) != 1:
        _fail(name, "expected a contiguous last dimension")


def apply_rope(q: torch.Tensor, k: Optional[torch.Tensor], positions: torch.Tensor,
               cos_sin_cache: Optional[torch.Tensor] = None, *, inv_freq: Optional[torch.Tensor] = None,
               attention_scaling: float = 1.0, max_positions: Optional[int] = None,
               rotary_dim: Optional[int] = None, interleaved: bool = False,
               mrope_section: Optional[Sequence[int]] = None, head_first: bool = False, inplace: bool = False,
               out_q: Optional[torch.Tensor] = None, out_k: Optional[torch.Tensor] = None,
               out_of_range: Optional[torch.Tensor] = None, tokens_per_cta: int = 0, heads_per_cta: int = 0,
               variant: Optional[str] = None):
    """Rotate q and k (either may be a strided view of a fused qkv tensor) by their positions.

    q, k: [tokens, heads, head_dim] or [batch, seq, heads, head_dim] ([batch, heads, seq,
    head_dim] with head_first=True), bf16 / fp16 / fp32, head_dim 64 ... 256, any head counts;
    k may be None. positions: int32 / int64 [tokens] or [batch, seq] (mrope: [3, ...]).
    cos_sin_cache: fp32 [max_positions, rotary_dim] (cos | sin, build_cos_sin_cache), or
    inv_freq: fp32 [rotary_dim/2] with attention_scaling to compute cos/sin on the fly.
    interleaved: GPT-J pairs (2i, 2i+1); default NeoX pairs (i, i + rotary_dim/2). Values past
    rotary_dim pass through. A position outside [0, max_positions) leaves its token unrotated
    and sets out_of_range (int32 [1], when given) to 1: nothing is read outside the cache.

    tokens_per_cta / heads_per_cta: the CTA split (0: the planner's; every split gives the same bits).
    variant: a kernel variant's name (rope_variants(); None: the planner's; every one gives the same bits).

    Returns (q_out, k_out): q and k themselves with inplace=True.
    """
    if (mrope_section is None and not head_first and out_q is None and out_k is None and rotary_dim is None
            and not tokens_per_cta and not heads_per_cta and variant is None and not torch.compiler.is_compiling()):
        r = _fast(q, k, positions, cos_sin_cache, inv_freq, attention_scaling, max_positions, interleaved, inplace,
                  out_of_range)
        if r is not None:
            return r
    c = _prepare(q, k, positions, cos_sin_cache, inv_freq, attention_scaling, max_positions, rotary_dim,
                 interleaved, mrope_section, head_first, out_of_range)
    if variant is not None and variant not in _VARIANT_ID:
        _fail("variant", f"expected None or one of {sorted(_VARIANT_ID)}, got {variant!r}")
    split = [int(tokens_per_cta), int(heads_per_cta), 0 if variant is None else _VARIANT_ID[variant]]
    if inplace:
        if out_q is not None or out_k is not None:
            _fail("inplace", "True does not take out_q / out_k")
    else:
        if out_q is None:
            out_q = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        else:
            _check_out("out_q", out_q, q)
        if k is not None:
            if out_k is None:
                out_k = torch.empty(k.shape, dtype=k.dtype, device=k.device)
            else:
                _check_out("out_k", out_k, k)
    args = (positions, cos_sin_cache, inv_freq, out_of_range, c.batch, c.seq, c.head_dim, c.rotary_dim, c.layout,
            c.pos_row_stride, c.section, c.max_positions, c.scaling, _geometry(c, out_q, out_k, inplace), split)
    if inplace:
        if torch.compiler.is_compiling():
            _rope_inplace(q, k, *args)
        else:  # eager: straight to the implementation (the dispatcher costs microseconds a call)
            _run(q, k, q, k, *args)
        return q, k
    if torch.compiler.is_compiling():
        _rope_out(q, k, out_q, out_k, *args)
    else:
        _run(q, k, out_q, out_k, *args)
    return out_q, out_k


def build_cos_sin_cache(inv_freq: torch.Tensor, max_positions: int, attention_scaling: float = 1.0,
                        device=None) -> torch.Tensor:
    """fp32 [max_positions, 2 * len(inv_freq)]: cos(fp32(p * inv_freq[i])) * scaling, then the sin.
    Built on `device` (the GPU kernel or the host emulation): the same bits either way, and the
    same bits the kernels compute on the fly."""
    if not isinstance(inv_freq, torch.Tensor) or inv_freq.dtype != torch.float32 or inv_freq.dim() != 1:
        _fail("inv_freq", "expected a 1-D float32 tensor")
    device = torch.device(device) if device is not None else inv_freq.device
    f = inv_freq.to(device).contiguous()
    half = f.shape[0]
    cache = torch.empty((int(max_positions), 2 * half), dtype=torch.float32, device=device)
    if f.is_cuda:
        with torch.cuda.device(f.device):
            C.cache(True, _stream(f), f.data_ptr(), half, float(attention_scaling), int(max_positions), cache.data_ptr())
    else:
        C.cache(False, 0, f.data_ptr(), half, float(attention_scaling), int(max_positions), cache.data_ptr())
    return cache
