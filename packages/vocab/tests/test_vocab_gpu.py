"""GPU: every kernel and variant against the host emulation bit for bit (embed, the CUDA-core LM
head with its statistics, the sampler's tokens / flags / penalized logits), the sampler's token
identical across variants for the same (logits, config, seed, step), >= 1e6 draws a mode against
the exact masses, mapped pinned tables, CUDA-graph capture and replay, torch.compile. Run once per
build of the GPU suite (sm_90 SASS and compute_61 / 70 / 75 / 80 PTX JIT-compiled by the driver:
ci/gpu_tests.py), so the cvt.rn.bf16x2 path (sm_80+) and the integer rounding below it are both
held to the host's bits. Tests named *sanitizer_subset* are the small ones compute-sanitizer runs."""

import math

import pytest
import torch
from mlops_testing import assert_bits_equal, gpu_arch_tag, randn, requires_cuda
from vocab_reference import lm_head64, softmax_masses

import mlops.vocab as mv

pytestmark = requires_cuda
EMBED_VARIANTS = [v["name"] for v in mv.embed_variants()]
LM_VARIANTS = [v["name"] for v in mv.lm_head_variants()]
BITWISE_LM = [v["name"] for v in mv.lm_head_variants() if v["bitwise_host"]]
SAMPLE_VARIANTS = [v["name"] for v in mv.sample_variants()]
TAG = gpu_arch_tag()


def cuda(*ts):
    return [t.cuda() if isinstance(t, torch.Tensor) else t for t in ts]


# ---- embed --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16, torch.float32))
@pytest.mark.parametrize("variant", EMBED_VARIANTS)
def test_embed_bits(dtype, variant):
    for T, V, H in [(1, 100, 256), (7, 1000, 4096), (64, 50, 1000), (3, 20, 40), (300, 151, 8192)]:
        table = randn((V, H), dtype, V * H, scale=2.0)
        w = randn(H, torch.bfloat16, H)
        ids = torch.randint(-2, V + 2, (T,), generator=torch.Generator().manual_seed(T))
        for id_dtype in (torch.int32, torch.int64):
            c = mv.embed(ids.to(id_dtype), table, w, eps=1e-6, sums=True)
            g = mv.embed(*cuda(ids.to(id_dtype), table, w), eps=1e-6, sums=True, variant=variant)
            for name, a, b in zip(c._fields, g, c):
                assert_bits_equal(a, b, f"embed {name} {dtype} {T}x{V}x{H} {variant} [{TAG}]")


def test_embed_mapped_pinned_table_sanitizer_subset():
    table = randn((500, 1024), torch.bfloat16, 3).pin_memory()
    ids = torch.tensor([1, 499, 500, 7], dtype=torch.int32)
    c = mv.embed(ids, table, eps=1e-6)
    g = mv.embed(ids.cuda(), table, eps=1e-6)
    assert_bits_equal(g.x, c.x, "pinned table rows")
    assert_bits_equal(g.rms_r, c.rms_r, "pinned table r")
    assert int(g.oov) == 1


def test_embed_oov_never_reads_outside_sanitizer_subset():
    table = randn((16, 256), torch.float32, 4).cuda()
    ids = torch.tensor([0, 15, 16, -1, 2**31 - 1], dtype=torch.int64, device="cuda")
    o = mv.embed(ids, table, sums=True)
    assert int(o.oov) == 1 and torch.count_nonzero(o.x[2:]) == 0


# ---- lm_head ------------------------------------------------------------------------------
SHAPES = [(1001, 512), (37, 1000), (4099, 4096), (5, 8), (32000, 2048)]


@pytest.mark.parametrize("variant", BITWISE_LM)
@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 8])
def test_lm_head_bits(variant, M):
    for V, H in SHAPES:
        x = randn((M, H), torch.bfloat16, M + H)
        w = randn((V, H), torch.bfloat16, V, scale=0.05)
        r = torch.rand(M, generator=torch.Generator().manual_seed(M)) + 0.5
        c = mv.lm_head(x, w, row_scale=r, logit_scale=0.5, stats=True)
        g = mv.lm_head(*cuda(x, w), row_scale=r.cuda(), logit_scale=0.5, stats=True, variant=variant)
        for name, a, b in zip(c._fields, g, c):
            assert_bits_equal(a, b, f"lm_head {name} M={M} {V}x{H} {variant} [{TAG}]")


