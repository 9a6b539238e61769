"""GPU: every kernel variant against the host emulation, bit for bit, for every dtype pair and
feature; CUDA-graph replay. Run once per build of the GPU suite (sm_90 SASS, and compute_61 /
70 / 75 / 80 PTX JIT-compiled by the driver: nox -s gpu_build, ci/gpu_tests.py), so the sm_80+
cvt.rn.bf16x2 path and the integer rounding below it are both held to the same bits."""

import itertools

import pytest
import torch
from mlops_testing import assert_bits_equal, gpu_arch_tag, randn, requires_cuda

import mlops.norm as mn

pytestmark = requires_cuda
VARIANTS = [v["name"] for v in mn.norm_variants()]


def both(fn, *tensors, **kw):
    """fn on CUDA copies and on the CPU tensors (the host emulation); returns (gpu, cpu) outputs."""
    cuda = [t.cuda() if isinstance(t, torch.Tensor) else t for t in tensors]
    kw_cuda = {k: (v.cuda() if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    return fn(*cuda, **kw_cuda), fn(*tensors, **kw)


def check(g, c, what):
    if isinstance(g, torch.Tensor):
        assert_bits_equal(g, c, what)
        return
    for name, a, b in zip(("y", "residual", "q", "scale"), g, c):
        assert (a is None) == (b is None), what
        if a is not None:
            assert_bits_equal(a, b, f"{what}: {name}")


@pytest.mark.parametrize("xdt,wdt", list(itertools.product((torch.bfloat16, torch.float16, torch.float32), repeat=2)))
@pytest.mark.parametrize("variant", VARIANTS)
def test_dtypes_and_shapes(xdt, wdt, variant):
    # 20480 = 80 units: past every variant's registers (re-read path); 1000: a partial unit
    # 9x2048: the r8 variant's rows and r16's fp32 ones (8 units)
    for T, H in [(1, 256), (3, 1000), (9, 2048), (17, 4096), (64, 8192), (5, 20480)]:
        x, w = randn((T, H), xdt, T * H), randn(H, wdt, H)
        for order in ("hf", "single"):
            g, c = both(lambda x, w: mn.rms_norm(x, w, order=order, variant=variant), x, w)
            check(g, c, f"rms {xdt} {wdt} {T}x{H} {order} {variant} [{gpu_arch_tag()}]")
        b = randn(H, wdt, H + 1)
        g, c = both(lambda x, w, b: mn.layer_norm(x, w, b, variant=variant), x, w, b)
        check(g, c, f"layer {xdt} {wdt} {T}x{H} {variant} [{gpu_arch_tag()}]")


FEATURES = {
    "residual": lambda x, w, r, z, s, v: mn.rms_norm(x, w, residual=r, variant=v),
    "one_plus_w": lambda x, w, r, z, s, v: mn.rms_norm(x, w, weight_offset=1.0, variant=v),
    "no_weight": lambda x, w, r, z, s, v: mn.rms_norm(x, None, variant=v),
    "gate_before": lambda x, w, r, z, s, v: mn.rms_norm(x, w, gate=z, gate_position="before", order="hf", variant=v),
    "gate_after_hf": lambda x, w, r, z, s, v: mn.rms_norm(x, w, gate=z, gate_position="after", order="hf", variant=v),
    "gate_after_groups": lambda x, w, r, z, s, v: mn.rms_norm(x, w, gate=z, group_size=1024, variant=v),
    "layer_groups_residual": lambda x, w, r, z, s, v: mn.layer_norm(x, w, w, residual=r, group_size=512, variant=v),
    "int8": lambda x, w, r, z, s, v: mn.rms_norm(x, w, quant="int8", return_y=True, variant=v),
    "nvfp4": lambda x, w, r, z, s, v: mn.rms_norm(x, w, quant="nvfp4", return_y=True, variant=v),
    "nvfp4_global": lambda x, w, r, z, s, v: mn.rms_norm(x, w, quant="nvfp4", scale=s, variant=v),
    "fp8_static": lambda x, w, r, z, s, v: mn.rms_norm(x, w, residual=r, quant="fp8", scale=s, variant=v),
    "fp8_dynamic": lambda x, w, r, z, s, v: mn.rms_norm(x, w, quant="fp8", return_y=True, variant=v),
    "fp8_dynamic_layer": lambda x, w, r, z, s, v: mn.layer_norm(x, w, w, quant="fp8", variant=v),
}


@pytest.mark.parametrize("feature", list(FEATURES))
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_features(feature, variant, xdt):
    # 12288 = 48 units: in registers for w8 only, re-read by the others
    for T, H in [(7, 2048), (3, 12288)]:
        x, r, z = randn((T, H), xdt, 1, 2.0), randn((T, H), xdt, 2), randn((T, H), xdt, 3, 3.0)
        w = randn(H, xdt, 4)
        s = torch.tensor(0.021, dtype=torch.float32)
        fn = FEATURES[feature]
        g, c = both(lambda x, w, r, z, s: fn(x, w, r, z, s, variant), x, w, r, z, s)
        check(g, c, f"{feature} {xdt} {T}x{H} {variant} [{gpu_arch_tag()}]")


def test_strided_rows_and_inplace_residual():
    base = randn((6, 5000), torch.bfloat16, 5).cuda()
    x = base[:, 8:4104]  # row stride 5000, 16-byte aligned start
    w = randn(4096, torch.bfloat16, 6).cuda()
    r = randn((6, 4096), torch.bfloat16, 7).cuda()
    expect = mn.rms_norm(x.cpu(), w.cpu(), residual=r.cpu())
    out = mn.rms_norm(x, w, residual=r, residual_out=r)  # vLLM's in-place residual update
    assert_bits_equal(out.y, expect.y, "y")
    assert_bits_equal(r, expect.residual, "residual updated in place")
    xm = base[:, 3:4099]  # misaligned rows: the scalar path
    assert_bits_equal(mn.rms_norm(xm, w), mn.rms_norm(xm.cpu(), w.cpu()), "misaligned rows")


def test_inplace_output_over_x():
    x = randn((9, 20480), torch.float16, 8).cuda()  # the re-read path reads x again: before y overwrites it
    w = randn(20480, torch.float16, 9).cuda()
    expect = mn.layer_norm(x.cpu(), w.cpu(), w.cpu())
    mn.layer_norm(x, w, w, out=x)
    assert_bits_equal(x, expect, "out=x")


def test_cuda_graph_replay():
    T, H = 32, 4096
    x = randn((T, H), torch.bfloat16, 10).cuda()
    r = randn((T, H), torch.bfloat16, 11).cuda()
    w = randn(H, torch.bfloat16, 12).cuda()
    s = torch.tensor([0.02], device="cuda")
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        mn.rms_norm(x, w, residual=r, quant="fp8", scale=s)  # warm up on the capture stream
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        out = mn.rms_norm(x, w, residual=r, quant="fp8", scale=s, return_y=True)
    for seed in (13, 14):
        x.copy_(randn((T, H), torch.bfloat16, seed))
        s.fill_(0.01 * (seed - 12))
        graph.replay()
        torch.cuda.synchronize()
        expect = mn.rms_norm(x.cpu(), w.cpu(), residual=r.cpu(), quant="fp8", scale=s.cpu(), return_y=True)
        for name in ("y", "residual", "q"):
            assert_bits_equal(getattr(out, name), getattr(expect, name), f"graph replay {name}")


def test_sanitizer_subset():
    """A small mixed workload, what ci/gpu_tests.py runs under compute-sanitizer memcheck/racecheck."""
    for xdt in (torch.bfloat16, torch.float32):
        x, r = randn((5, 1000), xdt, 20), randn((5, 1000), xdt, 21)
        w = randn(1000, xdt, 22)
        for v in VARIANTS:
            g, c = both(lambda x, w, r: mn.layer_norm(x, w, w, residual=r, variant=v), x, w, r)
            check(g, c, f"sanitizer subset {v}")
        x2 = randn((3, 20480), xdt, 23)
        w2 = randn(20480, xdt, 24)
        g, c = both(lambda x, w: mn.rms_norm(x, w, quant="fp8", variant="w1"), x2, w2)
        check(g, c, "sanitizer re-read path")


ROW_VARIANTS = [v["name"] for v in mn.norm_variants() if v["name"].startswith("r")]  # norm_row.cuh


@pytest.mark.parametrize("variant", ROW_VARIANTS)
def test_row_variants_many_rows_and_in_place(variant):
    """The one-warp-a-row kernels (norm_row.cuh) where the shapes above do not reach: more rows
    than a persistent grid holds (264 CTAs of 4 rows on 132 SMs: 2500 rows give some warps 2-3
    rows, both register buffers), row lengths of 1..16 units, fp32 x, y over x, and vLLM's
    in-place residual update."""
    for xdt, H in [(torch.bfloat16, 4096), (torch.float16, 2048), (torch.bfloat16, 768), (torch.float32, 2048)]:
        x, w = randn((2500, H), xdt, 30), randn(H, xdt, 31)
        g, c = both(lambda x, w: mn.rms_norm(x, w, variant=variant), x, w)
        check(g, c, f"many rows {xdt} 2500x{H} {variant} [{gpu_arch_tag()}]")
    x = randn((37, 4096), torch.bfloat16, 32).cuda()
    r = randn((37, 4096), torch.bfloat16, 33).cuda()
    w = randn(4096, torch.bfloat16, 34).cuda()
    expect = mn.rms_norm(x.cpu(), w.cpu(), residual=r.cpu())
    out = mn.rms_norm(x, w, residual=r, residual_out=r, variant=variant)
    assert_bits_equal(out.y, expect.y, f"{variant} y")
    assert_bits_equal(r, expect.residual, f"{variant} residual updated in place")
    expect = mn.layer_norm(x.cpu(), w.cpu(), w.cpu())
    mn.layer_norm(x, w, w, out=x, variant=variant)
    assert_bits_equal(x, expect, f"{variant} out=x")


# norm_row_lean*.cuh; "lu": session 33's few-rows kernels (2 or 4 units a warp at H 2048 / 4096 / 8192, held to the same
# tests at each width: R32_VARIANTS below)
LEAN_VARIANTS = [v["name"] for v in mn.norm_variants() if v["name"].startswith(("r16l", "lu", "r8lx"))]
_HOST = {}  # host emulation results shared by the variants (the CPU side is the slow one)


def _host(key, fn, *args, **kw):
    if key not in _HOST:
        _HOST[key] = fn(*args, **kw)
    return _HOST[key]


def _lean_calls(s):
    return ({}, {"quant": "int8"}, {"quant": "int8", "return_y": True}, {"quant": "fp8"},
            {"quant": "fp8", "return_y": True}, {"quant": "fp8", "scale": s}, {"quant": "fp8", "scale": s, "return_y": True},
            {"quant": "nvfp4"}, {"quant": "nvfp4", "return_y": True}, {"quant": "nvfp4", "scale": s})


@pytest.mark.parametrize("variant", LEAN_VARIANTS)
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
@pytest.mark.parametrize("H", (4096, 2048))
def test_lean_row_variant(H, xdt, variant, T=2501):
    """The lean kernels (norm_row_lean.cuh, norm_row_leanq.cuh: 16 or 8 units, compile-time
    flags; x kept as fp32 or unpacked twice; staged weights; a persistent grid) where the shapes
    above do not reach: a partial last CTA (2501 rows: more than a persistent grid's warps),
    signed zeros in w and x (w_eff = w + -0 keeps a -0 weight: the sign of a zero y), an
    all-zero row, every quantized output with and without y, y over x."""
    x, w = randn((T, H), xdt, 40), randn(H, xdt, 41)
    x[:, ::7] = 0.0
    x[1, :] = 0.0  # r = 1/sqrt(eps), y = +-0
    w[::5] = -0.0
    w[1::5] = 0.0
    s = torch.tensor(0.0173, dtype=torch.float32)
    xc, wc, sc = x.cuda(), w.cuda(), s.cuda()
    for i, kw in enumerate(_lean_calls(s)):
        c = _host(("lean", H, xdt, i), mn.rms_norm, x, w, **kw)
        kwc = {k: (sc if k == "scale" else v) for k, v in kw.items()}
        check(mn.rms_norm(xc, wc, variant=variant, **kwc), c, f"{variant} {xdt} {T}x{H} {kw} [{gpu_arch_tag()}]")
    expect = _host(("lean", H, xdt, 0), mn.rms_norm, x, w)
    mn.rms_norm(xc, wc, out=xc, variant=variant)
    assert_bits_equal(xc, expect, f"{variant} {xdt} {H} out=x")


def _every_pattern(xdt, H=4096):
    """All 2^16 bit patterns of xdt but NaN (a NaN y's sign and payload are the element path's
    business, not the quantizers') as a weight of rows of 4096, in two layouts: consecutive
    patterns (every value of y next to its neighbours) and each pattern filling a block of 16
    (every value as a block's amax)."""
    pats = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(xdt)
    pats = torch.where(pats.isnan(), torch.zeros_like(pats), pats)
    return list(pats.reshape(-1, H)) + list(pats[::16].repeat_interleave(16).reshape(-1, H))


@pytest.mark.parametrize("variant", [n for n in LEAN_VARIANTS if n.startswith(("r16lx", "r16lw", "lu"))])
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean_quant_every_value(xdt, variant, H=4096):
    """The lx / lw kernels' quantizers (int8_code_bits, e4m3x2's cvt.rn.satfinite on sm_89+,
    e2m1_code_fast, div127 / div6, pair_div2; the "e" variants' e2m1_nibble and one-clamp FP8)
    and staged weights on every bf16 / fp16 value of
    y, infs included: x = ones and eps = 0 make r = 1 and t = 1, so y = w + 0 exactly; compared
    with the host emulation bit for bit."""
    x = torch.ones((2, H), dtype=xdt)
    s = torch.tensor(0.75, dtype=torch.float32)
    xc, sc = x.cuda(), s.cuda()
    calls = ({}, {"quant": "int8"}, {"quant": "fp8"}, {"quant": "fp8", "scale": s}, {"quant": "nvfp4"},
             {"quant": "nvfp4", "scale": s})
    for j, w in enumerate(_every_pattern(xdt, H)):
        wc = w.cuda()
        for i, kw in enumerate(calls):
            y = {"return_y": True} if kw else {}
            c = _host(("every", H, xdt, j, i), mn.rms_norm, x, w, eps=0.0, **y, **kw)
            kwc = {k: (sc if k == "scale" else v) for k, v in kw.items()}
            g = mn.rms_norm(xc, wc, eps=0.0, variant=variant, **y, **kwc)
            check(g, c, f"{variant} {xdt} every value, w row {j}, {kw} [{gpu_arch_tag()}]")


@pytest.mark.parametrize("variant", [n for n in LEAN_VARIANTS if n.startswith(("r16lx", "lu"))])
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean_nvfp4_nonfinite(xdt, variant, H=4096):
    """NVFP4 codes and scales of the lx kernels where y holds NaN or inf, or blocks whose scale is
    clamped at 448: a NaN product codes as -6 (0xF) and the block amax ignores NaN, as in the
    host emulation. The "f" variants' near path (no clamps, a NaN-propagating packed block amax
    on sm_80+, a warp vote) must hand every such warp to the clamped encoder and amax16; the
    every-value test above has no NaN y. Codes and scales only (no y: a NaN y's bits are the
    element path's)."""
    x, w = randn((64, H), xdt, 50), randn(H, xdt, 51)
    x[3, 100] = float("nan")  # the row's sum is NaN: every y of row 3 NaN
    x[5, 7] = float("inf")  # the sum is inf, r = 0: y = +-0, NaN at column 7
    for c0 in range(0, H, 4096):  # the same in every 4096 columns (H = 8192: the last two warps' units too)
        x[11, c0 + 3000:c0 + 3016] = 40.0  # t ~ 15 there: with w = 500, amax / 6 > 448 (scale clamped)
        w[c0 + 1000] = float("nan")  # one NaN y a row (block 62)
        w[c0 + 2000] = float("inf")  # +-inf y a row: block 125's scale clamped at 448
        w[c0 + 3000:c0 + 3016] = 500.0
    s = torch.tensor(0.0173, dtype=torch.float32)
    xc, wc, sc = x.cuda(), w.cuda(), s.cuda()
    for i, kw in enumerate(({"quant": "nvfp4"}, {"quant": "nvfp4", "scale": s})):
        c = _host(("nonfinite", H, xdt, i), mn.rms_norm, x, w, **kw)
        kwc = {k: (sc if k == "scale" else v) for k, v in kw.items()}
        check(mn.rms_norm(xc, wc, variant=variant, **kwc), c, f"{variant} {xdt} non-finite y, {kw} [{gpu_arch_tag()}]")


@pytest.mark.parametrize("variant", [n for n in LEAN_VARIANTS if n.startswith(("r16lx", "lu"))])
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean_int8_fp8_nonfinite(xdt, variant, H=4096):
    """INT8 and dynamic FP8 codes and scales of the lx kernels where y holds NaN or inf: the packed FP8 row
    amax (amax_max8, sm_80+) must ignore NaN as fmaxf does; INT8 blocks with NaN, inf, amax 0 and a tiny
    amax (inverse past FLT_MAX: int8_codes8's inf branch). Against the host emulation."""
    x, w = randn((64, H), xdt, 52), randn(H, xdt, 53)
    x[3, 100] = float("nan")  # every y of row 3 NaN
    x[5, 7] = float("inf")  # r = 0: y = +-0, NaN at column 7
    x[9, :] = 0.0
    x[9, 40] = 1.0  # row 9: y = 0 but at column 40 (zero blocks, amax 0)
    for c0 in range(0, H, 4096):  # the same in every 4096 columns (H = 8192: the last two warps' units too)
        w[c0 + 1000] = float("nan")  # one NaN y a row
        w[c0 + 2000] = float("inf")  # +-inf y a row
        if xdt == torch.bfloat16:
            w[c0 + 3008:c0 + 3024] = 1e-38  # block 188 of tiny y: amax under 2^-120, int8_inv overflows to inf
    for i, kw in enumerate(({"quant": "int8"}, {"quant": "fp8"})):  # codes and scales (no y: a NaN y's bits
        c = _host(("nonfinite-i8", H, xdt, i), mn.rms_norm, x, w, **kw)  # are the element path's)
        g = mn.rms_norm(x.cuda(), w.cuda(), variant=variant, **kw)
        check(g, c, f"{variant} {xdt} non-finite y, {kw} [{gpu_arch_tag()}]")


def _tiny_products(H):
    """bf16 rows whose t = round(v * r) and w multiply to fp32 / bf16 subnormals and below: element
    0 of a row is 1, the rest ~2^-70 with varied mantissas, so r ~ sqrt(H) and t ~ 2^-64; w spans
    2^-57 ... 2^-76 with both signs. Returns (x, w, n): n the products under 2^-126."""
    g = torch.Generator().manual_seed(60)
    x = (1.0 + torch.rand((64, H), generator=g)) * torch.exp2(torch.full((64, H), -70.0))
    x[:, 0] = 1.0
    x = x.to(torch.bfloat16)
    w = ((1.0 + torch.rand(H, generator=g)) * torch.exp2(-57.0 - torch.randint(0, 20, (H,), generator=g).double()))
    w = torch.where(torch.rand(H, generator=g) < 0.5, -w, w).to(torch.bfloat16)
    t = mn.rms_norm(x, torch.ones(H, dtype=torch.bfloat16))  # t itself: y of w = 1
    n = int(((t.double() * w.double()).abs() < 2.0**-126).sum())
    return x, w, n


@pytest.mark.parametrize("variant", LEAN_VARIANTS)
@pytest.mark.parametrize("H", (4096, 2048))
def test_lean_tiny_products(H, variant):
    """The packed multiply of y = t * w (mul_packed8: HMUL2 on sm_90, fma.rn.bf16x2 on sm_80,
    the fp32 path below) where t * w falls into bf16's subnormals and under them: the host rounds
    fp32's product (itself rounded there), the kernel the exact one; the same bits
    (tests/c/codes_fast_exhaustive.cpp proves it for every pair, this holds the GPU to it)."""
    x, w, n = _tiny_products(H)
    assert n > 1000, n
    s = torch.tensor(1e-30, dtype=torch.float32)
    xc, wc, sc = x.cuda(), w.cuda(), s.cuda()
    for i, kw in enumerate(_lean_calls(s)):
        c = _host(("tiny", H, i), mn.rms_norm, x, w, **kw)
        kwc = {k: (sc if k == "scale" else v) for k, v in kw.items()}
        what = f"{variant} tiny t*w {H} {kw} ({n} subnormal products) [{gpu_arch_tag()}]"
        check(mn.rms_norm(xc, wc, variant=variant, **kwc), c, what)


# Session 16: the 32-unit lx4w kernels (r32lx4we / wf / wg: 8192-wide rows, four warps of 8 units) on the tests
# above at H = 8192 (at 4096 / 2048 they run their twins r16lx4we / wf / wg, tested there through test_dtypes_and_shapes
# and test_features), and the planned call below 2 rows an SM at H = 8192 (plan_call: these kernels).
R32_VARIANTS = [v["name"] for v in mn.norm_variants() if v["name"].startswith(("r32l", "lu"))]


@pytest.mark.parametrize("variant", R32_VARIANTS)
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean8k_row_variant(xdt, variant):
    test_lean_row_variant(8192, xdt, variant, T=300)


@pytest.mark.parametrize("variant", R32_VARIANTS)
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean8k_quant_every_value(xdt, variant):
    test_lean_quant_every_value(xdt, variant, H=8192)


@pytest.mark.parametrize("variant", R32_VARIANTS)
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean8k_nonfinite(xdt, variant):
    test_lean_nvfp4_nonfinite(xdt, variant, H=8192)
    test_lean_int8_fp8_nonfinite(xdt, variant, H=8192)


@pytest.mark.parametrize("variant", R32_VARIANTS)
def test_lean8k_tiny_products(variant):
    test_lean_tiny_products(8192, variant)


@pytest.mark.parametrize("T", (1, 8, 128, 2501))
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
def test_lean8k_planned_few_rows(T, xdt):
    """The planned call (no variant) at H = 8192, every output: the host emulation's bits. Below 2 rows an SM and, since
    run 92, at every row count (2501 rows: more than the kernels' grid holds, so CTAs take several rows)."""
    x, w = randn((T, 8192), xdt, 70), randn(8192, xdt, 71)
    s = torch.tensor(0.0173, dtype=torch.float32)
    xc, wc, sc = x.cuda(), w.cuda(), s.cuda()
    for kw in _lean_calls(s):
        c = mn.rms_norm(x, w, **kw)
        kwc = {k: (sc if k == "scale" else v) for k, v in kw.items()}
        check(mn.rms_norm(xc, wc, **kwc), c, f"planned {xdt} {T}x8192 {kw} [{gpu_arch_tag()}]")


@pytest.mark.parametrize("variant", ["lu2mp", None])
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
@pytest.mark.parametrize("H", (2048, 4096, 8192))
def test_lu_add_norm(H, xdt, variant):
    """Session 33: lu2mp's add + norm (the residual loaded with x, x + residual rounded to x's dtype, written to
    residual_out, normed), named and as the planner's pick below 2 rows an SM (variant None: 3 rows; named: 300 rows,
    CTAs past one wave), every output with and without y, residual rows of a wider tensor (a stride), against the host
    emulation; then the in-place forms (residual_out = residual, y over x), as vLLM's fused_add_rms_norm calls it."""
    T = 3 if variant is None else 300
    x, w = randn((T, H), xdt, 100, 2.0), randn(H, xdt, 101)
    rw = randn((T, H + 256), xdt, 102)
    r = rw[:, 128:128 + H]  # a strided view
    x[:, ::11] = 0.0
    r[:, 5::13] = -0.0
    s = torch.tensor(0.0173, dtype=torch.float32)
    xc, wc, rc, sc = x.cuda(), w.cuda(), rw.cuda()[:, 128:128 + H], s.cuda()
    for i, kw in enumerate(_lean_calls(s)):
        c = _host(("lu-add", H, xdt, T, i), mn.rms_norm, x, w, residual=r, **kw)
        kwc = {k: (sc if k == "scale" else v) for k, v in kw.items()}
        g = mn.rms_norm(xc, wc, residual=rc, variant=variant, **kwc)
        check(g, c, f"{variant} add+norm {xdt} {T}x{H} {kw} [{gpu_arch_tag()}]")
    expect = mn.rms_norm(x, w, residual=r)
    xi, ri = x.cuda(), r.contiguous().cuda()
    out = mn.rms_norm(xi, wc, residual=ri, residual_out=ri, out=xi, variant=variant)
    assert_bits_equal(ri, expect.residual, f"{variant} {xdt} {H} residual updated in place")
    assert_bits_equal(xi, expect.y, f"{variant} {xdt} {H} y over x")
    assert_bits_equal(out.y, expect.y, f"{variant} {xdt} {H} y")


@pytest.mark.parametrize("H", (2048, 4096, 8192))
def test_few_rows_planned_graph_and_compile(H):
    """Session 33: the planned calls below 2 rows an SM are the "u" kernels (lu2mp / lu4mp / lu2m: CTAs of up to 512
    threads). Captured in a CUDA graph (replayed on new x: every output the host emulation's bits) and compiled by
    torch.compile(fullgraph=True) (the eager bits)."""
    T = 3
    x = randn((T, H), torch.bfloat16, 90).cuda()
    w = randn(H, torch.bfloat16, 91).cuda()
    calls = ({}, {"quant": "int8"}, {"quant": "nvfp4", "return_y": True}, {"quant": "fp8"})
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for kw in calls:  # warm up on the capture stream
            mn.rms_norm(x, w, **kw)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        outs = [mn.rms_norm(x, w, **kw) for kw in calls]
    for seed in (92, 93):
        x.copy_(randn((T, H), torch.bfloat16, seed))
        graph.replay()
        torch.cuda.synchronize()
        for kw, out in zip(calls, outs):
            check(out, mn.rms_norm(x.cpu(), w.cpu(), **kw), f"graph replay {T}x{H} {kw} [{gpu_arch_tag()}]")

    def block(x, w):
        a = mn.rms_norm(x, w, quant="int8", return_y=True)
        b = mn.rms_norm(x, w, quant="nvfp4")
        return a.y, a.q, a.scale, b.q, b.scale

    eager = block(x, w)
    for a, b in zip(eager, torch.compile(block, fullgraph=True)(x, w)):
        assert_bits_equal(a, b, f"compiled {T}x{H}")


# Session 17: the lean LayerNorm kernels (norm_row_leanln.cuh: ln1 / ln2 / ln4w, one, two or four warps a row at
# H = 2048 / 4096 / 8192; ln1 does not take 8192 and runs w8 there), against the host emulation bit for bit.
LN_VARIANTS = [v["name"] for v in mn.norm_variants() if v["name"].startswith("ln")]


def _ln_inputs(T, H, xdt, seed):
    """x with a mean far from 0 in some rows (the variance's cancellation), signed zeros in x, w and b, an all-zero
    row (variance 0: r = 1/sqrt(eps), y = b or +-0), a constant row, and a row of one large value."""
    x = randn((T, H), xdt, seed, 2.0)
    x[::3] += 5.0
    x[:, ::7] = 0.0
    x[1, :] = 0.0
    x[2, :] = 1.5
    x[3, :] = 0.0
    x[3, 5] = 100.0
    w, b = randn(H, xdt, seed + 1), randn(H, xdt, seed + 2)
    w[::5] = -0.0
    w[1::5] = 0.0
    b[::3] = -0.0
    return x, w, b


@pytest.mark.parametrize("variant", LN_VARIANTS)
@pytest.mark.parametrize("xdt", (torch.bfloat16, torch.float16))
@pytest.mark.parametrize("H", (2048, 4096, 8192))
def test_lean_layer_norm_variant(H, xdt, variant):
    """LayerNorm with and without a bias, weight_offset 0 and 1 (LayerNorm1P), eps 1e-5 and 1e-3 (not 0: a row of
    zero variance would make (v - mean) * r = 0 * inf, a NaN whose sign is not part of the contract), an odd row count
    (a partial last CTA), strided rows (a view into wider rows), y over x; every call the host emulation's bits."""
    T = 2501 if H < 8192 else 301
    x, w, b = _ln_inputs(T, H, xdt, 80)
    xc, wc, bc = x.cuda(), w.cuda(), b.cuda()
    calls = ({"bias": True}, {"bias": False}, {"bias": True, "weight_offset": 1.0}, {"bias": False, "weight_offset": 1.0},
             {"bias": True, "eps": 1e-3})
    for i, kw in enumerate(calls):
        kw = dict(kw)
        hb = kw.pop("bias")
        c = _host(("ln", H, xdt, i), mn.layer_norm, x, w, b if hb else None, **kw)
        g = mn.layer_norm(xc, wc, bc if hb else None, variant=variant, **kw)
        assert_bits_equal(g, c, f"{variant} {xdt} {T}x{H} bias={hb} {kw} [{gpu_arch_tag()}]")
    # strided rows: every row starts 16-byte aligned inside rows of H + 264 values
    base = randn((37, H + 264), xdt, 81, 3.0)
    base[:, 8 : H + 8] += 2.0
    xs = base[:, 8 : H + 8]
    c = mn.layer_norm(xs, w, b)
    assert_bits_equal(mn.layer_norm(base.cuda()[:, 8 : H + 8], wc, bc, variant=variant), c,
                      f"{variant} {xdt} strided 37x{H} [{gpu_arch_tag()}]")
    expect = _host(("ln", H, xdt, 0), mn.layer_norm, x, w, b)
    mn.layer_norm(xc, wc, bc, out=xc, variant=variant)
    assert_bits_equal(xc, expect, f"{variant} {xdt} {H} out=x [{gpu_arch_tag()}]")


@pytest.mark.parametrize("variant", LN_VARIANTS)
@pytest.mark.parametrize("T", (1, 3, 130))
def test_lean_layer_norm_few_rows(T, variant):
    """Few rows (1: a CTA with one row and idle slots; 3, 130: partial CTAs) at every H, bf16 and fp16, with a bias;
    and the calls the variants do not take (RMSNorm, the HF order, no weight, an fp32 weight, a residual, groups, a
    quantized output, H = 1024) run the general kernels, the same bits."""
    for xdt in (torch.bfloat16, torch.float16):
        for H in (2048, 4096, 8192):
            x, w, b = _ln_inputs(max(T, 4), H, xdt, 90 + H // 1024)
            x = x[:T]
            c = mn.layer_norm(x, w, b)
            assert_bits_equal(mn.layer_norm(x.cuda(), w.cuda(), b.cuda(), variant=variant), c,
                              f"{variant} {xdt} {T}x{H} [{gpu_arch_tag()}]")
    x, w, b = _ln_inputs(max(T, 4), 4096, torch.bfloat16, 99)
    x = x[:T]
    r = randn(x.shape, torch.bfloat16, 98)
    others = {
        "rms": lambda x, w, b, r, **v: mn.rms_norm(x, w, **v),
        "hf": lambda x, w, b, r, **v: mn.layer_norm(x, w, b, order="hf", **v),
        "no_weight": lambda x, w, b, r, **v: mn.layer_norm(x, None, None, **v),
        "fp32_weight": lambda x, w, b, r, **v: mn.layer_norm(x, w.float(), b.float(), **v),
        "residual": lambda x, w, b, r, **v: mn.layer_norm(x, w, b, residual=r, **v),
        "groups": lambda x, w, b, r, **v: mn.layer_norm(x, w, b, group_size=1024, **v),
        "fp8": lambda x, w, b, r, **v: mn.layer_norm(x, w, b, quant="fp8", return_y=True, **v),
        "h1024": lambda x, w, b, r, **v: mn.layer_norm(x[:, :1024].contiguous(), w[:1024], b[:1024], **v),
    }
    for name, fn in others.items():
        c = fn(x, w, b, r)
        g = fn(x.cuda(), w.cuda(), b.cuda(), r.cuda(), variant=variant)
        check(g, c, f"{variant} not taken: {name} {T}x4096 [{gpu_arch_tag()}]")
