"""CPU (CI): the host emulation of apply_rope (the arithmetic the GPU runs, bit for bit) against
transformers' apply_rotary_pos_emb (Llama, GPT-J, Qwen2-VL mrope) and a float64 reference;
layouts, head counts, partial rotary, in place / out of place; out-of-range positions; bad
input raising named errors before anything runs; torch.library registration."""

import pytest
import torch
from mlops_testing import randn, ulp_diff

import mlops.positional as P
from positional_reference import assert_within_rounding, cache_from_cos_sin, hf_cos_sin, rope_ref64

transformers = pytest.importorskip("transformers")
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb  # noqa: E402

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _inv_freq(rotary_dim, theta=10000.0):
    return 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.int64).float() / rotary_dim))


def _hf_rotate(q, cos, sin, rotary_dim):
    """transformers' Llama apply_rotary_pos_emb on [T, H, D] (partial rotary as Phi / NeoX split it)."""
    x = q.transpose(0, 1)[None]  # [1, H, T, D]
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    r, _ = apply_rotary_pos_emb(rot, rot, cos[None].to(q.dtype), sin[None].to(q.dtype), unsqueeze_dim=1)
    return torch.cat((r, rest), -1)[0].transpose(0, 1)


def _bound_vs_hf(x, rotary_dim, dtype, scaling=1.0):
    """|ours - HF| per element. HF rounds cos/sin to the dtype and each product and the sum to it
    (three roundings of 2^-p relative, p = 8 bf16 / 11 fp16 / 24 fp32, on |x| + |y|); ours rounds
    once. 4 * 2^-p * (|x| + |y|) * scaling covers both with a margin."""
    p = {torch.bfloat16: 8, torch.float16: 11, torch.float32: 24}[dtype]
    xf = x.float()
    half = rotary_dim // 2
    mag = xf.abs().clone()
    pair = xf[..., :half].abs() + xf[..., half:rotary_dim].abs()
    mag[..., :half], mag[..., half:rotary_dim] = pair, pair
    return 4 * 2.0 ** -p * mag * scaling + 1e-30


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rotary_dim", [128, 64])
def test_vs_transformers_and_float64(dtype, rotary_dim):
    T, D = 96, 128
    g = torch.Generator().manual_seed(3)
    q = randn((T, 8, D), dtype, seed=1)
    k = randn((T, 2, D), dtype, seed=2)
    pos = torch.randint(0, 8192, (T,), generator=g)
    f = _inv_freq(rotary_dim)
    cache = P.build_cos_sin_cache(f, 8192)
    qo, ko = P.apply_rope(q, k, pos, cache)
    cos, sin = hf_cos_sin(f, pos)
    for x, o in ((q, qo), (k, ko)):
        hf = _hf_rotate(x, cos, sin, rotary_dim)
        assert bool(((o.float() - hf.float()).abs() <= _bound_vs_hf(x, rotary_dim, dtype)).all())
        ref = rope_ref64(x, pos, f, 1.0, rotary_dim)
        assert_within_rounding(o, ref, x, rotary_dim)
        # and in practice: bf16 / fp16 outputs are the correctly rounded float64 result but for a
        # few near-ties or cancellations
        if dtype != torch.float32:
            assert float((ulp_diff(o, ref.to(dtype)) > 0).float().mean()) < 0.01
        assert torch.equal(o[..., rotary_dim:], x[..., rotary_dim:])  # the pass-through part


@pytest.mark.parametrize("rotary_dim", [128, 96])
def test_fp32_with_transformers_cos_sin_is_bit_exact(rotary_dim):
    """The rotation is HF's arithmetic: given HF's own fp32 cos/sin, fp32 q and k come out with HF's bits."""
    T = 64
    q, k = randn((T, 4, 128), torch.float32, seed=4), randn((T, 1, 128), torch.float32, seed=5)
    pos = torch.randperm(T)
    f = _inv_freq(rotary_dim, 500000.0)
    cos, sin = hf_cos_sin(f, pos, 1.0)
    cache = cache_from_cos_sin(cos, sin, pos, T)
    qo, ko = P.apply_rope(q, k, pos, cache)
    assert torch.equal(qo, _hf_rotate(q, cos, sin, rotary_dim))
    assert torch.equal(ko, _hf_rotate(k, cos, sin, rotary_dim))


