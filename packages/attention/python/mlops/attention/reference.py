"""Reference pieces written in torch, independent of the C++ code: the values a cache holds
(dequantize), softmax attention over them in float64 (reference_decode: the fake-quant path for
quality measurements) and fake_quantize (K/V through the cache and back)."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch

from ._ops import GROUP, FBLACache, _fail, encode, record_layout

__all__ = ["dequantize", "reference_decode", "fake_quantize", "unpack_codes"]


def _words(region: torch.Tensor) -> torch.Tensor:
    """uint8 [..., 4 n] -> int64 [..., n] little-endian uint32 words."""
    b = region.to(torch.int64)
    return b[..., 0::4] | (b[..., 1::4] << 8) | (b[..., 2::4] << 16) | (b[..., 3::4] << 24)


def _fo_k_fields(region: torch.Tensor, D: int, bits: int) -> torch.Tensor:
    """uint8 [..., 16 bits D] fragment-ordered K fields of a group (coarse: bits = coarse_bits, the codes' top bits;
    fine: bits = fine_bits, the low bits) -> int64 [..., 128, D] (docs/attention.md, "The K codes"): token t,
    channel d = 32 w + 8 i + k sit in block t // 16, lane 4 (t % 8) + tig, register n = 4 s + 2 j + (t // 8) % 2, byte i,
    where code word 8 w + k = 2 S tig + 2 s + j (S = D / 32); a lane's words of a block hold its registers' fields
    (4 bits: word n // 2, bits 4 (n % 2); 2 bits: word n // 4, bits 2 (n % 4); 3 bits: words 3 h + v of half h = n // 8
    hold registers 8 h + 2 v, + 1 in bits 0 - 2, 3 - 5, registers 8 h + 6, + 7 in the three words' bits 6 - 7), stored
    block by block in parts of 4, 2, 1 words a lane, each [lane][word]."""
    dev = region.device
    words = _words(region)
    S, nw = D // 32, D * bits // 64
    n4 = nw & ~3
    n2 = (nw - n4) & ~1
    t = torch.arange(GROUP, device=dev)[:, None]
    d = torch.arange(D, device=dev)[None, :]
    cw, i = 8 * (d // 32) + d % 8, (d // 8) % 4
    tig, rem = cw // (2 * S), cw % (2 * S)
    blk, lane = t // 16, 4 * (t % 8) + tig
    n = 4 * (rem // 2) + 2 * (rem % 2) + (t // 8) % 2

    def bits_at(v, shift, width):  # [..., 128, D]: `width` bits from bit `shift` of byte i of the lane's word v
        ps = torch.where(v < n4, v & ~3, torch.where(v < n4 + n2, torch.full_like(v, n4), torch.full_like(v, n4 + n2)))
        psz = torch.where(v < n4, 4, torch.where(v < n4 + n2, 2, 1))
        idx = blk * 32 * nw + 32 * ps + lane * psz + (v - ps)
        w = words[..., idx.flatten()].reshape(*words.shape[:-1], GROUP, D)
        return (w >> (8 * i + shift)) & ((1 << width) - 1)

    if bits == 4:
        return bits_at(n // 2, 4 * (n % 2), 4)
    if bits == 2:
        return bits_at(n // 4, 2 * (n % 4), 2)
    h, r = n // 8, n % 8
    low = bits_at(3 * h + torch.clamp(r, max=5) // 2, 3 * (r % 2), 3)
    r6 = bits_at(3 * h, 6, 2) | (bits_at(3 * h + 1, 6, 1) << 2)
    r7 = bits_at(3 * h + 1, 7, 1) | (bits_at(3 * h + 2, 6, 2) << 1)
    return torch.where(r < 6, low, torch.where(r == 6, r6, r7))


def _fo_v_codes(region: torch.Tensor, D: int) -> torch.Tensor:
    """uint8 [..., 96 D] fragment-ordered V codes of a group -> int64 [..., 128, D] (docs/attention.md, "The V
    codes"): token t, channel d sit in slice t // 32, lane 4 (d % 8) + (t % 16) // 4, tile d // 16,
    register j = 2 ((t // 16) % 2) + (d // 8) % 2, byte t % 4; word v (0, 1, 2) of a tile holds register v's code in
    bits 0 - 5 of a byte and bits 2v, 2v + 1 of register 3's in bits 6 - 7; lane L's words 3 T + v of a slice at
    uint32 index slice * 6 D + ((3 T + v) // 4) * 128 + 4 L + (3 T + v) % 4."""
    dev = region.device
    words = _words(region)  # [..., 24 D]
    t = torch.arange(GROUP, device=dev)[:, None]
    d = torch.arange(D, device=dev)[None, :]
    sl, tt = t // 32, t % 32
    lane, byte = 4 * (d % 8) + (tt % 16) // 4, tt % 4
    T, j = d // 16, 2 * (tt // 16) + (d // 8) % 2

    def word(v):  # [..., 128, D]: word v of the (t, d) tile
        w = 3 * T + v
        return words[..., (sl * 6 * D + (w // 4) * 128 + 4 * lane + w % 4).flatten()].reshape(*words.shape[:-1], GROUP, D)

    w = [word(v) for v in range(3)]
    low = torch.where(j == 0, w[0], torch.where(j == 1, w[1], w[2])) >> (8 * byte) & 63
    r3 = sum(((w[v] >> (8 * byte + 6)) & 3) << (2 * v) for v in range(3))
    return torch.where(j < 3, low, r3)


def unpack_codes(cache: FBLACache) -> dict:
    """The parts of every record: k_min / k_scale float32 [B, H, S, D], v_min / v_scale [B, H, S, 128] (stored as
    bf16 since record version 4, exact as float32), k_codes / v_codes int64 [B, H, S, 128, D] (6-bit), k_coarse
    [B, H, S, 128, D] (code >> fine_bits)."""
    lay = record_layout(cache.head_dim, cache.mode)
    D, cb, fb = cache.head_dim, lay["coarse_bits"], lay["fine_bits"]
    r = cache.records
    B, H, S, _ = r.shape

    def bf16_array(off, n):  # a bf16 array of the record, as float32
        return r[..., off:off + 2 * n].contiguous().view(torch.bfloat16).float()

    coarse = _fo_k_fields(r[..., lay["k_coarse"]:lay["k_coarse"] + 16 * cb * D], D, cb)
    fine = _fo_k_fields(r[..., lay["k_fine"]:lay["k_fine"] + 16 * fb * D], D, fb)
    return {"k_min": bf16_array(lay["k_min"], D), "k_scale": bf16_array(lay["k_scale"], D),
            "v_min": bf16_array(lay["v_min"], GROUP), "v_scale": bf16_array(lay["v_scale"], GROUP), "k_coarse": coarse,
            "k_codes": (coarse << fb) | fine,
            "v_codes": _fo_v_codes(r[..., lay["v_codes"]:lay["v_codes"] + 96 * D], D)}


def dequantize(cache: FBLACache, dtype: torch.dtype = torch.float32,
               lengths: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(K, V) [batch, kv_heads, capacity, head_dim] in dtype: the values decode attends to (BF16
    tokens as stored, closed groups as k_min + k_scale * code, computed in float64), zeros past the
    lengths (default the cache's)."""
    B, H, cap, D = cache.batch, cache.kv_heads, cache.capacity, cache.head_dim
    dev = cache.records.device
    lens = (cache.lengths if lengths is None else lengths).cpu().tolist()
    K = torch.zeros((B, H, cap, D), dtype=torch.float64, device=dev)
    V = torch.zeros_like(K)
    if cache.slots:
        u = unpack_codes(cache)
        kq = u["k_min"].double()[..., None, :] + u["k_scale"].double()[..., None, :] * u["k_codes"].double()
        vq = u["v_min"].double()[..., :, None] + u["v_scale"].double()[..., :, None] * u["v_codes"].double()
    for b, L in enumerate(lens):
        if L < 0 or L > cache.capacity:
            _fail("lengths", f"lengths[{b}] = {L}: expected 0 ... capacity {cache.capacity}")
        ns = min(L, GROUP)
        K[b, :, :ns] = cache.sink_k[b, :, :ns].double()
        V[b, :, :ns] = cache.sink_v[b, :, :ns].double()
        closed = L // GROUP - 1 if L >= 2 * GROUP else 0
        if closed:
            K[b, :, GROUP:GROUP * (closed + 1)] = kq[b, :, :closed].reshape(H, closed * GROUP, D)
            V[b, :, GROUP:GROUP * (closed + 1)] = vq[b, :, :closed].reshape(H, closed * GROUP, D)
        if L >= GROUP:
            t0 = GROUP * (closed + 1)
            K[b, :, t0:L] = cache.tail_k[b, :, :L - t0].double()
            V[b, :, t0:L] = cache.tail_v[b, :, :L - t0].double()
    return K.to(dtype), V.to(dtype)


def reference_decode(q: torch.Tensor, cache: FBLACache, scale: Optional[float] = None,
                     lengths: Optional[torch.Tensor] = None) -> torch.Tensor:
    """float64 [batch, q_heads, head_dim]: softmax(scale q . K) V over dequantize(cache), q head h
    reading kv head h // (q_heads // kv_heads). What decode computes, without its int8 q and fp32
    sums (the tests bound the difference)."""
    B, Hq, D = q.shape
    G = Hq // cache.kv_heads
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    K, V = dequantize(cache, torch.float64, lengths)
    lens = (cache.lengths if lengths is None else lengths).cpu().tolist()
    out = torch.zeros((B, Hq, D), dtype=torch.float64, device=K.device)
    qd = q.to(K.device).double()
    for b, L in enumerate(lens):
        if L == 0:
            continue
        k = K[b, :, :L].repeat_interleave(G, dim=0)  # [Hq, L, D]
        v = V[b, :, :L].repeat_interleave(G, dim=0)
        s = torch.einsum("hd,hld->hl", qd[b], k) * scale
        out[b] = torch.einsum("hl,hld->hd", torch.softmax(s, dim=-1), v)
    return out


def fake_quantize(k: torch.Tensor, v: torch.Tensor, mode: str = "3+3") -> Tuple[torch.Tensor, torch.Tensor]:
    """K and V (bf16 [batch, kv_heads, T, head_dim]) through an FBLA cache and back: float32 tensors of
    the same shape holding what decode would attend to (the sink and the filling group exact)."""
    cache = encode(k, v, mode=mode)
    K, V = dequantize(cache)
    return K, V