@pytest.mark.parametrize("variant", LM_VARIANTS)
def test_lm_head_every_variant_near_float64(variant):
    """Every instance (bitwise ones and any tensor-core one) against float64 within the fp32 bound."""
    if not mv.lm_head_variant_runs(variant):
        pytest.skip(f"{variant} does not run on this GPU / build [{TAG}]")
    info = next(v for v in mv.lm_head_variants() if v["name"] == variant)
    # CUDA cores: fmaf chains of <= H/8 terms + 8 levels of additions (round to nearest); the MMA
    # truncates its internal sums (up to 1 ulp an accumulation instead of 1/2): twice the bound
    factor = 1 if info["bitwise_host"] else 2
    for M, V, H in [(8, 4099, 4096), (1, 1001, 512), (3, 37, 1000), (5, 77, 8)]:
        x = randn((M, H), torch.bfloat16, M)
        w = randn((V, H), torch.bfloat16, V, scale=0.05)
        r = torch.rand(M, generator=torch.Generator().manual_seed(M)) + 0.5
        o = mv.lm_head(*cuda(x, w), row_scale=r.cuda(), stats=True, variant=variant)
        g = o.logits.cpu().double()
        mag = (x.double().abs() @ w.double().abs().T) * r.double()[:, None]
        bound = factor * ((H / 8 + 8) * 2**-24 * mag) + 1e-30
        err = (g - lm_head64(x, w, r)).abs()
        assert float((err / bound).max()) <= 1.0, (variant, M, V, H, float((err / bound).max()))
        # the statistics describe the logits this instance wrote
        assert torch.equal(o.argmax.cpu(), o.logits.argmax(1).cpu()), variant
        assert int(o.key_hist.sum()) == M * V


def keys(t: torch.Tensor) -> torch.Tensor:
    b = t.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return torch.where(b >= 0x80000000, (~b) & 0xFFFFFFFF, b | 0x80000000)


_REFERENCES: dict = {}


def _reference(tag, kind, make):
    """The CPU references of one input (the same x, w, r for every variant: tags name the seeded
    inputs), computed once: the host emulation and the float64 product dominate the file's time."""
    if (tag, kind) not in _REFERENCES:
        _REFERENCES[(tag, kind)] = make()
    return _REFERENCES[(tag, kind)]


def check_lm_head_variant(variant, x, w, r, out_pad=0, tag=""):
    """One call of an instance on (possibly strided) x, w: bitwise instances equal the host
    emulation; the others are within twice the fp32 bound of float64 (the MMA truncates its
    internal sums). The statistics describe the logits written (max, lowest argmax, key counts
    exactly), and nothing is written past the logits' columns."""
    info = next(v for v in mv.lm_head_variants() if v["name"] == variant)
    M, V = x.shape[0], w.shape[0]
    H = x.shape[1]
    buf = torch.full((M, V + out_pad), 7.0, device="cuda")
    o = mv.lm_head(x, w, row_scale=r.cuda(), logit_scale=0.5, stats=True, out=buf[:, :V], variant=variant)
    assert bool((buf[:, V:] == 7.0).all()), f"{variant} wrote past the logits' columns {tag}"
    g = buf[:, :V].cpu()
    if info["bitwise_host"]:
        c = _reference(tag, "host", lambda: mv.lm_head(x.cpu(), w.cpu(), row_scale=r, logit_scale=0.5))
        assert_bits_equal(g, c, f"lm_head {variant} {tag} [{TAG}]")
    else:
        def f64():
            xc, wc = x.cpu(), w.cpu()
            mag = (xc.double().abs() @ wc.double().abs().T) * r.double()[:, None] * 0.5
            return lm_head64(xc, wc, r) * 0.5, 2 * ((H / 8 + 8) * 2**-24 * mag) + 1e-30
        ref, bound = _reference(tag, "f64", f64)
        worst = float(((g.double() - ref).abs() / bound).max())
        assert worst <= 1.0, (variant, tag, worst)
    assert torch.equal(o.argmax.cpu(), g.argmax(1)), (variant, tag)
    assert_bits_equal(o.max.cpu(), g.max(1).values, f"max {variant} {tag}")
    hist = torch.stack([torch.bincount(keys(g[m]) >> 24, minlength=256) for m in range(M)]).to(torch.int32)
    assert torch.equal(o.key_hist.cpu(), hist), (variant, tag)


