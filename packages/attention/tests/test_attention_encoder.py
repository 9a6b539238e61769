"""CPU (CI): the encoder's host emulation (the path append / encode take on CPU tensors).

- every closed group's codes, mins and scales are the torch fp32 re-implementation's bit for bit
  (attention_reference.encode_group), for both modes and head dims;
- the dequantized values are within half a quantization step of the input (float64; the 1e-6
  relative slack covers the fp32 rounding of min + scale * code);
- the sink and the filling group hold the input bits; append in steps (crossing group boundaries,
  one token at a time) gives the same records as one encode; per-sequence lengths.
"""

import pytest
import torch
from attention_reference import GROUP, encode_group

import mlops.attention as A


def kv(B, H, T, D, seed):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(B, H, T, D, generator=g)
    k[..., 5] = k[..., 5] * 10 + 4  # an outlier channel
    v = torch.randn(B, H, T, D, generator=g)
    return k.bfloat16(), v.bfloat16()


@pytest.mark.parametrize("mode", ["3+3", "4+2"])
@pytest.mark.parametrize("D", [64, 128])
def test_records_match_torch_encoder(mode, D):
    B, H, T = 2, 2, 3 * GROUP + 50
    k, v = kv(B, H, T, D, seed=D)
    c = A.encode(k, v, mode=mode)
    u = A.unpack_codes(c)
    closed = T // GROUP - 1
    assert c.slots == closed
    for b in range(B):
        for h in range(H):
            for s in range(closed):
                t0 = GROUP * (s + 1)
                kc, kmn, ks, vc, vmn, vs = encode_group(k[b, h, t0:t0 + GROUP], v[b, h, t0:t0 + GROUP])
                assert torch.equal(u["k_codes"][b, h, s], kc), (b, h, s)
                assert torch.equal(u["k_min"][b, h, s], kmn)
                assert torch.equal(u["k_scale"][b, h, s], ks)
                assert torch.equal(u["v_codes"][b, h, s], vc)
                assert torch.equal(u["v_min"][b, h, s], vmn)
                assert torch.equal(u["v_scale"][b, h, s], vs)
    # the coarse region is the top bits of the code
    fb = 3 if mode == "3+3" else 2
    assert torch.equal(u["k_coarse"], u["k_codes"] >> fb)


