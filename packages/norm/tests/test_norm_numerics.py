"""CPU: the host emulation (what CPU tensors run, and what the GPU must equal bit for bit)
against an independent float64 reference and against Hugging Face's own modules."""

import pytest
import torch
from mlops_testing import FLOAT_DTYPES, randn, ulp_diff
from norm_reference import hf_order_rms, norm64

import mlops.norm as mn

SHAPES = [(1, 256), (3, 4096), (5, 1000), (2, 8192), (4, 40)]


def _to(dtype, t):
    return t.to(dtype)


# Bounds, in ulps of the output dtype, against float64 rounded once to the output dtype:
# - single rounding: 1 ulp (the float32 arithmetic before the final rounding is far more
#   precise than bf16/fp16; it can still flip a rounding that lies near a tie);
# - HF order (two roundings of the normalized value, then the weight): 2 ulps;
# - float32 outputs: 64 ulps, for sums of up to 8192 float32 squares (relative error of the
#   sum ~ H * 2^-24 worst case, typically sqrt(H) * 2^-24) feeding 1/sqrt.
def _bound(dtype, order):
    if dtype == torch.float32:
        return 64
    return 2 if order == "hf" else 1


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("wdtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_against_float64(dtype, wdtype, shape):
    x = randn(shape, dtype, 1, scale=2.0)
    w = randn(shape[-1], wdtype, 2)
    for order in ("hf", "single"):
        y = mn.rms_norm(x, w, eps=1e-6, order=order)
        ref = norm64(x, w, eps=1e-6).to(dtype)
        d = ulp_diff(y, ref)
        assert int(d.max()) <= _bound(dtype, order), (order, int(d.max()))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_against_float64(dtype, shape):
    x = randn(shape, dtype, 3, scale=3.0) + 0.5
    w = randn(shape[-1], dtype, 4)
    b = randn(shape[-1], dtype, 5)
    y = mn.layer_norm(x, w, b, eps=1e-5)
    ref64 = norm64(x, w, b, kind="layer", eps=1e-5)
    if dtype == torch.float32:
        # the bias can cancel n*w, so ulps of the output mean little: bound the error by the
        # magnitudes that were added (float32 sums of <= 8192 terms: < 2^-13 relative, with margin)
        mag = (norm64(x, w, kind="layer", eps=1e-5).abs() + b.double().abs())
        assert float(((y.double() - ref64).abs() / mag).max()) < 2 ** -13
    else:
        assert int(ulp_diff(y, ref64.to(dtype)).max()) <= _bound(dtype, "single")


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16))
def test_features_against_float64(dtype):
    """Residual, 1 + w, gates before/after, groups, no weight."""
    T, H = 6, 2048
    x, r, z = randn((T, H), dtype, 6), randn((T, H), dtype, 7), randn((T, H), dtype, 8, scale=2.0)
    w = randn(H, torch.float32, 9, scale=0.1)
    cases = [
        dict(residual=r),
        dict(weight_offset=1.0),
        dict(gate=z, gate_position="before"),
        dict(gate=z, gate_position="after"),
        dict(gate=z, gate_position="after", group_size=512),
        dict(group_size=256),
        dict(weight=None),
    ]
    for kw in cases:
        kw = dict(kw)
        weight = kw.pop("weight", w)
        out = mn.norm(x, weight, order="single", **kw)
        y = out.y if isinstance(out, mn.NormOutput) else out
        ref = norm64(x, weight, **kw).to(dtype)
        assert int(ulp_diff(y, ref).max()) <= 1, kw
        if "residual" in kw:
            assert torch.equal(out.residual, (x.float() + r.float()).to(dtype))