def test_gptj_interleaved_vs_transformers():
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_apply
    from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions

    T, H, D, rd = 40, 4, 256, 64  # GPT-J-6B: head_dim 256, rotary_dim 64
    emb = create_sinusoidal_positions(2048, rd)  # [pos, sin | cos]
    cache = torch.cat((emb[:, rd // 2:], emb[:, : rd // 2]), -1).contiguous()  # ours: cos | sin
    x = randn((1, T, H, D), torch.float32, seed=6)
    pos = torch.randint(0, 2048, (1, T), generator=torch.Generator().manual_seed(2))
    sincos = emb[pos]
    sin, cos = sincos[..., : rd // 2], sincos[..., rd // 2:]
    hf = torch.cat((gptj_apply(x[..., :rd], sin, cos), x[..., rd:]), -1)
    mine, _ = P.apply_rope(x, None, pos, cache, interleaved=True)
    assert torch.equal(mine, hf)
    xb = x.to(torch.bfloat16)
    mine_b, _ = P.apply_rope(xb, None, pos, cache, interleaved=True)
    ref = rope_ref64(xb[0], pos[0], 1.0 / (10000 ** (torch.arange(0, rd, 2, dtype=torch.int64) / rd)).float(), 1.0,
                     rd, interleaved=True)
    assert_within_rounding(mine_b[0], ref, xb[0], rd, interleaved=True)


@pytest.mark.filterwarnings("ignore")
def test_mrope_vs_qwen2_vl():
    """Qwen2-VL: its rotary module recomposes cos/sin by mrope_section, then apply_rotary_pos_emb.
    A cache holding torch's fp32 cos/sin for every position gives its bits exactly (fp32); ours
    (build_cos_sin_cache) stays within the rounding bound, and on the fly == cache."""
    from transformers import Qwen2VLConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb as qwen_apply

    d = dict(hidden_size=1536, num_attention_heads=12, max_position_embeddings=32768,
             rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1000000.0})
    cfg = Qwen2VLConfig(text_config={**d, "rope_parameters": dict(d["rope_parameters"])})
    hf_rope = Qwen2VLRotaryEmbedding(cfg.text_config)
    f, scale, rc = P.rope_parameters(d)
    T, N = 50, 4000
    pos = torch.randint(0, N, (3, 1, T), generator=torch.Generator().manual_seed(7))
    q = randn((1, 12, T, 128), torch.float32, seed=8)
    k = randn((1, 2, T, 128), torch.float32, seed=9)
    cos, sin = hf_rope(q, pos)
    qh, kh = qwen_apply(q, k, cos, sin)
    ang = torch.arange(N)[:, None].float() * f
    torch_cache = torch.cat((ang.cos(), ang.sin()), -1)
    qt, kt = P.apply_rope(q, k, pos, torch_cache, mrope_section=rc.mrope_section, head_first=True)
    assert torch.equal(qt, qh) and torch.equal(kt, kh)
    cache = P.build_cos_sin_cache(f, N, scale)
    qo, ko = P.apply_rope(q, k, pos, cache, mrope_section=rc.mrope_section, head_first=True)
    assert bool(((qo - qh).abs() <= _bound_vs_hf(q.transpose(1, 2), 128, torch.float32).transpose(1, 2)).all())
    qf, _ = P.apply_rope(q, k, pos, inv_freq=f, mrope_section=rc.mrope_section, head_first=True)
    assert torch.equal(qf, qo)
    ref = rope_ref64(q[0].transpose(0, 1), pos[:, 0, :], f, 1.0, 128, section=rc.mrope_section)
    assert float((qo[0].transpose(0, 1).double() - ref).abs().max()) < 1e-5


def _fused_qkv(T, hq, hk, D, dtype, seed):
    qkv = randn((T, (hq + 2 * hk) * D), dtype, seed=seed)
    q = qkv[:, : hq * D].view(T, hq, D)
    k = qkv[:, hq * D:(hq + hk) * D].view(T, hk, D)
    return qkv, q, k


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("hq,hk,D,rd", [(32, 8, 128, 128), (16, 1, 64, 64), (4, 4, 256, 128), (6, 2, 80, 32),
                                        (3, 1, 96, 66)])
def test_layouts_agree(dtype, interleaved, hq, hk, D, rd):
    """[T, H, D] vs [B, S, H, D] vs [B, H, S, D] vs fused-qkv views, in place vs out of place,
    int32 vs int64 positions, cache vs on the fly: all the same bits."""
    B, S = 2, 24
    T = B * S
    qkv, q, k = _fused_qkv(T, hq, hk, D, dtype, seed=hq + D)
    pos = torch.randint(0, 5000, (T,), generator=torch.Generator().manual_seed(D))
    f = _inv_freq(rd)
    cache = P.build_cos_sin_cache(f, 5000)
    ref_q, ref_k = P.apply_rope(q.contiguous(), k.contiguous(), pos, cache, interleaved=interleaved)
    ref = rope_ref64(q, pos, f, 1.0, rd, interleaved=interleaved)
    assert_within_rounding(ref_q, ref, q, rd, interleaved=interleaved)
    # [B, S, H, D]
    a, b = P.apply_rope(q.contiguous().view(B, S, hq, D), k.contiguous().view(B, S, hk, D), pos.view(B, S).int(),
                        cache, interleaved=interleaved)
    assert torch.equal(a.view(T, hq, D), ref_q) and torch.equal(b.view(T, hk, D), ref_k)
    # [B, H, S, D]
    qh = q.view(B, S, hq, D).transpose(1, 2).contiguous()
    kh = k.view(B, S, hk, D).transpose(1, 2).contiguous()
    a, b = P.apply_rope(qh, kh, pos.view(B, S), cache, interleaved=interleaved, head_first=True)
    assert torch.equal(a.transpose(1, 2).reshape(T, hq, D), ref_q)
    assert torch.equal(b.transpose(1, 2).reshape(T, hk, D), ref_k)
    # fused qkv, in place, on the fly; v untouched
    v_before = qkv[:, (hq + hk) * D:].clone()
    a, b = P.apply_rope(q, k, pos, inv_freq=f, interleaved=interleaved, inplace=True)
    assert a.data_ptr() == q.data_ptr()
    assert torch.equal(q, ref_q) and torch.equal(k, ref_k)
    assert torch.equal(qkv[:, (hq + hk) * D:], v_before)


def test_q_only_and_mqa():
    q = randn((10, 8, 128), torch.bfloat16, seed=11)
    cache = P.build_cos_sin_cache(_inv_freq(128), 100)
    pos = torch.arange(10)
    a, none = P.apply_rope(q, None, pos, cache)
    assert none is None
    b, k1 = P.apply_rope(q, q[:, :1].contiguous(), pos, cache)
    assert torch.equal(a, b) and torch.equal(k1, a[:, :1])


@pytest.mark.parametrize("inplace", [False, True])
def test_out_of_range_positions_flag_and_leave_tokens_unrotated(inplace):
    T = 12
    q = randn((T, 4, 128), torch.bfloat16, seed=12)
    k = randn((T, 2, 128), torch.bfloat16, seed=13)
    cache = P.build_cos_sin_cache(_inv_freq(128), 64)
    pos = torch.arange(T) * 5  # 0 ... 55: in range
    pos[3], pos[7], pos[9] = 64, -1, 1 << 40
    flag = torch.zeros(1, dtype=torch.int32)
    q0, k0 = q.clone(), k.clone()
    qo, ko = P.apply_rope(q, k, pos, cache, inplace=inplace, out_of_range=flag)
    assert int(flag) == 1
    good = torch.ones(T, dtype=torch.bool)
    good[[3, 7, 9]] = False
    assert torch.equal(qo[~good], q0[~good]) and torch.equal(ko[~good], k0[~good])
    rq, rk = P.apply_rope(q0[good], k0[good], pos[good], cache)
    assert torch.equal(qo[good], rq) and torch.equal(ko[good], rk)
    flag.zero_()
    P.apply_rope(q0, k0, pos[good].repeat(2)[:T], cache, out_of_range=flag)
    assert int(flag) == 0
    # max_positions below the cache's rows bounds the positions too
    P.apply_rope(q0, k0, torch.full((T,), 40), cache, max_positions=32, out_of_range=flag)
    assert int(flag) == 1


def test_mrope_out_of_range_row_flags():
    q = randn((6, 2, 128), torch.float32, seed=14)
    cache = P.build_cos_sin_cache(_inv_freq(128), 32)
    pos = torch.full((3, 6), 5, dtype=torch.int64)
    pos[2, 4] = 32  # only the width row of token 4 is out of range
    flag = torch.zeros(1, dtype=torch.int32)
    out, _ = P.apply_rope(q, None, pos, cache, mrope_section=[16, 24, 24], out_of_range=flag)
    assert int(flag) == 1
    assert torch.equal(out[4], q[4])  # left unrotated
    assert not torch.equal(out[3], q[3])  # the others rotate



@pytest.mark.parametrize("call,arg", [
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, rotary_dim=63), "rotary_dim"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, rotary_dim=130), "rotary_dim"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c[:, :64].contiguous(), rotary_dim=128), "cos_sin_cache"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c[:, :64]), "cos_sin_cache"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, rotary_dim=64), "cos_sin_cache"),
    (lambda q, k, p, c: P.apply_rope(q[..., :32], None, p, c[:, :32]), "q"),
    (lambda q, k, p, c: P.apply_rope(q, k[..., :64], p, c), "k"),
    (lambda q, k, p, c: P.apply_rope(q, k.half(), p, c), "k"),
    (lambda q, k, p, c: P.apply_rope(q.int(), k, p, c), "q"),
    (lambda q, k, p, c: P.apply_rope(q, k, p.float(), c), "positions"),
    (lambda q, k, p, c: P.apply_rope(q, k, p[:-1], c), "positions"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c.double()), "cos_sin_cache"),
    (lambda q, k, p, c: P.apply_rope(q, k, p), "cos_sin_cache"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, inv_freq=torch.ones(10), rotary_dim=128), "inv_freq"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, mrope_section=[16, 16, 16]), "mrope_section"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, mrope_section=[16, 24, 24]), "positions"),
    (lambda q, k, p, c: P.apply_rope(q.transpose(0, 2), k, p, c), "q"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, out_of_range=torch.zeros(1)), "out_of_range"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, out_q=torch.empty(3)), "out_q"),
    (lambda q, k, p, c: P.apply_rope(q, k, p, c, max_positions=10 ** 6), "max_positions"),
    (lambda q, k, p, c: P.apply_rope(q, k, p.to("meta"), c), "positions"),
])
def test_bad_input_raises_named_error(call, arg):
    q = randn((5, 4, 128), torch.bfloat16, seed=15)
    k = randn((5, 2, 128), torch.bfloat16, seed=16)
    pos = torch.arange(5)
    cache = P.build_cos_sin_cache(_inv_freq(128), 16)
    q0 = q.clone()
    with pytest.raises(ValueError, match=rf"^{arg}:"):
        call(q, k, pos, cache)
    assert torch.equal(q, q0)  # nothing ran