def fo_v_region(codes, D):
    """The V region's bytes packed from codes [128, D] by docs/attention.md "The V codes", written as the doc's
    loops (lane, tile, register, byte -> token, channel): the packing direction, apart from the reader in
    mlops.attention.reference."""
    words = [0] * (24 * D)
    for sl in range(4):
        for T in range(D // 16):
            for lane in range(32):
                gid, tig = lane // 4, lane % 4
                reg = [[int(codes[32 * sl + 16 * (j // 2) + 4 * tig + i, 16 * T + gid + 8 * (j % 2)]) for i in range(4)]
                       for j in range(4)]
                for v in range(3):
                    w = 3 * T + v
                    word = sum((reg[v][i] | ((reg[3][i] >> (2 * v)) & 3) << 6) << (8 * i) for i in range(4))
                    words[sl * 6 * D + (w // 4) * 128 + 4 * lane + w % 4] = word
    signed = [w - (1 << 32) if w >= 1 << 31 else w for w in words]  # int32 bit patterns, then little-endian bytes
    return torch.tensor(signed, dtype=torch.int32).view(torch.uint8)


@pytest.mark.parametrize("D", [64, 128])
def test_v_region_is_fragment_ordered(D):
    k, v = kv(1, 1, 2 * GROUP, D, seed=11)
    c = A.encode(k, v, mode="3+3")
    lay = A.record_layout(D, "3+3")
    region = c.records[0, 0, 0, lay["v_codes"]:lay["v_codes"] + 96 * D]
    vc = encode_group(k[0, 0, GROUP:], v[0, 0, GROUP:])[3]
    assert int(vc.max()) == 63 and int(vc.min()) == 0  # (per-token ranges: every byte's 8 bits get used)
    assert torch.equal(region, fo_v_region(vc, D))


def fo_k_region(fields, D, bits):
    """A K field region's bytes packed from fields [128, D] (coarse: code >> fine_bits; fine: code & (2^fine_bits - 1))
    by docs/attention.md "The K codes", written as the doc's loops (block, lane, register, byte -> token, channel; a
    lane's words, then the parts of 4, 2, 1 words a lane): the packing direction, apart from the reader in
    mlops.attention.reference."""
    S, nw = D // 32, D * bits // 64
    parts, left = [], nw
    for size in (4, 2, 1):
        while left >= size and (size == 4 or not any(p[1] == size for p in parts)):
            parts.append((nw - left, size))
            left -= size
    words = [0] * (8 * 32 * nw)
    for blk in range(8):
        for lane in range(32):
            gid, tig = lane // 4, lane % 4
            cw0 = 2 * S * tig
            reg = []  # reg[n][i]: the field of register n = 4 s + a, byte i
            for s_ in range(S):
                for a in range(4):
                    t = 16 * blk + gid + 8 * (a % 2)
                    reg.append([int(fields[t, 32 * (cw0 // 8) + 8 * i + cw0 % 8 + 2 * s_ + a // 2]) for i in range(4)])
            lw = []
            for v in range(nw):
                byte = []
                for i in range(4):
                    if bits == 4:
                        x = reg[2 * v][i] | reg[2 * v + 1][i] << 4
                    elif bits == 2:
                        x = sum(reg[4 * v + u][i] << (2 * u) for u in range(4))
                    else:
                        R, u = 8 * (v // 3), v % 3
                        top = [reg[R + 6][i] & 3, (reg[R + 6][i] >> 2) | (reg[R + 7][i] & 1) << 1, reg[R + 7][i] >> 1][u]
                        x = reg[R + 2 * u][i] | reg[R + 2 * u + 1][i] << 3 | top << 6
                    byte.append(x)
                lw.append(sum(x << (8 * i) for i, x in enumerate(byte)))
            for ps, size in parts:
                for v in range(ps, ps + size):
                    words[blk * 32 * nw + 32 * ps + lane * size + (v - ps)] = lw[v]
    signed = [w - (1 << 32) if w >= 1 << 31 else w for w in words]
    return torch.tensor(signed, dtype=torch.int32).view(torch.uint8)


@pytest.mark.parametrize("mode", ["3+3", "4+2"])
@pytest.mark.parametrize("D", [64, 128])
def test_k_regions_are_fragment_ordered(mode, D):
    k, v = kv(1, 1, 2 * GROUP, D, seed=13)
    c = A.encode(k, v, mode=mode)
    lay = A.record_layout(D, mode)
    cb, fb = lay["coarse_bits"], lay["fine_bits"]
    kc = encode_group(k[0, 0, GROUP:], v[0, 0, GROUP:])[0]
    assert int(kc.max()) == 63 and int(kc.min()) == 0  # (per-channel ranges: every field's bits get used)
    rec = c.records[0, 0, 0]
    assert lay["k_fine"] == lay["k_coarse"] + 16 * cb * D
    assert torch.equal(rec[lay["k_coarse"]:lay["k_fine"]], fo_k_region(kc >> fb, D, cb))
    assert torch.equal(rec[lay["k_fine"]:lay["k_fine"] + 16 * fb * D], fo_k_region(kc & ((1 << fb) - 1), D, fb))


@pytest.mark.parametrize("mode", ["3+3", "4+2"])
def test_dequantized_within_half_a_step(mode):
    B, H, T, D = 1, 2, 4 * GROUP + 7, 128
    k, v = kv(B, H, T, D, seed=3)
    c = A.encode(k, v, mode=mode)
    K, V = A.dequantize(c, torch.float64)
    u = A.unpack_codes(c)
    for s in range(c.slots):
        t0 = GROUP * (s + 1)
        ks = u["k_scale"][0, :, s].double()[:, None, :]  # [H, 1, D]
        vs = u["v_scale"][0, :, s].double()[:, :, None]  # [H, 128, 1]
        ek = (K[0, :, t0:t0 + GROUP] - k[0, :, t0:t0 + GROUP].double()).abs()
        ev = (V[0, :, t0:t0 + GROUP] - v[0, :, t0:t0 + GROUP].double()).abs()
        assert (ek <= ks * 0.5 * (1 + 1e-5) + 1e-6 * k[0, :, t0:t0 + GROUP].double().abs()).all()
        assert (ev <= vs * 0.5 * (1 + 1e-5) + 1e-6 * v[0, :, t0:t0 + GROUP].double().abs()).all()
    # BF16 tokens are exact
    assert torch.equal(K[0, :, :GROUP], k[0, :, :GROUP].double())
    t0 = GROUP * (c.slots + 1)
    assert torch.equal(V[0, :, t0:T], v[0, :, t0:T].double())
    assert (K[0, :, T:] == 0).all()


@pytest.mark.parametrize("steps", [[1] * 300, [100, 28, 1, 127, 129, 255, 3], [256, 256, 11]])
def test_append_in_steps_equals_encode(steps):
    B, H, D = 2, 2, 64
    T = sum(steps)
    k, v = kv(B, H, T, D, seed=len(steps))
    c = A.empty(B, H, T + 5, D, "3+3", device="cpu")
    t = 0
    for n in steps:
        A.append(c, k[:, :, t:t + n], v[:, :, t:t + n])
        t += n
    e = A.encode(k, v, capacity=T + 5)
    assert c.lengths.tolist() == [T] * B == e.lengths.tolist()
    assert torch.equal(c.records, e.records)
    assert torch.equal(c.sink_k, e.sink_k) and torch.equal(c.sink_v, e.sink_v)
    filled = T - GROUP * (T // GROUP) if T >= GROUP else 0  # rows of the filling group (others: unspecified)
    assert torch.equal(c.tail_k[:, :, :filled], e.tail_k[:, :, :filled])
    assert torch.equal(c.tail_v[:, :, :filled], e.tail_v[:, :, :filled])
    K1, V1 = A.dequantize(c)
    K2, V2 = A.dequantize(e)
    assert torch.equal(K1, K2) and torch.equal(V1, V2)


def test_per_sequence_lengths():
    B, H, T, D = 3, 1, 600, 64
    k, v = kv(B, H, T, D, seed=9)
    lens = [600, 0, 257]
    c = A.encode(k, v, lens, capacity=700, mode="4+2")
    assert c.lengths.tolist() == lens
    for b, L in enumerate(lens):
        one = A.encode(k[b:b + 1, :, :L].contiguous(), v[b:b + 1, :, :L].contiguous(), capacity=700, mode="4+2")
        Kb, Vb = A.dequantize(c)
        K1, V1 = A.dequantize(one)
        assert torch.equal(Kb[b:b + 1], K1) and torch.equal(Vb[b:b + 1], V1), b


def test_strided_input():
    """k / v as views of a [B, T, H, D] tensor (head_dim contiguous, other strides arbitrary)."""
    B, H, T, D = 2, 2, 300, 64
    k, v = kv(B, H, T, D, seed=4)
    kt, vt = k.transpose(1, 2).contiguous().transpose(1, 2), v.transpose(1, 2).contiguous().transpose(1, 2)
    assert not kt.is_contiguous()
    a, b = A.encode(k, v), A.encode(kt, vt)
    assert torch.equal(a.records, b.records) and torch.equal(a.sink_k, b.sink_k)