def test_hf_llama_rmsnorm_bits():
    """Llama / Qwen RMSNorm: transformers' LlamaRMSNorm and Qwen3RMSNorm. Its sum of squares uses
    torch's reduction order, ours the fixed order, so r can differ in its last bit; where v*r lies
    on a bf16 rounding boundary the rounded t differs by 1 ulp, and w*t by up to 2 after the
    second rounding. Nearly all elements are equal."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm

    for cls in (LlamaRMSNorm, Qwen3RMSNorm):
        H = 4096
        m = cls(H, eps=1e-6).to(torch.bfloat16)
        with torch.no_grad():
            m.weight.copy_(randn(H, torch.bfloat16, 10))
        x = randn((64, H), torch.bfloat16, 11)
        ref = m(x)
        y = mn.rms_norm(x, m.weight.detach(), eps=1e-6)
        d = ulp_diff(y, ref)
        assert int(d.max()) <= 2
        assert float((d == 0).float().mean()) > 0.995, float((d == 0).float().mean())


def test_zero_weight_sign_as_hf():
    """y = round(t * w) with w as stored: a -0 weight gives a zero y with the sign of t * (-0), as
    HF's weight * t does (the offset of a plain weight is kept as -0, so w + offset is w)."""
    H = 4096
    x = randn((8, H), torch.bfloat16, 12)
    x[:, 5::40] = 0.0
    w = randn(H, torch.bfloat16, 13)
    w[::10] = -0.0
    w[5::10] = 0.0
    y = mn.rms_norm(x, w, eps=1e-6)
    zero_w = w == 0
    expect_neg = torch.signbit(x[:, zero_w].float()) ^ torch.signbit(w[zero_w].float())
    assert torch.equal(torch.signbit(y[:, zero_w].float()), expect_neg)
    assert bool((y[:, zero_w] == 0).all())
    ref = hf_order_rms(x, w, 1e-6)
    assert torch.equal(torch.signbit(ref[:, zero_w].float()), expect_neg)


def test_hf_gemma_rmsnorm():
    """Gemma: (1 + w) in float32, one rounding."""
    from transformers.models.gemma.modeling_gemma import GemmaRMSNorm

    H = 2048
    m = GemmaRMSNorm(H, eps=1e-6)
    with torch.no_grad():
        m.weight.copy_(randn(H, torch.float32, 12, scale=0.2))
    x = randn((32, H), torch.bfloat16, 13)
    ref = m(x)
    y = mn.rms_norm(x, m.weight.detach(), eps=1e-6, weight_offset=1.0)
    d = ulp_diff(y, ref)
    assert int(d.max()) <= 1
    assert float((d == 0).float().mean()) > 0.995


def test_hf_qwen3_next_gated():
    """Qwen3-Next's gated RMSNorm: round(round(w * round(v*r)) * silu(z)) -> order='hf', gate after."""
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRMSNormGated

    H = 1024
    m = Qwen3NextRMSNormGated(H, eps=1e-6).to(torch.bfloat16)
    with torch.no_grad():
        m.weight.copy_(randn(H, torch.bfloat16, 14))
    x, z = randn((16, H), torch.bfloat16, 15), randn((16, H), torch.bfloat16, 16)
    ref = m(x, gate=z)
    y = mn.rms_norm(x, m.weight.detach(), eps=1e-6, gate=z, gate_position="after", order="hf")
    d = ulp_diff(y, ref)
    assert int(d.max()) <= 1
    assert float((d == 0).float().mean()) > 0.99


def test_hf_mamba2_gated():
    """Mamba-2 / Nemotron-H MambaRMSNormGated: the gate multiplies before the norm (fp32), HF order."""
    from transformers.models.mamba2.modeling_mamba2 import MambaRMSNormGated

    H = 1024
    try:  # transformers >= 5.2x takes group_size; 5.17 (the GPU machine's) has one group
        m = MambaRMSNormGated(H, group_size=H, eps=1e-6).to(torch.bfloat16)
    except TypeError:
        m = MambaRMSNormGated(H, eps=1e-6).to(torch.bfloat16)
    with torch.no_grad():
        m.weight.copy_(randn(H, torch.bfloat16, 17))
    x, z = randn((16, H), torch.bfloat16, 18), randn((16, H), torch.bfloat16, 19)
    ref = m(x, gate=z)
    y = mn.rms_norm(x, m.weight.detach(), eps=1e-6, gate=z, gate_position="before", order="hf")
    d = ulp_diff(y, ref)
    assert int(d.max()) <= 1
    assert float((d == 0).float().mean()) > 0.99


def test_layer_norm_against_torch():
    """F.layer_norm in float32 then one rounding."""
    H = 4096
    x = randn((16, H), torch.bfloat16, 20, scale=2.0)
    w, b = randn(H, torch.bfloat16, 21), randn(H, torch.bfloat16, 22)
    ref = torch.nn.functional.layer_norm(x.float(), (H,), w.float(), b.float(), eps=1e-5).to(torch.bfloat16)
    y = mn.layer_norm(x, w, b, eps=1e-5)
    assert int(ulp_diff(y, ref).max()) <= 1


def test_variants_give_same_bits_on_cpu():
    """The host emulation takes the variant too (it ignores it: there is one order)."""
    x = randn((9, 3000), torch.bfloat16, 23)
    w = randn(3000, torch.bfloat16, 24)
    ys = [mn.rms_norm(x, w, variant=v["name"]) for v in mn.norm_variants()]
    for y in ys[1:]:
        assert torch.equal(y.view(torch.int16), ys[0].view(torch.int16))


