"""Reference K/V quantizers and the decode-time fake-quant attention of the quality harness.

Pure torch, no model, no mlops: everything here runs on CPU in CI (tests/test_attention_quality_harness.py)
and on the GPU for the full-context run. Tensors are [batch, heads, tokens, head_dim].

The formats, each by our own code:
- q8_0 / q4_0: ggml's reference quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref in ggml-quants.c):
  blocks of 32 values along head_dim, one fp16 scale d a block.
    q8_0: d = amax / 127, q = roundf(x / d) in [-127, 127], x' = q * fp16(d)
    q4_0: m = the value of largest magnitude (signed), d = m / -8, q = min(15, trunc(x / d + 8.5)),
          x' = (q - 8) * fp16(d)
  (the reciprocal 1/d is taken from the unrounded d, as ggml does; roundf rounds half away from zero).
  llama.cpp writes every token to the quantized cache before attending, so every key and value is quantized.
- KIVI (Liu et al. 2024, "KIVI: a tuning-free asymmetric 2bit quantization for KV cache"): asymmetric
  min / max integer codes, x' = mn + scale * q with scale = (mx - mn) / (2^b - 1).
  K per channel over groups of G tokens (a group is quantized when its G tokens are in the cache, before that
  the tokens are the full-precision residual); V per token over head_dim (group min(G, head_dim) channels),
  the R most recent tokens in full precision.
- FBLA (mlops-attention, docs/attention.md, src/fbla_math.h): 6-bit codes, K per channel over each closed group
  of 128 tokens, V per token over head_dim; scale = (max - min) / 63 and code = rint((x - min) * 63 / (max - min))
  in float32, x' = min + scale * code; code = coarse << fine_bits | fine (3+3: fine_bits 3, 4+2: 2). Group 0
  (tokens 0 .. 127) is the BF16 sink, the group still filling stays BF16. Exact mode attends every closed token
  with its full code, so 3+3 and 4+2 hold the same values; skip mode first bounds each block of 16 tokens from the
  coarse plane (centre of the fine range +- (2^fine_bits - 1) / 2 codes a channel) and drops the blocks whose
  upper bound is more than `gap` (20) below the largest lower bound of the closed tokens.

Decode semantics (what a model generating token t + 1 reads from the cache): the query at position t attends
keys 0 .. t, its own key appended first (A.append then A.decode: the cache holds L = t + 1 tokens). Key / value j
uses its dequantized value iff the format has quantized it once L tokens are in: a group is closed when all its
tokens are in (group end <= t + 1), KIVI's V leaves the residual of the R most recent tokens (t - j < R). The choice
is per (query, key), so one masked attention per layer (chunked over queries) models a window of decode steps.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import torch

QK = 32  # ggml's block length for q8_0 and q4_0


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    """C's roundf: half away from zero (torch.round is half to even)."""
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def _blocks(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1]
    if d % QK:
        raise ValueError(f"head_dim must be a multiple of {QK} for q8_0 / q4_0, got {d}")
    return x.float().reshape(*x.shape[:-1], d // QK, QK)


def q8_0_quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes int8 [..., nb, 32], d fp16 [..., nb]) as ggml's quantize_row_q8_0_ref."""
    b = _blocks(x)
    d = b.abs().amax(-1) / 127.0
    inv = torch.where(d != 0, torch.ones_like(d) / torch.where(d != 0, d, torch.ones_like(d)), torch.zeros_like(d))
    q = _round_half_away(b * inv[..., None]).clamp(-127, 127).to(torch.int8)
    return q, d.half()


def q8_0_dequantize(q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return (q.float() * d.float()[..., None]).flatten(-2)


def q4_0_quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes uint8 in [0, 15] [..., nb, 32], d fp16 [..., nb]) as ggml's quantize_row_q4_0_ref."""
    b = _blocks(x)
    idx = b.abs().argmax(-1, keepdim=True)
    m = torch.gather(b, -1, idx)[..., 0]  # signed value of the largest magnitude (the first one on ties)
    d = m / -8.0
    inv = torch.where(d != 0, torch.ones_like(d) / torch.where(d != 0, d, torch.ones_like(d)), torch.zeros_like(d))
    # (int8_t)(x0 + 8.5f): x0 + 8.5 >= 0.5 here, so the C cast's truncation is a floor
    q = torch.clamp(torch.trunc(b * inv[..., None] + 8.5), max=15).to(torch.uint8)
    return q, d.half()