@pytest.mark.parametrize("variant", LM_VARIANTS)
def test_lm_head_padded_strides_sanitizer_subset(variant):
    """Padded strides of x, W and the logits, V not a multiple of any tile, H = 264 (one unit and 8
    columns: a warp with four 64-column chunks, one with a partial chunk, six with none), enough rows
    for several tiles a CTA (the pipelined instances reuse their stages across tiles)."""
    if not mv.lm_head_variant_runs(variant):
        pytest.skip(f"{variant} does not run on this GPU / build [{TAG}]")
    M, V, H = 3, 32 * 132 * 2 + 77, 264
    xb = randn((M, H + 8), torch.bfloat16, 1).cuda()
    wb = randn((V, H + 16), torch.bfloat16, 2, scale=0.05).cuda()
    r = torch.rand(M, generator=torch.Generator().manual_seed(3)) + 0.5
    check_lm_head_variant(variant, xb[:, :H], wb[:, :H], r, out_pad=5, tag=f"strided {M}x{V}x{H}")


@pytest.mark.parametrize("variant", LM_VARIANTS)
@pytest.mark.parametrize("M", range(1, 9))
def test_lm_head_every_variant_every_m(variant, M):
    """M = 1 .. 8 for every instance that runs here, V not a multiple of the tiles (1 .. 31 rows in
    the last), H a multiple of 64 or not (a partial last chunk, segments of unequal or no units),
    vocabularies spanning many tiles per CTA, and padded strides."""
    if not mv.lm_head_variant_runs(variant):
        pytest.skip(f"{variant} does not run on this GPU / build [{TAG}]")
    r = torch.rand(M, generator=torch.Generator().manual_seed(M)) + 0.5
    for V, H, pad in [(4099, 4096, 0), (12011, 2048, 64), (9005, 1000, 8), (1001, 512, 0), (37, 1000, 24),
                      (77, 8, 8), (31, 2056, 0)]:
        x = randn((M, H + pad), torch.bfloat16, M + H).cuda()[:, :H]
        w = randn((V, H + pad), torch.bfloat16, V, scale=0.05).cuda()[:, :H]
        check_lm_head_variant(variant, x, w, r, out_pad=pad, tag=f"M={M} {V}x{H} pad {pad}")


def test_lm_head_graph_replay():
    M, V, H = 4, 32000, 1024
    x, w = cuda(randn((M, H), torch.bfloat16, 1), randn((V, H), torch.bfloat16, 2, scale=0.05))
    mv.lm_head(x, w, stats=True)  # warm-up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = mv.lm_head(x, w, stats=True)
    x.copy_(randn((M, H), torch.bfloat16, 3).cuda())
    g.replay()
    fresh = mv.lm_head(x, w, stats=True)
    for name, a, b in zip(out._fields, out, fresh):
        assert_bits_equal(a, b, f"graph replay {name}")


@pytest.mark.parametrize("variant", [v for v in LM_VARIANTS if "stream" in v or "pipe" in v])
def test_lm_head_stream_pdl_graph_and_back_to_back(variant):
    """The stream candidates, and on sm_90 code the pipe instances too (session 18), launch with the
    statistics as programmatic dependents (the clear kernel -> the head -> the decode): captured in a
    graph and replayed they equal a fresh call bit for bit, and calls queued back to back on
    different inputs (no synchronisation between) each return the statistics of their own logits."""
    if not mv.lm_head_variant_runs(variant):
        pytest.skip(f"{variant} does not run on this GPU / build [{TAG}]")
    M, V, H = 3, 32000, 4096
    x, w = cuda(randn((M, H), torch.bfloat16, 1), randn((V, H), torch.bfloat16, 2, scale=0.05))
    mv.lm_head(x, w, stats=True, variant=variant)  # warm-up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = mv.lm_head(x, w, stats=True, variant=variant)
    x.copy_(randn((M, H), torch.bfloat16, 3).cuda())
    g.replay()
    fresh = mv.lm_head(x, w, stats=True, variant=variant)
    for name, a, b in zip(out._fields, out, fresh):
        assert_bits_equal(a, b, f"{variant} graph replay {name}")
    xs = [randn((M, H), torch.bfloat16, 10 + i).cuda() for i in range(4)]
    outs = [mv.lm_head(xi, w, stats=True, variant=variant) for xi in xs]
    for o in outs:
        assert torch.equal(o.argmax, o.logits.argmax(1)) and torch.equal(o.max, o.logits.max(1).values), variant
        assert o.key_hist.sum(1).tolist() == [V] * M, variant