def test_strided_and_leading_dims():
    base = randn((4, 3, 5000), torch.bfloat16, 25)
    x = base[..., 100:4196]  # rows of 4096 with a row stride of 5000
    w = randn(4096, torch.bfloat16, 26)
    y = mn.rms_norm(x, w)
    assert y.shape == x.shape
    ref = mn.rms_norm(x.contiguous(), w)
    assert torch.equal(y, ref)


def test_modules():
    m = mn.RMSNorm(512, eps=1e-5, dtype=torch.bfloat16)
    x = randn((2, 7, 512), torch.bfloat16, 27)
    assert torch.equal(m(x), mn.rms_norm(x, m.weight.detach(), eps=1e-5))
    ln = mn.LayerNorm(512, dtype=torch.float32)
    xf = randn((3, 512), torch.float32, 28)
    assert torch.allclose(ln(xf), torch.nn.functional.layer_norm(xf, (512,)), atol=1e-5)
    g = mn.RMSNorm(512, weight_offset=1.0)
    assert torch.all(g.weight == 0)


def test_planner_follows_the_h200_measurements():
    """The planner's picks are the fastest variants of bench_norm.py --variants on the H200
    (docs/performance.md): 2 units a warp in the 64-register instances, 4 when a row has more."""
    names = [v["name"] for v in mn.norm_variants()]
    plan = lambda T, H: names[mn._ops.C.plan(T, H, 90, 132)]  # noqa: E731
    assert plan(16384, 2048) == "w4c2"
    assert plan(16384, 4096) == "w8c2"
    assert plan(2048, 4096) == "w8c2"
    assert plan(16384, 8192) == "w8"
    assert plan(1, 4096) == "w8c2" and plan(1, 8192) == "w8"
    assert plan(4, 131072) in names