def q4_0_dequantize(q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return ((q.float() - 8.0) * d.float()[..., None]).flatten(-2)


def q8_0(x: torch.Tensor) -> torch.Tensor:
    return q8_0_dequantize(*q8_0_quantize(x)).reshape(x.shape)


def q4_0(x: torch.Tensor) -> torch.Tensor:
    return q4_0_dequantize(*q4_0_quantize(x)).reshape(x.shape)


def minmax_quantize(x: torch.Tensor, bits: int, dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric integer codes along `dim`: (codes, mn, scale), x' = mn + scale * code, codes in [0, 2^bits - 1].
    A constant slice (scale 0) gets code 0. Codes round half up (floor(y + 0.5), y >= 0)."""
    x = x.float()
    mn = x.amin(dim, keepdim=True)
    mx = x.amax(dim, keepdim=True)
    scale = (mx - mn) / (2**bits - 1)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    code = torch.floor((x - mn) / safe + 0.5).clamp(0, 2**bits - 1)
    code = torch.where(scale > 0, code, torch.zeros_like(code))
    return code, mn, scale


def _grouped_tokens(x: torch.Tensor, start: int, group: int) -> tuple[torch.Tensor, int]:
    """View of the full groups of `group` tokens from token `start` on: [..., n_groups, group, D]."""
    t = x.shape[-2]
    ng = max(0, (t - start) // group)
    return x[..., start:start + ng * group, :].reshape(*x.shape[:-2], ng, group, x.shape[-1]), ng


def kivi_k(x: torch.Tensor, bits: int, group: int = 128) -> torch.Tensor:
    """KIVI's K: per channel over each full group of `group` tokens; tokens after the last full group unchanged."""
    out = x.float().clone()
    g, ng = _grouped_tokens(x, 0, group)
    if ng:
        code, mn, scale = minmax_quantize(g, bits, dim=-2)
        out[..., : ng * group, :] = (mn + scale * code).reshape(*x.shape[:-2], ng * group, x.shape[-1])
    return out


def kivi_v(x: torch.Tensor, bits: int, group: int = 128) -> torch.Tensor:
    """KIVI's V: per token over groups of min(group, head_dim) channels."""
    d = x.shape[-1]
    gc = min(group, d)
    if d % gc:
        raise ValueError(f"head_dim {d} is not a multiple of the channel group {gc}")
    b = x.float().reshape(*x.shape[:-1], d // gc, gc)
    code, mn, scale = minmax_quantize(b, bits, dim=-1)
    return (mn + scale * code).reshape(x.shape)


def _bf16_round(x: torch.Tensor, up: bool) -> torch.Tensor:
    """float32 x rounded to bf16 toward +inf (up) or -inf, as float32 (integer steps on the bits; finite x)."""
    u = x.contiguous().view(torch.int32)
    inexact = (u & 0xFFFF) != 0
    away = inexact & ((u >= 0) if up else (u < 0))  # truncation rounds toward 0: one step away where that is wrong
    return (((u >> 16) + away.to(torch.int32)) << 16).view(torch.float32)


def fbla_quantize(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FBLA's encoder (src/fbla_math.h quant_range / quant_code, record version 4) in float32: (codes, mn, scale)
    along `dim`: mn the min (bf16 inputs: a bf16 value, stored exactly; float32 inputs rounded down to bf16 here, as
    the format stores it), scale = (max - mn) / 63 rounded up to bf16, code = clamp(rint_even((x - mn) / scale), 0,
    63) by the float reciprocal as the encoder (0 for a zero scale)."""
    x = x.float()
    mn = _bf16_round(x.amin(dim, keepdim=True), up=False)
    rng = x.amax(dim, keepdim=True) - mn
    # a tensor / tensor division: torch computes `scalar / tensor` as scalar * reciprocal, not correctly rounded
    scale = _bf16_round(rng / torch.full_like(rng, 63.0), up=True)
    inv = torch.where(scale > 0, torch.ones_like(scale) / torch.where(scale > 0, scale, torch.ones_like(scale)),
                      torch.zeros_like(scale))
    code = torch.round((x - mn) * inv).clamp(0, 63)
    return code, mn, scale


@dataclass
class FBLAFake:
    """The FBLA format in float for the closed groups (n_groups full groups of `group` tokens after the sink):
    k / v: dequantized with the full 6-bit codes (float32, the input's shape; other tokens unchanged);
    kc: K at the centre of its coarse code's fine range ((code >> fb << fb) + (2^fb - 1) / 2), what skip mode
    bounds blocks with; k_scale: [B, H, n_groups, D]."""

    k: torch.Tensor
    v: torch.Tensor
    kc: torch.Tensor
    k_scale: torch.Tensor
    n_groups: int
    sink: int
    group: int
    fine_bits: int


def fbla_fake(k: torch.Tensor, v: torch.Tensor, sink: int = 128, fine_bits: int = 3, group: int = 128) -> FBLAFake:
    kf, vf = k.float(), v.float()
    out_k, out_v, out_kc = kf.clone(), vf.clone(), kf.clone()
    gk, ng = _grouped_tokens(kf, sink, group)
    b, h, _, d = k.shape
    k_scale = torch.zeros(b, h, ng, d, dtype=torch.float32, device=k.device)
    if ng:
        sl = slice(sink, sink + ng * group)
        code, mn, scale = fbla_quantize(gk, dim=-2)  # K: per channel over the group's tokens
        centre = torch.floor(code / 2**fine_bits) * 2**fine_bits + (2**fine_bits - 1) / 2.0
        out_k[..., sl, :] = (mn + scale * code).reshape(b, h, ng * group, d)
        out_kc[..., sl, :] = (mn + scale * centre).reshape(b, h, ng * group, d)
        k_scale = scale[..., 0, :]
        code, mn, scale = fbla_quantize(vf[..., sl, :], dim=-1)  # V: per token over head_dim
        out_v[..., sl, :] = mn + scale * code
    return FBLAFake(out_k, out_v, out_kc, k_scale, ng, sink, group, fine_bits)


# ---------------------------------------------------------------------------------------------------------------
# Per-(query, key) choice: which keys / values a decoding query reads dequantized.


def closed_group_mask(t_q: torch.Tensor, t_k: torch.Tensor, start: int, group: int, n_tokens: int) -> torch.Tensor:
    """[len(t_q), len(t_k)] bool: key j is in a group [start + g*group, start + (g+1)*group) that is closed once
    query t's cache holds t + 1 tokens (start + (g+1)*group <= t + 1)."""
    g = torch.div(t_k - start, group, rounding_mode="floor")
    end = start + (g + 1) * group
    in_group = (t_k >= start) & (end <= n_tokens)
    return in_group[None, :] & (end[None, :] <= t_q[:, None] + 1)


def recent_mask(t_q: torch.Tensor, t_k: torch.Tensor, residual: int) -> torch.Tensor:
    """[len(t_q), len(t_k)] bool: key j is older than the `residual` most recent tokens of query t (t - j >= R)."""
    return (t_q[:, None] - t_k[None, :]) >= residual


class Treatment(abc.ABC):
    """A K/V treatment: prepare() once per layer call, then the per-query-chunk masks."""

    name = "base"

    @abc.abstractmethod
    def prepare(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """Quantize (or keep) this layer call's K/V."""

    @abc.abstractmethod
    def masks(self, t_q: torch.Tensor, t_k: torch.Tensor) -> tuple[torch.Tensor | bool, torch.Tensor | bool]:
        """(sel_k, sel_v): True where the query reads the dequantized key / value."""


class BF16(Treatment):
    """The harness's own attention path with unchanged K/V (checks the path against SDPA: Δloss ~ 0)."""

    name = "bf16-harness"

    def prepare(self, k, v):
        self.kq, self.vq = k.float(), v.float()

    def masks(self, t_q, t_k):
        return False, False


class GGML(Treatment):
    def __init__(self, kind: str):
        self.kind = kind
        self.name = kind
        self.fn = {"q8_0": q8_0, "q4_0": q4_0}[kind]

    def prepare(self, k, v):
        self.kq, self.vq = self.fn(k), self.fn(v)

    def masks(self, t_q, t_k):
        return True, True


class KIVI(Treatment):
    def __init__(self, bits: int, group: int = 128, residual: int = 128):
        self.bits, self.group, self.residual = bits, group, residual
        self.name = f"kivi-{bits}"

    def prepare(self, k, v):
        self.n = k.shape[-2]
        self.kq, self.vq = kivi_k(k, self.bits, self.group), kivi_v(v, self.bits, self.group)

    def masks(self, t_q, t_k):
        return closed_group_mask(t_q, t_k, 0, self.group, self.n), recent_mask(t_q, t_k, self.residual)


class FBLA(Treatment):
    """FBLA fake quant. skip=False: exact mode (every closed token with its full code: 3+3 and 4+2 the same).
    skip=True: skip mode as the decode kernel runs it (src/fbla_host.cpp), in float: each block of `block` closed
    tokens gets an upper bound (its largest coarse-centre score + err) and each closed token a lower bound
    (coarse-centre score - err), err = scaling * sum_d |q_d| k_scale[g, d] (2^fb - 1) / 2; blocks whose upper
    bound is below (largest lower bound) - gap are dropped from the softmax. Not modelled: decode's int8
    quantization of q . k_scale and its float32 sums (the real kernels have them: --real)."""

    def __init__(self, mode: str, sink: int = 128, skip: bool = False, gap: float = 20.0, group: int = 128,
                 block: int = 16):
        coarse, fine = (int(p) for p in mode.split("+"))
        if coarse + fine != 6:
            raise ValueError(f"mode {mode!r}: coarse + fine bits must be 6")
        if group % block:
            raise ValueError(f"group {group} is not a multiple of block {block}")
        self.mode, self.fine, self.sink, self.skip, self.gap = mode, fine, sink, skip, gap
        self.group, self.block = group, block
        self.name = f"fbla-{mode}-{'skip' if skip else 'exact'}"
        self.refined = 0.0
        self.considered = 0.0

    def prepare(self, k, v):
        self.n = k.shape[-2]
        self.f = fbla_fake(k, v, self.sink, self.fine, self.group)
        self.kq, self.vq = self.f.k, self.f.v

    def masks(self, t_q, t_k):
        m = closed_group_mask(t_q, t_k, self.sink, self.group, self.n)
        return m, m


class FBLAAxes(Treatment):
    """The quantization-axis alternatives of FBLA's 6-bit codes (exact mode, same groups, sink and masks):
    k_axis / v_axis "channel" (each channel's min / scale over the group's 128 tokens) or "token" (each token's
    over its head_dim channels). FBLA itself is K channel, V token (docs/attention.md, "Quantization axes")."""

    def __init__(self, k_axis: str, v_axis: str, sink: int = 128, group: int = 128):
        for a in (k_axis, v_axis):
            if a not in ("channel", "token"):
                raise ValueError(f"axis {a!r}: expected channel or token")
        self.k_axis, self.v_axis, self.sink, self.group = k_axis, v_axis, sink, group
        self.name = f"fbla6-k{k_axis[:2] if k_axis == 'channel' else 'tok'}-v{v_axis[:2] if v_axis == 'channel' else 'tok'}"

    def _q(self, x: torch.Tensor, axis: str) -> torch.Tensor:
        out = x.float().clone()
        g, ng = _grouped_tokens(out, self.sink, self.group)
        if ng:
            code, mn, scale = fbla_quantize(g, dim=-2 if axis == "channel" else -1)
            out[..., self.sink:self.sink + ng * self.group, :] = (mn + scale * code).reshape(
                *x.shape[:-2], ng * self.group, x.shape[-1])
        return out

    def prepare(self, k, v):
        self.n = k.shape[-2]
        self.kq, self.vq = self._q(k, self.k_axis), self._q(v, self.v_axis)

    def masks(self, t_q, t_k):
        m = closed_group_mask(t_q, t_k, self.sink, self.group, self.n)
        return m, m


def _repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


def fake_quant_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, tr: Treatment, scaling: float,
                         chunk: int = 1024) -> torch.Tensor:
    """Causal attention of q [B, Hq, T, D] over k, v [B, Hkv, T, D] (GQA by repeat), each query reading the
    dequantized or raw K / V per the treatment's masks; float32 inside. Returns [B, Hq, T, D] float32."""
    b, hq, t, d = q.shape
    n_rep = hq // k.shape[1]
    tr.prepare(k, v)
    kr, vr = _repeat_kv(k.float(), n_rep), _repeat_kv(v.float(), n_rep)
    kq, vq = _repeat_kv(tr.kq, n_rep), _repeat_kv(tr.vq, n_rep)
    skip = isinstance(tr, FBLA) and tr.skip
    if skip:
        kc = _repeat_kv(tr.f.kc, n_rep)
        ksc = _repeat_kv(tr.f.k_scale, n_rep) * ((2**tr.fine - 1) / 2.0)  # [B, Hq, G, D]
    t_k = torch.arange(t, device=q.device)
    out = torch.empty(b, hq, t, d, dtype=torch.float32, device=q.device)
    qf = q.float()
    for r0 in range(0, t, chunk):
        r1 = min(t, r0 + chunk)
        t_q = t_k[r0:r1]
        qc = qf[:, :, r0:r1]
        causal = t_k[None, :] <= t_q[:, None]
        sel_k, sel_v = tr.masks(t_q, t_k)
        s_raw = (qc @ kr.transpose(-1, -2)) * scaling
        if sel_k is False:
            s = s_raw
        elif sel_k is True:
            s = (qc @ kq.transpose(-1, -2)) * scaling
        else:
            s_q = (qc @ kq.transpose(-1, -2)) * scaling
            s = torch.where(sel_k, s_q, s_raw)
            if skip:
                s = s.masked_fill(_skipped(tr, qc, kc, ksc, sel_k, t_q, scaling), float("-inf"))
        s = s.masked_fill(~causal, float("-inf"))
        p = torch.softmax(s, dim=-1)
        if sel_v is False:
            o = p @ vr
        elif sel_v is True:
            o = p @ vq
        else:
            o = (p * sel_v) @ vq + (p * ~sel_v) @ vr
        out[:, :, r0:r1] = o
    return out


def _skipped(tr: FBLA, qc, kc, ksc, sel_k, t_q, scaling) -> torch.Tensor:
    """[B, H, rows, T] bool: closed tokens in blocks that skip mode drops for these queries."""
    f = tr.f
    ng, g, s0, blk = f.n_groups, f.group, f.sink, tr.block
    b, h, rows, _ = qc.shape
    t = kc.shape[-2]
    out = torch.zeros(b, h, rows, t, dtype=torch.bool, device=qc.device)
    if ng == 0:
        return out
    sl = slice(s0, s0 + ng * g)
    centre = (qc @ kc[..., sl, :].transpose(-1, -2)) * scaling  # [B, H, rows, ng*g]
    err = scaling * (qc.abs() @ ksc.transpose(-1, -2))  # [B, H, rows, ng]
    err_tok = err.repeat_interleave(g, dim=-1)
    closed = sel_k[:, sl]  # [rows, ng*g]: the query's closed tokens
    lb = (centre - err_tok).masked_fill(~closed, float("-inf")).amax(-1, keepdim=True)  # [B, H, rows, 1]
    ub = (centre + err_tok).reshape(b, h, rows, ng * g // blk, blk).amax(-1)  # [B, H, rows, blocks]
    closed_blk = closed.reshape(rows, ng * g // blk, blk)[..., 0]  # blocks lie inside groups: all or none
    refine = closed_blk & (ub >= lb - tr.gap)
    tr.refined += float(refine.sum())
    tr.considered += float(closed_blk.expand_as(refine).sum())
    out[..., sl] = (closed_blk & ~refine).repeat_interleave(blk, dim=-1)
    return out


def refine_fraction(tr: Treatment) -> float | None:
    if isinstance(tr, FBLA) and tr.skip and tr.considered:
        return tr.refined / tr.considered
    return None


def make_treatment(name: str, sink: int = 128, gap: float = 20.0) -> Treatment:
    """bf16-harness | q8_0 | q4_0 | kivi-2 | kivi-4 | fbla-3+3-exact | fbla-3+3-skip | fbla-4+2-exact | fbla-4+2-skip
    | fbla6-ktok-vtok | fbla6-kch-vch | fbla6-ktok-vch (the axis alternatives; fbla6-kch-vtok = FBLA exact)"""
    if name == "bf16-harness":
        return BF16()
    if name in ("q8_0", "q4_0"):
        return GGML(name)
    if name.startswith("kivi-"):
        return KIVI(int(name.split("-")[1]))
    axes = {"ch": "channel", "tok": "token"}
    if name.startswith("fbla6-k"):
        k_axis, v_axis = name[len("fbla6-k"):].split("-v")
        return FBLAAxes(axes[k_axis], axes[v_axis], sink=sink)
    if name.startswith("fbla-"):
        _, mode, how = name.split("-")
        if how not in ("exact", "skip"):
            raise ValueError(f"unknown FBLA mode {how!r} in {name!r}")
        return FBLA(mode, sink, skip=how == "skip", gap=gap)
    raise ValueError(f"unknown treatment {name!r}")


def reference_attention(q, k, v, scaling):
    """Plain causal attention in float64 (tests)."""
    n_rep = q.shape[1] // k.shape[1]
    kr, vr = _repeat_kv(k.double(), n_rep), _repeat_kv(v.double(), n_rep)
    s = (q.double() @ kr.transpose(-1, -2)) * scaling
    t = q.shape[-2]
    s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ vr