# ---- sampler ------------------------------------------------------------------------------
MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.7),
    "top_k": dict(temperature=1.0, top_k=20),
    "top_p": dict(temperature=0.9, top_p=0.8),
    "min_p": dict(temperature=1.0, min_p=0.05),
    "all": dict(temperature=1.3, top_k=50, top_p=0.9, min_p=0.02),
    "top_k_large": dict(temperature=1.0, top_k=5000),  # more than the 2048 a row moves to shared memory
    "top_p_cold": dict(temperature=0.3, top_p=0.9),    # a small nucleus: the shared-memory path
    "top_k_top_p_cold": dict(temperature=0.3, top_k=3000, top_p=0.95),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", SAMPLE_VARIANTS)
def test_sampler_bits_vs_host(mode, variant):
    for B, V in [(4, 151936), (16, 32000), (3, 4099), (2, 1)]:
        z = randn((B, V), torch.float32, B * V, scale=3.0)
        if V > 7:
            z[0, :7] = z[0, 7]  # ties
        cfg = MODES[mode]
        sc = mv.Sampler(B, V, device="cpu", seed=42, **cfg)
        sg = mv.Sampler(B, V, device="cuda", seed=42, variant=variant, **cfg)
        for step in range(3):
            c = sc(z.clone(), logprobs=True)
            g = sg(z.cuda(), logprobs=True)
            assert torch.equal(g.tokens.cpu(), c.tokens), f"{mode} {variant} {B}x{V} step {step} [{TAG}]"
            assert torch.equal(g.flags.cpu(), c.flags)
            torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)
        assert torch.equal(sg.steps.cpu(), sc.steps)


@pytest.mark.parametrize("mode", ["greedy", "top_k", "all", "top_p"])
@pytest.mark.parametrize("variant", SAMPLE_VARIANTS)
def test_sampler_with_lm_head_stats_bits(mode, variant):
    """Fed the LM head's statistics (no max pass, top-k's first level from the head's histogram):
    the same tokens as the host emulation and as the GPU without statistics."""
    M, V, H = 8, 151936, 512
    x, w = cuda(randn((M, H), torch.bfloat16, 1), randn((V, H), torch.bfloat16, 2, scale=0.2))
    o = mv.lm_head(x, w, stats=True)
    cfg = MODES[mode]
    g = mv.Sampler(M, V, device="cuda", seed=4, variant=variant, **cfg)(o.logits.clone(), stats=o)
    n = mv.Sampler(M, V, device="cuda", seed=4, variant=variant, **cfg)(o.logits.clone())
    oc = mv.LmHeadOutput(*[t.cpu() for t in o])
    c = mv.Sampler(M, V, device="cpu", seed=4, **cfg)(oc.logits.clone(), stats=oc)
    assert torch.equal(g.tokens.cpu(), c.tokens) and torch.equal(g.tokens, n.tokens), (mode, variant)
    assert torch.equal(g.flags.cpu(), c.flags)


@pytest.mark.parametrize("variant", SAMPLE_VARIANTS)
def test_sampler_penalties_bits(variant):
    B, V, L = 4, 50000, 300
    z = randn((B, V), torch.float32, 5, scale=2.0)
    gen = torch.Generator().manual_seed(1)
    hist = torch.randint(-5, V + 5, (B, L), generator=gen, dtype=torch.int32)
    hist[:, 100:200] = hist[:, :100]  # repeats
    hlen = torch.tensor([300, 0, 17, 250], dtype=torch.int32)
    cfg = dict(temperature=0.8, top_p=0.95, repetition_penalty=1.2, presence_penalty=0.3, frequency_penalty=0.1)
    sc, sg = mv.Sampler(B, V, device="cpu", **cfg), mv.Sampler(B, V, device="cuda", variant=variant, **cfg)
    zc, zg = z.clone(), z.cuda()
    c = sc(zc, history=hist, history_len=hlen)
    g = sg(zg, history=hist.cuda(), history_len=hlen.cuda())
    assert_bits_equal(zg, zc, "penalized logits")
    assert torch.equal(g.tokens.cpu(), c.tokens)
    assert int(sg.penalty_counts.abs().sum()) == 0, "the counts workspace must be zero after a call"