def test_call_planner_follows_round_a():
    """mlops_norm's pick for a call (plan_call): the shape planner above, refined by the kind,
    x's dtype, a residual and a quantized output where a GPU run measured a faster variant
    (bench_norm.py --variants, H200, bf16; the figures are in norm_api.cpp and docs/norm.md):
    runs 14 / 17, run 20 (session 4 round A) for the lean quantized kernels, run 27 (session 5
    round A) for the "e" variants at H = 4096, run 74 (session 14) for the "g" variants."""
    names = [v["name"] for v in mn.norm_variants()]
    rms, layer, bf16, fp16, fp32 = 0, 1, 1, 2, 3
    none, int8, nvfp4, fp8s, fp8d = 0, 1, 2, 3, 4

    def plan(T, H, quant=none, xdt=bf16, kind=rms, residual=False, sm=90):
        return names[mn._ops.C.plan_call(T, H, kind, xdt, residual, quant, 132, sm)]

    for dt in (bf16, fp16):
        # run 27 (session 5), H = 4096, up to 4 waves of 16 rows an SM (8448 rows on 132 SMs;
        # measured at 2048): four warps a row with the e2m1_nibble / one-clamp codes for INT8
        # (13.92 vs r16lx2 14.34 us), NVFP4 (16.06 vs 18.30), dynamic FP8 (13.34 vs r16lx4
        # 14.05); static FP8 r16lx2e (12.42 vs 12.75)
        # run 37 (session 7): NVFP4 the "f" twins, r16lx4wf here (14.30 vs r16lx4we 15.33)
        # run 59 (session 10, the packed FP8 row amax): dynamic FP8 r16lx2e (11.26 vs r16lx4we 11.87)
        # run 74 (session 14): NVFP4 the "g" twin of r16lx4wf, r16lx4wg (kernel 10.37 vs 10.59-10.66 us,
        # events within the noise), on sm_80+ (where the g instances' bits were checked); INT8 keeps
        # r16lx4we (r16lx2g: kernel 9.6 vs 10.1 but events 12.9-13.1 vs 12.7)
        for T in (2048, 8448):
            assert plan(T, 4096, int8, dt) == "r16lx4we" and plan(T, 4096, int8, dt, sm=75) == "r16lx4we"
            assert plan(T, 4096, nvfp4, dt) == "r16lx4wg" and plan(T, 4096, nvfp4, dt, sm=80) == "r16lx4wg"
            assert plan(T, 4096, nvfp4, dt, sm=75) == "r16lx4wf" and plan(T, 4096, nvfp4, dt, sm=61) == "r16lx4wf"
            assert plan(T, 4096, fp8s, dt) == "r16lx2e" and plan(T, 4096, fp8d, dt) == "r16lx2e"
        # above (measured at 16384): static FP8 r16lx2e (53.36 vs 54.18); NVFP4 r16lx2f (run 37:
        # 71.07 vs r16lx2e 76.19; run 27: r16lx2e 77.41 vs r16lx2 88.77), dynamic FP8 r16lx4we (run 59:
        # 51.68 vs r16lx4 53.66); run 74 (session 14), sm_80+: INT8 and NVFP4 r16lx2g (INT8 57.7-57.8
        # vs r16lx2 58.1-58.2, NVFP4 60.2 vs r16lx2f 61.7-61.8); below sm_80 INT8 r16lx2 (run 20: 63.4
        # vs r16l 85.7), NVFP4 r16lx2f
        for T in (8449, 16384, 65536):
            assert plan(T, 4096, fp8s, dt) == "r16lx2e" and plan(T, 4096, fp8d, dt) == "r16lx4we"
            assert plan(T, 4096, nvfp4, dt) == "r16lx2g" and plan(T, 4096, int8, dt) == "r16lx2g"
            assert plan(T, 4096, nvfp4, dt, sm=80) == "r16lx2g" and plan(T, 4096, int8, dt, sm=89) == "r16lx2g"
            assert plan(T, 4096, nvfp4, dt, sm=75) == "r16lx2f" and plan(T, 4096, int8, dt, sm=70) == "r16lx2"
        # y: r16lx2 up to 4 waves of 16 rows an SM (run 20: 2048 rows 12.86 vs r16l4 13.25),
        # r16l4 above (16384 rows: within the noise)
        assert plan(2048, 4096, xdt=dt) == "r16lx2" and plan(8448, 4096, xdt=dt) == "r16lx2"
        assert plan(8449, 4096, xdt=dt) == "r16l4" and plan(16384, 4096, xdt=dt) == "r16l4"
        # run 20, H = 2048: r16lw (staged weight) for every quantized output, r16l for y alone; since session 33 (run
        # 182: 16384x2048 NVFP4 46.7 -> 33.5 us, INT8 32.2 -> 29.8) r8lx2g, the g epilogues on two warps a row (INT8 and
        # NVFP4 on sm_80+, FP8 everywhere)
        for T in (264, 2048, 16384):
            for sm in (90, 80, 75, 61):
                for q in (int8, nvfp4, fp8s, fp8d):
                    g = sm >= 80 or q in (fp8s, fp8d)
                    assert plan(T, 2048, q, dt, sm=sm) == ("r8lx2g" if g else "r16lw")
        assert plan(16384, 2048, xdt=dt) == "r16l"
    assert plan(16384, 1536) == "r8" and plan(16384, 3072) == "w8c2"  # not 2048 / 4096: not the lean kernels
    for q in (nvfp4, fp8d):  # 8 units, not 2048: r8 (run 14)
        assert plan(16384, 1536, q) == "r8"
    assert plan(16384, 3072, nvfp4) == "w2c2" and plan(16384, 3072, int8) == "r16"  # 12 units (run 14)
    assert plan(16384, 2048, residual=True) == "w4c2"  # add + norm: w4c2 72.1 vs r8 76.1 us
    assert plan(16384, 2048, xdt=fp32) == "w4c2"  # not measured
    assert plan(16384, 2048, kind=layer) == "ln1" and plan(16384, 8192, kind=layer) == "ln2"  # session 17, below
    assert plan(16384, 4096, fp8s, fp32) == "w8c2"  # fp32 x: the shape planner
    # H = 8192 at every row count (session 16, run 92: 16384x8192 y w8 255.7 vs r32lx4we 136.8 us, INT8 w4c2 483.4 vs
    # 113.7, NVFP4 636.0 vs r32lx4wg 120.4): the table's row below; fp32 x keeps the shape planner
    for T in (264, 2048, 16384):
        for q in (none, int8, fp8s, fp8d):
            assert plan(T, 8192, q) == "r32lx4we"
        assert plan(T, 8192, nvfp4) == "r32lx4wg" and plan(T, 8192, nvfp4, sm=75) == "r32lx4wf"
        assert plan(T, 8192, xdt=fp32) == "w8" and plan(T, 8192, int8, fp32) == "w8"
        assert plan(T, 8192, residual=True) == "w8"
    # few rows (below 2 an SM): since session 33 (run 178) the "u" kernels, a CTA a row of 2 units a warp with w loaded
    # with x (lu2mp: y 1x4096 r16lx4we 5.09 -> 4.33 us, INT8 5.48 -> 4.58), INT8 / FP8 at H 8192 4 units a warp (lu4mp:
    # 1x8192 INT8 r32lx4we 6.67 -> 5.00), NVFP4 lu2m above H 2048 on sm_80+ (1x8192 r32lx4wg 7.62 -> 5.67) and the "f"
    # kernels below sm_80 as before (r16lw / r16lx4wf / r32lx4wf); fp32 x, a residual, LayerNorm and the single order
    # keep the shape planner (w8c2 / w8). Before: run 88 (session 15, H 2048 / 4096) and run 91 (session 16, H 8192).
    for T in (1, 8, 128, 263):
        for dt in (bf16, fp16):
            for sm in (90, 80, 75, 61):
                for q in (none, int8, fp8s, fp8d):
                    assert plan(T, 2048, q, dt, sm=sm) == "lu2mp" and plan(T, 4096, q, dt, sm=sm) == "lu2mp"
                    assert plan(T, 8192, q, dt, sm=sm) == ("lu2mp" if q == none else "lu4mp")
            for sm in (90, 80):
                assert plan(T, 2048, nvfp4, dt, sm=sm) == "lu2mp"
                assert plan(T, 4096, nvfp4, dt, sm=sm) == "lu2m" and plan(T, 8192, nvfp4, dt, sm=sm) == "lu2m"
            for sm in (75, 61):
                assert plan(T, 2048, nvfp4, dt, sm=sm) == "r16lw" and plan(T, 4096, nvfp4, dt, sm=sm) == "r16lx4wf"
                assert plan(T, 8192, nvfp4, dt, sm=sm) == "r32lx4wf"
            # add + norm (session 33, run 180): lu2mp adds the residual loaded with x, every output
            for H in (2048, 4096, 8192):
                for q in (none, int8, nvfp4, fp8s, fp8d):
                    assert plan(T, H, q, dt, residual=True) == "lu2mp"
        assert plan(T, 4096, int8, fp32) == "w8c2" and plan(T, 4096, xdt=fp32, residual=True) == "w8c2"
        assert plan(T, 3072, residual=True) == "w8c2" and plan(T, 3072) == "w8c2"
        assert plan(T, 8192, int8, fp32) == "w8"
        assert plan(T, 16384, int8) == "w8" and plan(T, 6144, int8) == "w8"
    assert plan(264, 4096, int8) == "r16lx4we" and plan(264, 4096) == "r16lx2"  # 2 rows an SM: the rules above