def test_c_api_validation_reached_through_bindings():
    """The C API validates on its own (C callers have no Python checks): a call straight to the
    binding with an odd rotary_dim fails with the C message naming the argument."""
    from mlops.positional._native import C

    q = torch.zeros(2, 1, 128)
    pos = torch.zeros(2, dtype=torch.int64)
    f = torch.ones(64)
    with pytest.raises(ValueError, match="^rotary_dim:"):
        C.run(False, 0, 1, 2, 128, 63, 0, 3, q.data_ptr(), q.data_ptr(), 1, 0, 128, 128, 0, 128, 128,
              0, 0, 0, 0, 0, 0, 0, 0, 0, 8, pos.data_ptr(), 0, 0, 0, 0, 0, 100, f.data_ptr(), 1.0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="^head_dim:"):
        C.run(False, 0, 1, 2, 32, 32, 0, 3, q.data_ptr(), q.data_ptr(), 1, 0, 128, 128, 0, 128, 128,
              0, 0, 0, 0, 0, 0, 0, 0, 0, 8, pos.data_ptr(), 0, 0, 0, 0, 0, 100, f.data_ptr(), 1.0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="^variant:"):  # an id past the table
        C.run(False, 0, 1, 2, 128, 128, 0, 3, q.data_ptr(), q.data_ptr(), 1, 0, 128, 128, 0, 128, 128,
              0, 0, 0, 0, 0, 0, 0, 0, 0, 8, pos.data_ptr(), 0, 0, 0, 0, 0, 100, f.data_ptr(), 1.0, 0, 0, 0,
              len(P.rope_variants()) + 1)