def test_sampler_nan_inf_sanitizer_subset():
    z = randn((4, 3000), torch.float32, 6)
    z[0, 5] = float("nan")
    z[1, 9] = float("inf")
    z[2] = float("-inf")
    z[3] = float("nan")
    c = mv.Sampler(4, 3000, device="cpu", temperature=1.0, top_p=0.9)(z.clone())
    g = mv.Sampler(4, 3000, device="cuda", temperature=1.0, top_p=0.9)(z.cuda())
    assert torch.equal(g.tokens.cpu(), c.tokens) and torch.equal(g.flags.cpu(), c.flags)
    assert g.flags.tolist() == [1, 2, 4, 5]


@pytest.mark.parametrize("mode", [m for m in MODES if m != "greedy"])
def test_sampler_million_draws_match_exact_masses(mode):
    """2^20 draws (rows of the same logits, step = row index, one seed): chi-square over the kept
    tokens against the exact masses (mlops.vocab.row_weights); the bound is the 1e-6 upper tail of
    chi-square (Wilson-Hilferty). Tokens without mass must never appear. The masses themselves are
    checked against the renormalised float64 softmax (4e-7 relative + 2^-30)."""
    V, N = 64, 1 << 20
    z = randn(V, torch.float32, 21, scale=1.5)
    cfg = MODES[mode]
    w, S = mv.row_weights(z, **cfg)
    p = w.double() / S
    ref = softmax_masses(z, **cfg)
    assert bool(((p - ref).abs() <= 4e-7 * ref + 2**-30).all())
    s = mv.Sampler(N, V, device="cuda", seed=[99] * N, **cfg)
    s.steps.copy_(torch.arange(N, device="cuda"))
    out = s(z.cuda()[None].expand(N, V).contiguous())
    counts = torch.bincount(out.tokens.long().cpu(), minlength=V).double()
    assert bool((counts[p == 0] == 0).all()), "a token without mass was drawn"
    kept = p > 0
    k = int(kept.sum()) - 1
    if k == 0:
        assert counts[kept].item() == N
        return
    exp = p[kept] * N
    assert float(exp.min()) >= 5, "chi-square needs >= 5 expected draws a cell (these logits give >= 11)"
    chi2 = float(((counts[kept] - exp) ** 2 / exp).sum())
    limit = k * (1 - 2 / (9 * k) + 4.75 * math.sqrt(2 / (9 * k))) ** 3
    assert chi2 < limit, (mode, chi2, limit)


def test_sampler_token_independent_of_variant_and_batch_position():
    V = 151936
    z = randn((1, V), torch.float32, 8, scale=3.0).cuda()
    toks = set()
    for variant in SAMPLE_VARIANTS:
        for B, pos in [(1, 0), (8, 5), (64, 63)]:
            zz = randn((B, V), torch.float32, B, scale=3.0).cuda()
            zz[pos] = z[0]
            seeds = [0] * B
            seeds[pos] = 777
            s = mv.Sampler(B, V, device="cuda", seed=seeds, variant=variant, temperature=0.9, top_k=100, top_p=0.9)
            s.steps.fill_(12)
            toks.add(int(s(zz).tokens[pos]))
    assert len(toks) == 1, toks


@pytest.mark.parametrize("variant", ["t1024", "split"])
def test_sampler_graph_replay_advances_step(variant):
    B, V = 8, 32000
    z = randn((B, V), torch.float32, 9, scale=3.0).cuda()
    s = mv.Sampler(B, V, device="cuda", seed=5, variant=variant, temperature=1.0, top_p=0.9)
    ref = mv.Sampler(B, V, device="cpu", seed=5, temperature=1.0, top_p=0.9)
    tokens = torch.empty(B, dtype=torch.int32, device="cuda")
    s(z.clone(), tokens=tokens)  # warm up (step 0)
    ref(z.cpu())
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        s(z, tokens=tokens)
    s.steps.fill_(1)  # capture does not run the kernel; replays see steps 1, 2, 3
    for step in range(1, 4):
        g.replay()
        want = ref(z.cpu()).tokens
        assert torch.equal(tokens.cpu(), want), f"replay at step {step}"
    assert s.steps.tolist() == [4] * B