def test_call_planner_layer_norm():
    """Session 17, GPU run 98 (bf16 with a bias, us; the figures are in norm_api.cpp): LayerNorm calls of x's dtype (bf16 /
    fp16, single order, weight of x's dtype) at H = 2048 / 4096 / 8192 take the lean LayerNorm kernels: four warps a row
    below 2 rows an SM (264 on 132 SMs; 1x8192 ln4w 6.8 vs w8 11.4; since run 99 ln4wp, w and b loaded with x, at H 4096 /
    8192: 128x8192 6.8-7.0 vs ln4w 7.3-7.8), above two warps a row at H 4096 / 8192 (16384x4096
    ln2 69.3 vs ln4w 70.2, ln1 76.1, w8c2 125.6; 16384x8192 ln2 137.3 vs ln4w 138.1, w8 333.5) and one at H 2048
    (16384x2048 ln1 36.2-36.5 vs ln4w 37.6, w4c2 66.1); fp32 x, a residual, a quantized output and other H keep the shape
    planner."""
    names = [v["name"] for v in mn.norm_variants()]
    layer, bf16, fp16, fp32, int8 = 1, 1, 2, 3, 1

    def plan(T, H, quant=0, xdt=bf16, residual=False):
        return names[mn._ops.C.plan_call(T, H, layer, xdt, residual, quant, 132, 90)]

    for dt in (bf16, fp16):
        for T in (1, 128, 263):
            assert plan(T, 2048, xdt=dt) == "ln4w"  # run 99: ln4wp wins at H 4096 / 8192 only
            assert plan(T, 4096, xdt=dt) == "ln4wp" and plan(T, 8192, xdt=dt) == "ln4wp"
        for T in (264, 2048, 16384):
            assert plan(T, 2048, xdt=dt) == "ln1"
            assert plan(T, 4096, xdt=dt) == "ln2" and plan(T, 8192, xdt=dt) == "ln2"
    assert plan(16384, 2048, xdt=fp32) == "w4c2" and plan(16384, 8192, xdt=fp32) == "w8"
    assert plan(16384, 4096, residual=True) == "w8c2" and plan(16384, 4096, int8) == "w8c2"
    assert plan(16384, 3072) == "w8c2" and plan(16384, 16384) == "w8"
