"""mlops.attention: the FBLA cache and its decode on torch tensors.

CUDA tensors run the kernels on torch's current stream; CPU tensors run the host emulation (the
same arithmetic in the same order, the same bits). The ops are registered with torch.library
(mlops_attention::append_ and ::decode_into, with fake implementations), so torch.compile and CUDA
graphs hold them; eager calls skip the dispatcher.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch

from ._native import C

__all__ = ["FBLACache", "CacheFullError", "empty", "append", "encode", "decode", "decode_at", "scratch_bytes",
           "record_layout", "decode_scratch_views", "decode_variants", "PV_FORMS", "MODES", "DEFAULT_GAP", "GROUP", "BLOCK"]

MODES = {"3+3": 0, "4+2": 1}
GROUP = 128          # tokens a group (group 0 is the BF16 sink)
BLOCK = 16           # tokens a refine block
DEFAULT_GAP = 20.0   # a skipped token weighs <= e^-20 (2e-9) of the largest; docs/attention.md
_OUT_DTYPE = {torch.bfloat16: 1, torch.float32: 3}  # mlops/common/status.h


class CacheFullError(RuntimeError):
    """An append would pass the cache's capacity; nothing was written."""


def _fail(arg: str, msg: str):
    raise ValueError(f"{arg}: {msg}")