def test_variant_table_and_names():
    """The variants as data: ids 1 ... n, step2 first; a name runs on the CPU (the host emulation,
    whatever the variant) and an unknown one is a named error; each variant's planner split keeps
    early4 / early8's items a thread within what they hold in registers."""
    from mlops.positional._native import C

    vs = P.rope_variants()
    assert [v["id"] for v in vs] == list(range(1, len(vs) + 1)) and vs[0]["name"] == "step2"
    # pipe4 / pipe8 lost in run 14; early2x5 / x6: early2 at 5 / 6 CTAs an SM (round-B candidates);
    # stage4 / stage8 / stage4x6: q / k staged in shared memory by cp.async (session 4, round A);
    # flat2 / flat2p / flat4p: one grid-stride list of items, no shared memory (session 4, round B)
    # dec / dec2 / dec4: a warp a (token, head group), no CTA barrier (session 5, round A); decx5: dec at 5
    # CTAs an SM on the direct cache path (session 5, round B)
    flat = ["flat2", "flat2p", "flat4p"]
    dec = {"dec": 4, "dec2": 8, "dec4": 14, "decx5": 4}  # heads a warp at 40 heads of 8 chunks (rope_launch.h's dec_heads)
    assert [v["name"] for v in vs] == ["step2", "early2", "early4", "early8", "early2x5", "early2x6", "stage4", "stage8",
                                       "stage4x6", *flat, *dec]
    assert not any(v["pipe"] for v in vs)
    for v in vs:
        tpc, hpc, used = C.plan(4096, 40, 128, 132, v["id"])
        if v["name"] in dec:  # 8 tokens a CTA (a warp each), the warp's heads; the same at every T
            assert (used, tpc, hpc) == (v["id"], 8, dec[v["name"]]) == (v["id"], *C.plan(1, 40, 128, 132, v["id"])[:2])
            continue
        assert used == v["id"] and hpc == 40 and tpc >= 1
        if v["early"] and v["items_per_thread"] >= 4 and v["name"] not in flat:
            assert tpc * 40 * 8 <= v["items_per_thread"] * 256, (v, tpc)
        tpc, hpc, used = C.plan(1, 40, 128, 132, v["id"])
        # the flat kernels have no token / head blocks: one grid row of every head
        assert (tpc, hpc) == ((1, 40) if v["name"] in flat else (1, 16))
    q = randn((5, 2, 128), torch.bfloat16, seed=40)
    pos = torch.arange(5)
    cache = P.build_cos_sin_cache(torch.ones(64), 8)
    want, _ = P.apply_rope(q, None, pos, cache)
    for v in vs:
        got, _ = P.apply_rope(q, None, pos, cache, variant=v["name"])
        assert torch.equal(got, want)
    with pytest.raises(ValueError, match="^variant:"):
        P.apply_rope(q, None, pos, cache, variant="fastest")