# ---- torch.compile ------------------------------------------------------------------------
def test_compile_fullgraph_same_bits():
    V, H, M = 1000, 512, 2
    ids = torch.tensor([3, 7], dtype=torch.int32, device="cuda")
    table = randn((V, H), torch.bfloat16, 1).cuda()
    w = randn(H, torch.bfloat16, 2).cuda()
    head = randn((V, H), torch.bfloat16, 3, scale=0.05).cuda()

    def step(ids):
        e = mv.embed(ids, table, w, eps=1e-6)
        return mv.lm_head(e.xw, head, row_scale=e.rms_r, stats=True)

    eager = step(ids)
    compiled = torch.compile(step, fullgraph=True)(ids)
    for name, a, b in zip(eager._fields, eager, compiled):
        assert_bits_equal(a, b, f"compiled {name}")
    assert M == eager.logits.shape[0]


@pytest.mark.parametrize("variant", ["t256", "split"])
def test_sampler_paths_sanitizer_subset(variant):
    """Small rows through every path of the sampler (row passes, the shared-memory candidates, the
    split phases, penalties), compared with the host: what compute-sanitizer runs."""
    B, V = 3, 5000
    z = randn((B, V), torch.float32, 31, scale=3.0)
    hist = torch.tensor([[1, 2, 2, 4999], [7, -1, 5000, 3], [0, 0, 0, 0]], dtype=torch.int32)
    hlen = torch.tensor([4, 4, 2], dtype=torch.int32)
    for cfg in (dict(temperature=1.0), dict(temperature=0.3, top_p=0.9), dict(temperature=1.0, top_k=40),
                dict(temperature=0.8, top_k=3000, top_p=0.95, min_p=0.01, repetition_penalty=1.3)):
        c = mv.Sampler(B, V, device="cpu", seed=9, **cfg)(z.clone(), history=hist, history_len=hlen, logprobs=True)
        g = mv.Sampler(B, V, device="cuda", seed=9, variant=variant, **cfg)(
            z.cuda(), history=hist.cuda(), history_len=hlen.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), (variant, cfg)
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)


def test_lm_head_decode_best_kernel_equals_torch_decode():
    """LmHeadOutput.max / argmax come from one kernel (mlops_lm_head_decode_best) on CUDA: the same
    bits as decode_best's torch expression, for every kind of key (finite, +-inf, NaN, 0: no row)."""
    from mlops.vocab._lm_head import _decode_best_into

    vals = torch.tensor([1.5, -2.25, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3e-42, -7e37])
    bits = vals.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    key = torch.where(bits >= 0x80000000, (~bits) & 0xFFFFFFFF, bits | 0x80000000)
    idx = torch.tensor([0, 1, 7, 151935, 2**31, 5, 9, 2**32 - 1, 3])
    best = torch.cat([(key << 32) | (0xFFFFFFFF - idx), torch.zeros(1, dtype=torch.int64)]).cuda()
    mx = torch.empty(best.shape[0], device="cuda")
    am = torch.empty(best.shape[0], dtype=torch.int64, device="cuda")
    _decode_best_into(best, mx, am)
    ref_mx, ref_am = mv.decode_best(best)
    assert_bits_equal(mx, ref_mx, "decode_best max")
    assert torch.equal(am, ref_am)
    # the statistics of lm_head: best and key_hist in one buffer, cleared by one memset, every call
    x = randn((3, 256), torch.bfloat16, 5).cuda()
    w = randn((5000, 256), torch.bfloat16, 6, scale=0.2).cuda()
    for _ in range(2):
        o = mv.lm_head(x, w, stats=True)
        assert torch.equal(o.argmax, o.logits.argmax(1)) and torch.equal(o.max, o.logits.max(1).values)
        assert o.key_hist.sum(1).tolist() == [5000] * 3 and o.key_hist.is_contiguous()