def _stream(t: torch.Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def _aligned_bytes(nbytes: int, device, zero: bool = True) -> torch.Tensor:
    """A uint8 tensor of nbytes starting on a 256-byte boundary (CUDA allocations are; CPU ones
    are 64-byte aligned, so those are cut out of a slightly larger buffer)."""
    device = torch.device(device)
    make = torch.zeros if zero else torch.empty
    if device.type == "cuda":
        return make(nbytes, dtype=torch.uint8, device=device)
    buf = make(nbytes + 256, dtype=torch.uint8, device=device)
    off = (-buf.data_ptr()) % 256
    return buf[off:off + nbytes]


class FBLACache:
    """The FBLA cache of `batch` sequences x `kv_heads` heads, `capacity` tokens a sequence.

    records: uint8 [batch, kv_heads, slots, record_bytes], closed groups 1 .. (group g at slot g-1);
    sink_k / sink_v: bf16 [batch, kv_heads, 128, head_dim], tokens 0 .. 127;
    tail_k / tail_v: bf16 [batch, kv_heads, 128, head_dim], the filling group at row t % 128;
    lengths: int32 [batch] (device memory: decode reads it there); flags: int32 [1], 1 after a refused
    append (C API / graph users; Python raises CacheFullError before launching).
    docs/attention.md has the byte layout; mlops/fbla.h's mlops_fbla_cache mirrors it."""

    def __init__(self, batch: int, kv_heads: int, capacity: int, head_dim: int, mode: str, device):
        self.batch, self.kv_heads, self.capacity, self.head_dim, self.mode = batch, kv_heads, capacity, head_dim, mode
        self.slots = max(0, capacity // GROUP - 1)
        self.record_bytes = int(C.record_bytes(head_dim))
        rec = _aligned_bytes(batch * kv_heads * self.slots * self.record_bytes, device)
        self.records = rec.view(batch, kv_heads, self.slots, self.record_bytes)
        shape = (batch, kv_heads, GROUP, head_dim)
        self.sink_k = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        self.sink_v = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        self.tail_k = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        self.tail_v = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        self.lengths = torch.zeros(batch, dtype=torch.int32, device=device)
        self.flags = torch.zeros(1, dtype=torch.int32, device=device)
        # the host's copy of the lengths, kept by append / encode (no device read); None once
        # unknown (after the lengths tensor was written by someone else: call sync_lengths())
        self.host_lengths: Optional[list] = [0] * batch
        self._scratch: dict = {}

    @property
    def device(self) -> torch.device:
        return self.lengths.device

    def sync_lengths(self):
        """Re-reads the lengths from the device (synchronizes) after they changed outside append."""
        self.host_lengths = [int(x) for x in self.lengths.cpu().tolist()]

    def _tuple(self):
        return (self.batch, self.kv_heads, self.capacity, self.head_dim, MODES[self.mode], self.slots,
                self.record_bytes, self.records.data_ptr() if self.records.numel() else 0,
                self.sink_k.data_ptr(), self.sink_v.data_ptr(), self.tail_k.data_ptr(), self.tail_v.data_ptr(),
                self.lengths.data_ptr(), self.flags.data_ptr())

    def scratch(self, q_heads: int) -> torch.Tensor:
        """The decode scratch for q_heads (allocated once a cache and head count; no initial contents)."""
        s = self._scratch.get(q_heads)
        if s is None:
            s = _aligned_bytes(scratch_bytes(self, q_heads), self.device, zero=False)
            self._scratch[q_heads] = s
        return s

    def __repr__(self):
        return (f"FBLACache(batch={self.batch}, kv_heads={self.kv_heads}, capacity={self.capacity}, "
                f"head_dim={self.head_dim}, mode={self.mode!r}, device={self.device})")


def empty(batch: int, kv_heads: int, capacity: int, head_dim: int = 128, mode: str = "3+3",
          device: Union[str, torch.device] = "cuda") -> FBLACache:
    """An empty cache (every length 0). head_dim 64 or 128; mode "3+3" or "4+2"."""
    for name, val in (("batch", batch), ("kv_heads", kv_heads), ("capacity", capacity)):
        if not isinstance(val, int) or val < 1:
            _fail(name, f"expected an int >= 1, got {val!r}")
    if capacity >= 2 ** 31:
        _fail("capacity", f"expected < 2^31 tokens, got {capacity}")
    if head_dim not in (64, 128):
        _fail("head_dim", f"expected 64 or 128, got {head_dim!r}")
    if mode not in MODES:
        _fail("mode", f"expected one of {sorted(MODES)}, got {mode!r}")
    device = torch.device(device)
    if device.type not in ("cpu", "cuda"):
        _fail("device", f"expected cpu or cuda, got {device}")
    return FBLACache(batch, kv_heads, capacity, head_dim, mode, device)


def _check_kv(name: str, t, cache: FBLACache, like: Optional[torch.Tensor] = None):
    if not isinstance(t, torch.Tensor):
        _fail(name, f"expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.bfloat16:
        _fail(name, f"expected bfloat16, got {t.dtype}")
    if t.dim() != 4:
        _fail(name, f"expected [batch, kv_heads, tokens, head_dim], got shape {tuple(t.shape)}")
    B, H, _, D = t.shape
    if B != cache.batch:
        _fail(name, f"expected batch {cache.batch} (the cache's), got {B}")
    if H != cache.kv_heads:
        _fail(name, f"expected kv_heads {cache.kv_heads} (the cache's), got {H}")
    if D != cache.head_dim:
        _fail(name, f"expected head_dim {cache.head_dim} (the cache's), got {D}")
    if t.device != cache.device:
        _fail(name, f"expected device {cache.device} (the cache's), got {t.device}")
    if like is not None and tuple(t.shape) != tuple(like.shape):
        _fail(name, f"expected the shape of k {tuple(like.shape)}, got {tuple(t.shape)}")
    if t.numel() and t.stride(-1) != 1:
        _fail(name, f"expected a contiguous last dimension (head_dim), got stride {t.stride(-1)}")


def _run_append(records, sink_k, sink_v, tail_k, tail_v, lengths, flags, k, v, counts, cache_geo, count, max_count):
    cache = cache_geo
    tup = (*cache[:7], records.data_ptr() if records.numel() else 0, sink_k.data_ptr(), sink_v.data_ptr(),
           tail_k.data_ptr(), tail_v.data_ptr(), lengths.data_ptr(), flags.data_ptr())
    ks, vs = k.stride(), v.stride()
    cnt = counts.data_ptr() if counts is not None else 0
    if k.is_cuda:
        with torch.cuda.device(k.device):
            C.append(True, _stream(k), tup, k.data_ptr(), ks[0], ks[1], ks[2], v.data_ptr(), vs[0], vs[1], vs[2],
                     cnt, count, max_count)
    else:
        try:
            C.append(False, 0, tup, k.data_ptr(), ks[0], ks[1], ks[2], v.data_ptr(), vs[0], vs[1], vs[2],
                     cnt, count, max_count)
        except RuntimeError as e:
            if str(e).startswith("bad data"):
                raise CacheFullError(str(e)) from None
            raise


@torch.library.custom_op("mlops_attention::append_",
                         mutates_args=("records", "sink_k", "sink_v", "tail_k", "tail_v", "lengths", "flags"),
                         device_types=("cpu", "cuda"))
def _append_op(records: torch.Tensor, sink_k: torch.Tensor, sink_v: torch.Tensor, tail_k: torch.Tensor,
               tail_v: torch.Tensor, lengths: torch.Tensor, flags: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               counts: Optional[torch.Tensor], cache_geo: list[int], count: int, max_count: int) -> None:
    _run_append(records, sink_k, sink_v, tail_k, tail_v, lengths, flags, k, v, counts, cache_geo, count, max_count)


@_append_op.register_fake
def _(records, sink_k, sink_v, tail_k, tail_v, lengths, flags, k, v, counts, cache_geo, count, max_count):
    return None


def _geo(cache: FBLACache) -> list:
    return [cache.batch, cache.kv_heads, cache.capacity, cache.head_dim, MODES[cache.mode], cache.slots,
            cache.record_bytes]


def _append(cache: FBLACache, k, v, counts: Optional[torch.Tensor], count: int, max_count: int):
    args = (cache.records, cache.sink_k, cache.sink_v, cache.tail_k, cache.tail_v, cache.lengths, cache.flags, k, v,
            counts, _geo(cache), int(count), int(max_count))
    if torch.compiler.is_compiling():
        _append_op(*args)
    else:  # eager: straight to the implementation (the dispatcher costs microseconds a call)
        _run_append(*args)


def append(cache: FBLACache, k: torch.Tensor, v: torch.Tensor) -> FBLACache:
    """Appends n tokens to every sequence: k, v bf16 [batch, kv_heads, n, head_dim] (any strides
    with head_dim contiguous). Groups that fill are quantized on the cache's device (the same
    records as the host encoder, bit for bit). Raises CacheFullError (nothing written) when a
    sequence would pass capacity. Returns the cache."""
    if not isinstance(cache, FBLACache):
        _fail("cache", f"expected an FBLACache, got {type(cache).__name__}")
    _check_kv("k", k, cache)
    _check_kv("v", v, cache, like=k)
    n = int(k.shape[2])
    if n > cache.capacity:
        _fail("k", f"{n} tokens exceed capacity {cache.capacity}")
    if cache.host_lengths is not None:
        over = [b for b, L in enumerate(cache.host_lengths) if L + n > cache.capacity]
        if over:
            b = over[0]
            raise CacheFullError(f"cache full: sequence {b} holds {cache.host_lengths[b]} tokens, {n} more exceed "
                                 f"capacity {cache.capacity}; nothing written")
    _append(cache, k, v, None, n, n)
    if cache.host_lengths is not None:
        cache.host_lengths = [L + n for L in cache.host_lengths]
    return cache


def encode(k: torch.Tensor, v: torch.Tensor, lengths: Union[torch.Tensor, Sequence[int], None] = None,
           capacity: Optional[int] = None, mode: str = "3+3") -> FBLACache:
    """A cache holding existing K/V: k, v bf16 [batch, kv_heads, T, head_dim]; sequence b takes its
    first lengths[b] tokens (default T). capacity defaults to T. The same GPU path as append
    (= empty() + one append with per-sequence counts)."""
    if not isinstance(k, torch.Tensor) or k.dim() != 4:
        _fail("k", f"expected a [batch, kv_heads, tokens, head_dim] tensor, got "
                   f"{tuple(k.shape) if isinstance(k, torch.Tensor) else type(k).__name__}")
    B, H, T, D = k.shape
    if lengths is None:
        lens = [T] * B
    elif isinstance(lengths, torch.Tensor):
        if lengths.dim() != 1 or lengths.shape[0] != B or lengths.dtype not in (torch.int32, torch.int64):
            _fail("lengths", f"expected an int32 / int64 tensor [{B}], got {lengths.dtype} {tuple(lengths.shape)}")
        lens = [int(x) for x in lengths.cpu().tolist()]
    else:
        lens = [int(x) for x in lengths]
        if len(lens) != B:
            _fail("lengths", f"expected {B} lengths (k's batch), got {len(lens)}")
    capacity = T if capacity is None else capacity
    for b, L in enumerate(lens):
        if L < 0 or L > T:
            _fail("lengths", f"lengths[{b}] = {L}: expected 0 ... {T} (k's tokens)")
        if L > capacity:
            _fail("lengths", f"lengths[{b}] = {L} is beyond capacity {capacity}")
    cache = empty(B, H, int(capacity), int(D), mode, k.device)
    _check_kv("k", k, cache)
    _check_kv("v", v, cache, like=k)
    counts = torch.tensor(lens, dtype=torch.int32).to(k.device)
    mx = max(lens) if lens else 0
    if mx:
        _append(cache, k, v, counts, 0, mx)
    cache.host_lengths = list(lens)
    return cache


def scratch_bytes(cache: FBLACache, q_heads: int) -> int:
    """Bytes of the decode scratch (the C API's mlops_fbla_decode_scratch_bytes)."""
    return int(C.scratch_bytes(cache._tuple(), int(q_heads)))


def decode_scratch_views(cache: FBLACache, q_heads: int) -> dict:
    """The parts of the decode scratch of cache.scratch(q_heads) after a decode, as float32 views
    (a debugging and testing aid; src/fbla_internal.h Scratch): ub [B, Hq, slots*8] (the upper-bound
    score of each 16-token block, skip mode only), lbmax [B, Hq, chunks] (the largest lower bound of
    each chunk of 2 groups, skip mode only), m / l [B, Hq, 1 + chunks], acc [B, Hq, 1 + chunks, D]
    (the partials: slot 0 the BF16 tokens). Only the entries of the current lengths are written."""
    B, D = cache.batch, cache.head_dim
    nblk = cache.slots * 8
    nch = (cache.slots + 1) // 2
    P = 1 + nch

    def up(n):
        return (n + 63) // 64 * 64

    f = cache.scratch(q_heads).view(torch.float32)
    n_ub, n_lb, n_m = up(B * q_heads * max(nblk, 1)), up(B * q_heads * max(nch, 1)), up(B * q_heads * P)
    o = 0
    ub = f[o:o + B * q_heads * nblk].view(B, q_heads, nblk)
    o += n_ub
    lb = f[o:o + B * q_heads * nch].view(B, q_heads, nch)
    o += n_lb
    m = f[o:o + B * q_heads * P].view(B, q_heads, P)
    o += n_m
    ll = f[o:o + B * q_heads * P].view(B, q_heads, P)
    o += n_m
    acc = f[o:o + B * q_heads * P * D].view(B, q_heads, P, D)
    return {"ub": ub, "lbmax": lb, "m": m, "l": ll, "acc": acc}


def record_layout(head_dim: int, mode: str = "3+3") -> dict:
    """Byte offsets of a closed group's record parts and its size (docs/attention.md)."""
    if mode not in MODES:
        _fail("mode", f"expected one of {sorted(MODES)}, got {mode!r}")
    return dict(C.record_layout(int(head_dim), MODES[mode]))


def _run_decode(q, records, sink_k, sink_v, tail_k, tail_v, lengths, scratch, out, cache_geo, scale, exact, gap, ctas,
                variant=0, pv=0):
    # decode reads no flags: the cache's lengths stand in for the pointer the validation wants
    tup = (*cache_geo[:7], records.data_ptr() if records.numel() else 0, sink_k.data_ptr(), sink_v.data_ptr(),
           tail_k.data_ptr(), tail_v.data_ptr(), lengths.data_ptr(), lengths.data_ptr())
    qs = q.stride()
    args = (tup, q.data_ptr(), qs[0], qs[1], q.shape[1], out.data_ptr(), _OUT_DTYPE[out.dtype], float(scale),
            int(exact), float(gap), int(ctas), scratch.data_ptr(), scratch.numel(), int(variant), int(pv))
    if q.is_cuda:
        with torch.cuda.device(q.device):
            C.decode(True, _stream(q), *args)
    else:
        C.decode(False, 0, *args)


@torch.library.custom_op("mlops_attention::decode_into", mutates_args=("scratch", "out"),
                         device_types=("cpu", "cuda"))
def _decode_op(q: torch.Tensor, records: torch.Tensor, sink_k: torch.Tensor, sink_v: torch.Tensor,
               tail_k: torch.Tensor, tail_v: torch.Tensor, lengths: torch.Tensor, scratch: torch.Tensor,
               out: torch.Tensor, cache_geo: list[int], scale: float, exact: bool, gap: float, ctas: int,
               variant: int, pv: int) -> None:
    _run_decode(q, records, sink_k, sink_v, tail_k, tail_v, lengths, scratch, out, cache_geo, scale, exact, gap, ctas,
                variant, pv)


@_decode_op.register_fake
def _(q, records, sink_k, sink_v, tail_k, tail_v, lengths, scratch, out, cache_geo, scale, exact, gap, ctas, variant,
      pv):
    return None


_VARIANTS = C.decode_variants()


def decode_variants() -> list[dict]:
    """The decode kernel layouts as data: index, name, min_sm, pv (the P V form it computes: "digits" or
    "chains"), planner (True for the planner's pick of its form; for "digits" mma_pv+coarse_imma, whose launch
    runs mma_pv4r+coarse_imma's refine where mma_pv's resident CTAs would take more than one round of items: in one
    round of its own anywhere, in more on sm_90; on sm_90 within mma_pv's one round too). Every variant of a form
    gives that form's bits (the host emulation's); decode(variant=None) takes the planner's pick for pv."""
    return [dict(v) for v in _VARIANTS]


PV_FORMS = {"digits": 0, "chains": 1}  # MLOPS_FBLA_PV_DIGITS / MLOPS_FBLA_PV_CHAINS


def _pv_code(pv, vcode: int) -> int:
    """pv None: the named variant's form, else digits (the default)."""
    own = _VARIANTS[vcode - 1]["pv"] if vcode else None
    if pv is None:
        pv = own or "digits"
    if pv not in PV_FORMS:
        _fail("pv", f"expected one of {sorted(PV_FORMS)} or None, got {pv!r}")
    if own is not None and own != pv:
        _fail("pv", f"variant {_VARIANTS[vcode - 1]['name']!r} computes pv={own!r}, got pv={pv!r}")
    return PV_FORMS[pv]


def _variant_code(variant) -> int:
    """0 = the planner; else 1 + the variant's index (the C API's mlops_fbla_decode_args.variant)."""
    if variant is None:
        return 0
    for v in _VARIANTS:
        if variant == v["name"] or (isinstance(variant, int) and not isinstance(variant, bool) and variant == v["index"]):
            return 1 + v["index"]
    _fail("variant", f"expected None, a name in {[v['name'] for v in _VARIANTS]} or an index, got {variant!r}")


def decode(q: torch.Tensor, cache: FBLACache, exact: bool = False, gap: float = DEFAULT_GAP,
           scale: Optional[float] = None, out_dtype: torch.dtype = torch.bfloat16,
           out: Optional[torch.Tensor] = None, ctas: int = 0, variant=None, pv: Optional[str] = None) -> torch.Tensor:
    """Attention of one query token a sequence over its cache: q bf16 [batch, q_heads, head_dim]
    (q_heads a multiple of kv_heads; q head h reads kv head h // (q_heads // kv_heads)).

    exact=False skips the blocks of 16 tokens whose upper-bound score is more than `gap` below the
    largest lower bound (each skipped token weighs <= e^-gap of the largest); exact=True refines
    every block; with every block refined both give the same bits. scale: softmax scale (default
    1/sqrt(head_dim)). The lengths are cache.lengths, read on the device when the kernels run, so a
    captured CUDA graph replays decode as appends grow the cache. ctas: 0 = the device's resident
    CTAs (any value gives the same bits). pv: the P V numerics, "digits" (the default: a closed 32-token
    slice's weights p * v_scale as two int8 digits, the integer P V on the tensor core, docs/attention.md)
    or "chains" (fp32 fmaf chains in token order); None takes the named variant's form, else "digits".
    variant: None (the planner's pick for pv), or a name / index of decode_variants() whose pv is pv
    (every variant of a form gives the same bits). Returns out: [batch, q_heads, head_dim] in out_dtype
    (bfloat16 or float32)."""
    if not isinstance(cache, FBLACache):
        _fail("cache", f"expected an FBLACache, got {type(cache).__name__}")
    if not isinstance(q, torch.Tensor):
        _fail("q", f"expected a torch.Tensor, got {type(q).__name__}")
    if q.dtype != torch.bfloat16:
        _fail("q", f"expected bfloat16, got {q.dtype}")
    if q.dim() != 3:
        _fail("q", f"expected [batch, q_heads, head_dim], got shape {tuple(q.shape)}")
    B, Hq, D = q.shape
    if B != cache.batch:
        _fail("q", f"expected batch {cache.batch} (the cache's), got {B}")
    if Hq < 1 or Hq % cache.kv_heads:
        _fail("q", f"expected q_heads a multiple of kv_heads = {cache.kv_heads}, got {Hq}")
    if D != cache.head_dim:
        _fail("q", f"expected head_dim {cache.head_dim} (the cache's), got {D}")
    if q.device != cache.device:
        _fail("q", f"expected device {cache.device} (the cache's), got {q.device}")
    if q.stride(-1) != 1:
        _fail("q", f"expected a contiguous last dimension, got stride {q.stride(-1)}")
    if out_dtype not in _OUT_DTYPE:
        _fail("out_dtype", f"expected torch.bfloat16 or torch.float32, got {out_dtype}")
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    if not (float(scale) > 0 and math.isfinite(float(scale))):
        _fail("scale", f"expected a finite value > 0, got {scale!r}")
    if not float(gap) > 0:
        _fail("gap", f"expected > 0, got {gap!r}")
    if out is None:
        out = torch.empty((B, Hq, D), dtype=out_dtype, device=q.device)
    elif (tuple(out.shape) != (B, Hq, D) or out.dtype != out_dtype or out.device != q.device
          or not out.is_contiguous()):
        _fail("out", f"expected a contiguous {out_dtype} tensor {(B, Hq, D)} on {q.device}")
    vcode = _variant_code(variant)
    pcode = _pv_code(pv, vcode)
    scratch = cache.scratch(Hq)
    args = (q, cache.records, cache.sink_k, cache.sink_v, cache.tail_k, cache.tail_v, cache.lengths, scratch, out,
            _geo(cache), float(scale), bool(exact), float(gap), int(ctas), vcode, pcode)
    if torch.compiler.is_compiling():
        _decode_op(*args)
    else:
        _run_decode(*args)
    return out


def decode_at(q: torch.Tensor, cache: FBLACache, **kw) -> torch.Tensor:
    """decode() under the name of the C API's graph-replay contract: the lengths are the cache's,
    read in device memory when the kernels run (never by the host), so one captured CUDA graph of
    append + decode_at replays step after step as the cache grows. Same arguments, same bits."""
    return decode(q, cache, **kw)