def test_planner_picks_the_measured_fastest():
    """The planner's kernel and split (H200 run 27, 32 + 8 heads x 128 bf16, 132 SMs, CUDA events / CUPTI
    kernel time): from the cache dec (8 tokens a CTA, 4 heads a warp) while its grid is at most 10 waves
    (one item a lane at 4 CTAs an SM: T <= 4224 here; decx5 past decode since run 29):
    T = 1 5.76 / 1.82 us against early2's 6.40 / 2.40,
    T = 32 6.05 / 2.11, T = 4096 (9.7 waves) 25.92 / 22.06 against early2x5's 26.38 / 22.34, but T = 32768
    221.5 against 173.2, so early2x5 at 3 tokens a CTA above. On the fly dec up to 8 tokens (one CTA of
    tokens; T = 1 6.10 / 2.35 against stage4's 6.43 / 2.56), stage4 for the rest of decode (T = 32 a tie:
    6.53 / 2.69 against dec's 6.59 / 2.66; run 20), early2x5 at 4 tokens a CTA above (T = 32768 169.65
    against dec's 222.35). mlops_rope_plan_variant(0) is the cache path."""
    from mlops.positional._native import C

    ids = {v["name"]: v["id"] for v in P.rope_variants()}
    dec, decx5 = (8, 4, ids["dec"]), (8, 4, ids["decx5"])
    for T in (1, 32, 211):  # decode: 211 x 320 items fill 2 CTAs of 256 an SM
        assert C.plan(T, 40, 128, 132, 0, False) == dec
        assert C.plan(T, 40, 128, 132, 0) == dec
    # past decode, decx5 (run 29, the probe alone on the machine: T = 4096 23.65 / 21.12 us against dec's
    # 25.60 / 22.14) up to dec's wave bound
    for T in (212, 4096, 4224):  # 4224 x 320 items = 10 waves of 132 x 4 x 256 lanes
        assert C.plan(T, 40, 128, 132, 0, False) == decx5
        assert C.plan(T, 40, 128, 132, 0) == decx5
    for T in (4225, 32768):
        assert C.plan(T, 40, 128, 132, 0, False) == (3, 40, ids["early2x5"])
        assert C.plan(T, 40, 128, 132, 0) == (3, 40, ids["early2x5"])
    # the waves scale with the SMs: 114 SMs give 10 waves at 3648 tokens
    assert C.plan(3648, 40, 128, 114, 0) == decx5 and C.plan(3649, 40, 128, 114, 0)[2] == ids["early2x5"]
    for T in (1, 8):
        assert C.plan(T, 40, 128, 132, 0, True) == dec
    for T in (9, 32):
        assert C.plan(T, 40, 128, 132, 0, True) == (1, 16, ids["stage4"])
    for T in (4096, 32768):
        assert C.plan(T, 40, 128, 132, 0, True) == (4, 40, ids["early2x5"])
    # early2 asked for by name keeps its 4 tokens a CTA on both paths (run 17: 181.3 / 173.7 us)
    assert C.plan(32768, 40, 128, 132, ids["early2"], False) == (4, 40, ids["early2"])
    assert C.plan(32768, 40, 128, 132, ids["early2"], True) == (4, 40, ids["early2"])
    # by name, early2 at decode keeps one token and 16 heads a CTA (the planner's decode split before run 27)
    assert C.plan(1, 40, 128, 132, ids["early2"], False) == (1, 16, ids["early2"])
    # a small prefill (past decode's bound): fewer tokens a CTA while that leaves < 2 CTAs an SM
    assert C.plan(400, 40, 128, 132, ids["early2x5"], False) == (1, 40, ids["early2x5"])
    assert C.plan(700, 40, 128, 132, 0, True) == (2, 40, ids["early2x5"])  # 4 a CTA: 175 CTAs
    assert C.plan(1000, 40, 128, 132, ids["early2x5"], False) == (3, 40, ids["early2x5"])  # 334 CTAs


def test_rotary_embedding_module_cache_and_compile_registration():
    cfg = dict(head_dim=128, max_position_embeddings=1024, rope_theta=10000.0,
               rope_parameters={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 256})
    rope = P.RotaryEmbedding(cfg)
    assert rope.mode == "cache" and rope.cos_sin_cache.shape == (1024, 128)
    q, k = randn((7, 4, 128), torch.bfloat16, seed=17), randn((7, 1, 128), torch.bfloat16, seed=18)
    pos = torch.tensor([5, 0, 1023, 17, 3, 3, 900])
    a, b = rope(q, k, pos)
    f, _, _ = P.rope_parameters(cfg)
    c, d = P.apply_rope(q, k, pos, inv_freq=f)
    assert torch.equal(a, c) and torch.equal(b, d)
    assert int(rope.out_of_range) == 0
    rope(q, k, pos + 1000)
    assert int(rope.out_of_range) == 1
    # a model cast to bf16 keeps the module's fp32 frequencies and cache (same bits after .to)
    rope.to(torch.bfloat16)
    assert rope.cos_sin_cache.dtype == torch.float32 and rope.inv_freq.dtype == torch.float32
    assert rope.out_of_range.dtype == torch.int32
    e, f2 = rope(q, k, pos)
    assert torch.equal(e, a) and torch.equal(f2, b)


def test_rotary_embedding_large_calls_go_on_the_fly_with_the_same_bits():
    """From on_the_fly_from_tokens tokens the cache-mode module computes cos/sin on the fly (faster
    on the H200): the same bits as the cache and the same out-of-range bound."""
    cfg = dict(head_dim=128, max_position_embeddings=4096, partial_rotary_factor=0.5,
               rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024,
                                "rope_theta": 10000.0})
    rope = P.RotaryEmbedding(cfg)
    assert rope.mode == "cache" and rope.attention_scaling > 1.0
    T = rope.on_the_fly_from_tokens + 5
    q, k = randn((T, 2, 128), torch.bfloat16, seed=60), randn((T, 1, 128), torch.bfloat16, seed=61)
    pos = torch.randint(0, 4096, (T,), generator=torch.Generator().manual_seed(62))
    pos[7] = 4096  # out of range: flagged, left unrotated, on either path
    calls = []
    real = P.modules.apply_rope
    P.modules.apply_rope = lambda *a, **kw: calls.append(a[3] is None) or real(*a, **kw)
    try:
        a, b = rope(q, k, pos)
        small = rope(q[:9], k[:9], pos[:9])
    finally:
        P.modules.apply_rope = real
    assert calls == [True, False]  # on the fly, then the cache
    c, d = P.apply_rope(q, k, pos, rope.cos_sin_cache, max_positions=4096)
    assert torch.equal(a, c) and torch.equal(b, d) and torch.equal(small[0], c[:9])
    assert int(rope.out_of_range) == 1 and torch.equal(a[7], q[7])


def test_opcheck_and_compile_fullgraph():
    """torch.library registration: opcheck on both ops; torch.compile(fullgraph=True) (aot_eager
    here: no C++ compiler needed on the CPU) gives the eager bits."""
    q, k = randn((6, 4, 128), torch.float32, seed=19), randn((6, 2, 128), torch.float32, seed=20)
    pos = torch.arange(6)
    cache = P.build_cos_sin_cache(_inv_freq(128), 16)
    from mlops.positional import _ops

    geo = [4, 0, 512, 128, 0, 512, 128, 2, 0, 256, 128, 0, 256, 128]  # heads and strides of q, out_q, k, out_k
    split = [0, 0, 0]  # tokens a CTA, heads a CTA, variant: the planner's
    common = (pos, cache, None, None, 1, 6, 128, 128, 0, 0, [0, 0, 0], 16, 1.0, geo, split)
    torch.library.opcheck(_ops._rope_out, (q, k, torch.empty_like(q), torch.empty_like(k), *common))
    torch.library.opcheck(_ops._rope_inplace, (q.clone(), k.clone(), *common))

    def f(q, k, pos):
        a, b = P.apply_rope(q, k, pos, cache)
        return a * 2, b

    eager = f(q, k, pos)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, pos)
    assert torch.equal(eager[0], compiled[0]) and torch.equal(eager[1], compiled[1])

    def g(q, k, pos):
        P.apply_rope(q, k, pos, cache, inplace=True)
        return q + 0

    q2 = q.clone()
    out = torch.compile(g, fullgraph=True, backend="aot_eager")(q2, k.clone(), pos)
    assert torch.equal(out, eager[0] / 2) and torch.equal(q2, eager[0] / 2)


def test_cos_sin_cache_from_config():
    cfg = {"head_dim": 128, "max_position_embeddings": 2048,
           "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512,
                               "rope_theta": 10000.0}}
    f, scale, _ = P.rope_parameters(cfg)
    assert scale > 1.0
    cache = P.cos_sin_cache_from_config(cfg)
    assert cache.shape == (2048, 128) and cache.dtype == torch.float32
    assert torch.equal(cache, P.build_cos_sin_cache(f, 2048, scale))
    assert P.cos_sin_cache_from_config(cfg, 100).shape == (100, 128)
    with pytest.raises(ValueError, match="^max_positions:"):
        P.cos_sin_cache_from_config({"head_dim": 64})
