"""GPU: the sampler's thread-block-cluster variants (cluster8, cluster16: sm_90, one launch, C CTAs a
row exchanging histograms through distributed shared memory) against the host emulation bit for bit,
on the shapes that reach their edge paths: slices that are empty (V < C) or uneven, candidates that
overflow a CTA's shared-memory list (a hot top-p), the LM head's statistics, penalties, per-row
configurations in one batch, graph replay, and the fallback to t1024 where a cluster cannot run
(more than 65535 rows; a build or GPU below sm_90, where every test here still holds). The general
suites of test_vocab_gpu.py iterate every variant too."""

import pytest
import torch
from mlops_testing import assert_bits_equal, gpu_arch_tag, randn, requires_cuda

import mlops.vocab as mv
from vocab_reference import stats_of

pytestmark = requires_cuda
TAG = gpu_arch_tag()
CLUSTER = [v["name"] for v in mv.sample_variants() if v["cluster"]]

MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.8),
    "top_k50": dict(temperature=0.8, top_k=50),
    "top_k1": dict(temperature=0.8, top_k=1),
    "top_k_large": dict(temperature=1.0, top_k=20000),
    "top_p": dict(temperature=0.8, top_p=0.9),
    "top_p_hot": dict(temperature=4.0, top_p=0.95),  # the crossing bin holds most of the row
    "min_p": dict(temperature=0.8, min_p=0.05),
    "all": dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
    "top_k_top_p_hot": dict(temperature=3.0, top_k=30000, top_p=0.99),
}


def test_cluster_variants_listed():
    names = {v["name"]: v for v in mv.sample_variants()}
    assert names["cluster8"]["cluster"] == 8 and names["cluster16"]["cluster"] == 16
    # below sm_90 (or in a build without sm_90 code) they fall back to t1024; on sm_90 SASS builds
    # they run as themselves
    major, _ = torch.cuda.get_device_capability()
    if major < 9:
        assert not mv.sample_variant_runs("cluster8")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", CLUSTER)
def test_cluster_bits_vs_host(mode, variant):
    for B, V in [(1, 151936), (5, 151936), (3, 32000), (2, 4099), (2, 100), (3, 7), (1, 1)]:
        z = randn((B, V), torch.float32, B * V + 3, scale=3.0)
        if V > 7:
            z[0, 3:7] = z[0, 7]  # ties
        cfg = MODES[mode]
        sc = mv.Sampler(B, V, device="cpu", seed=11, **cfg)
        sg = mv.Sampler(B, V, device="cuda", seed=11, variant=variant, **cfg)
        for step in range(3):
            c = sc(z.clone(), logprobs=True)
            g = sg(z.cuda(), logprobs=True)
            assert torch.equal(g.tokens.cpu(), c.tokens), f"{mode} {variant} {B}x{V} step {step} [{TAG}]"
            assert torch.equal(g.flags.cpu(), c.flags), f"{mode} {variant} {B}x{V} flags [{TAG}]"
            torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)
        assert torch.equal(sg.steps.cpu(), sc.steps)


@pytest.mark.parametrize("variant", CLUSTER)
def test_cluster_per_row_configs_specials_and_penalties(variant):
    B, V, L = 6, 50000, 200
    z = randn((B, V), torch.float32, 17, scale=2.5)
    z[1, 77] = float("nan")
    z[2, 5] = float("inf")
    z[3] = float("-inf")
    cfgs = [dict(temperature=0.7, top_p=0.9), dict(temperature=1.0), dict(temperature=0.9, top_k=40),
            dict(temperature=0.0), dict(temperature=1.2, top_k=500, top_p=0.8, min_p=0.01),
            dict(temperature=0.8, top_p=0.95, repetition_penalty=1.3, presence_penalty=0.2, frequency_penalty=0.1)]
    gen = torch.Generator().manual_seed(3)
    hist = torch.randint(-3, V + 3, (B, L), generator=gen, dtype=torch.int32)
    hlen = torch.tensor([200, 0, 50, 10, 120, 200], dtype=torch.int32)
    sc = mv.Sampler(B, V, device="cpu", seed=[5, 6, 7, 8, 9, 10], configs=cfgs)
    sg = mv.Sampler(B, V, device="cuda", seed=[5, 6, 7, 8, 9, 10], configs=cfgs, variant=variant)
    zc, zg = z.clone(), z.cuda()
    for _ in range(2):
        c = sc(zc, history=hist, history_len=hlen, logprobs=True)
        g = sg(zg, history=hist.cuda(), history_len=hlen.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), variant
        assert torch.equal(g.flags.cpu(), c.flags), variant
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)
    assert_bits_equal(zg, zc, f"penalized logits {variant}")  # NaN where the row had one


@pytest.mark.parametrize("variant", CLUSTER)
def test_cluster_penalties_of_repeating_short_and_long_histories_sanitizer_subset(variant):
    """Histories that repeat tokens (each drawn from 300 of the vocabulary, so most appear several times) with a
    frequency penalty, whose count changes the logit: 1 000 tokens, which the shared-memory count takes
    (MLOPS_SAMPLE_PENALTY_TABLE: at most 1 536; on by default since GPU run 213), and 3 000, which stay on the global
    workspace; the host's tokens, log-probabilities and penalized logits, the workspace back to zero (the next call's
    counts start from it)."""
    B, V = 3, 50000
    z = randn((B, V), torch.float32, 29, scale=2.5)
    cfg = dict(temperature=0.8, top_p=0.9, repetition_penalty=1.2, presence_penalty=0.3, frequency_penalty=0.4)
    gen = torch.Generator().manual_seed(11)
    pool = torch.randint(0, V, (300,), generator=gen, dtype=torch.int32)
    hist = pool[torch.randint(0, 300, (B, 3000), generator=gen)]
    hist[:, ::97] = -1  # not a token: skipped
    hlen = torch.tensor([1000, 3000, 0], dtype=torch.int32)
    sc = mv.Sampler(B, V, device="cpu", seed=4, **cfg)
    sg = mv.Sampler(B, V, device="cuda", seed=4, variant=variant, **cfg)
    zc, zg = z.clone(), z.cuda()
    for _ in range(2):
        c = sc(zc, history=hist, history_len=hlen, logprobs=True)
        g = sg(zg, history=hist.cuda(), history_len=hlen.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), variant
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0)
    assert_bits_equal(zg, zc, f"penalized logits {variant}")


@pytest.mark.parametrize("mode", ["greedy", "top_k50", "all", "top_p"])
@pytest.mark.parametrize("variant", CLUSTER)
def test_cluster_with_lm_head_stats(mode, variant):
    M, V, H = 4, 151936, 256
    x = randn((M, H), torch.bfloat16, 1).cuda()
    w = randn((V, H), torch.bfloat16, 2, scale=0.2).cuda()
    o = mv.lm_head(x, w, stats=True)
    cfg = MODES[mode]
    g = mv.Sampler(M, V, device="cuda", seed=4, variant=variant, **cfg)(o.logits.clone(), stats=o)
    oc = mv.LmHeadOutput(*[t.cpu() for t in o])
    c = mv.Sampler(M, V, device="cpu", seed=4, **cfg)(oc.logits.clone(), stats=oc)
    assert torch.equal(g.tokens.cpu(), c.tokens) and torch.equal(g.flags.cpu(), c.flags), (mode, variant)


@pytest.mark.parametrize("variant", CLUSTER)
def test_cluster_graph_replay_advances_step(variant):
    B, V = 3, 151936
    z = randn((B, V), torch.float32, 9, scale=3.0).cuda()
    s = mv.Sampler(B, V, device="cuda", seed=5, variant=variant, temperature=0.8, top_k=50, top_p=0.9)
    ref = mv.Sampler(B, V, device="cpu", seed=5, temperature=0.8, top_k=50, top_p=0.9)
    tokens = torch.empty(B, dtype=torch.int32, device="cuda")
    s(z.clone(), tokens=tokens)  # warm up (step 0)
    ref(z.cpu())
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        s(z, tokens=tokens)
    s.steps.fill_(1)
    for step in range(1, 4):
        g.replay()
        assert torch.equal(tokens.cpu(), ref(z.cpu()).tokens), f"replay at step {step}"
    assert s.steps.tolist() == [4] * B


def test_cluster_falls_back_above_65535_rows():
    B, V = 70000, 64
    z = randn((B, V), torch.float32, 2, scale=2.0)
    c = mv.Sampler(B, V, device="cpu", seed=1, temperature=0.9, top_p=0.9)(z.clone())
    g = mv.Sampler(B, V, device="cuda", seed=1, variant="cluster16", temperature=0.9, top_p=0.9)(z.cuda())
    assert torch.equal(g.tokens.cpu(), c.tokens)


@pytest.mark.parametrize("top_p", [0.5, 0.9])
@pytest.mark.parametrize("variant", [v for v in CLUSTER if "wide" in v or "tp" in v])
def test_wide_top_p_peaks_over_a_bulk(variant, top_p):
    """Two peaks (12.0, 12.01) over a bulk near 0 that holds ~32 % of the mass in a few wide bins far
    below them: top-p 0.5 crosses at a peak, top-p 0.9 in the bulk;
    both give the host emulation's tokens. (Session 9 tried binning only the elements near the max
    first, with a second round for such rows: 3 % faster at B = 1, 3 % slower at B = 64, reverted.)"""
    B, V = 3, 151936
    z = randn((B, V), torch.float32, 5, scale=0.3)
    for r in range(B):
        z[r, [(k * 7919 + r * 131) % V for k in range(2)]] = torch.tensor([12.0, 12.01])
    sc = mv.Sampler(B, V, device="cpu", seed=4, temperature=1.0, top_p=top_p)
    sg = mv.Sampler(B, V, device="cuda", seed=4, variant=variant, temperature=1.0, top_p=top_p)
    for step in range(3):
        c = sc(z.clone(), logprobs=True)
        g = sg(z.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), f"{variant} top_p {top_p} step {step} [{TAG}]"
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)


@pytest.mark.parametrize("variant", [v for v in CLUSTER if "tp" in v])
@pytest.mark.parametrize("near", [False, True])
def test_top_p_ties_in_a_level2_bin(variant, near):
    """Integer logits at T = 50 and top-p 0.25 (the kernel-on-host runner's case at V = 3000, and at 151936): the
    crossing bin (the logit 1) fits the gathered list at V = 3000 and holds ~450 elements in one level-2 bin, equal
    keys or (near) on consecutive floats 1, 1 + 2^-23, ..., more than the 32 the tp3 forms' one warp takes, so their
    rounds go on from level 2's bin; the host emulation's tokens."""
    for B, V in ((2, 3000), (3, 151936)):
        z = (randn((B, V), torch.float32, 17) * 2.0).trunc()
        for r in range(B if near else 0):
            at = (z[r] == 1.0).nonzero().flatten()
            z[r, at] = (torch.arange(at.numel(), dtype=torch.int32) + 0x3F800000).view(torch.float32)
        sc = mv.Sampler(B, V, device="cpu", seed=5, temperature=50.0, top_p=0.25)
        sg = mv.Sampler(B, V, device="cuda", seed=5, variant=variant, temperature=50.0, top_p=0.25)
        for step in range(2):
            c = sc(z.clone(), logprobs=True)
            g = sg(z.cuda(), logprobs=True)
            assert torch.equal(g.tokens.cpu(), c.tokens), f"{variant} V {V} step {step} [{TAG}]"
            torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)


@pytest.mark.parametrize("variant", CLUSTER)
def test_cluster_sanitizer_subset(variant):
    """Small rows through the cluster kernel's paths (what compute-sanitizer runs)."""
    B, V = 2, 5000
    z = randn((B, V), torch.float32, 31, scale=3.0)
    for cfg in (dict(temperature=0.0), dict(temperature=1.0), dict(temperature=0.3, top_p=0.9),
                dict(temperature=1.0, top_k=40), dict(temperature=0.8, top_k=3000, top_p=0.95, min_p=0.01)):
        c = mv.Sampler(B, V, device="cpu", seed=9, **cfg)(z.clone(), logprobs=True)
        g = mv.Sampler(B, V, device="cuda", seed=9, variant=variant, **cfg)(z.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), (variant, cfg)


@pytest.mark.parametrize("mode", ["greedy", "temperature", "min_p", "top_k50", "top_p"])
@pytest.mark.parametrize("B", [1, 8, 64])
def test_planned_variant_per_mode(mode, B):
    """variant=None: the mode-aware plan (the lean / gather cluster forms, t1024 for greedy with the
    head's statistics, ...) gives the host emulation's tokens, with and without the statistics."""
    V = 151936
    z = randn((B, V), torch.float32, B + 77, scale=3.0)
    cfg = MODES[mode]
    sg = mv.Sampler(B, V, device="cuda", seed=2, **cfg)
    sc = mv.Sampler(B, V, device="cpu", seed=2, **cfg)
    for with_stats in (False, True):
        zg = z.cuda()
        g = sg(zg, stats=stats_of(zg) if with_stats else None, logprobs=True)
        c = sc(z.clone(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), (mode, B, with_stats, sg._plans)
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0, equal_nan=True)


def test_staged_variants_run_staged_on_sm90():
    """The staged variants run as themselves at V = 151936 on an sm_90 build and GPU (else the bench
    would time the unstaged kernel under their names), and fall back to a variant that does run."""
    names = {v["name"] for v in mv.sample_variants()}
    major, _ = torch.cuda.get_device_capability()
    for name in ("cluster8_smem", "cluster16_smem", "cluster16_smem_t1024", "cluster8_smem_es", "cluster16_smem_es",
                 "cluster8_lean", "cluster16_lean", "cluster8_gather", "cluster16_gather", "cluster8_late",
                 "cluster16_late", "cluster8_wide", "cluster16_wide", "cluster8_tk", "cluster16_tk", "cluster8_tp",
                 "cluster16_tp", "cluster8_tp2", "cluster16_tp2", "cluster8_tp3", "cluster16_tp3", "cluster2_tp3g",
                 "cluster4_tp3g", "cluster2_tp3g_t512"):
        got = mv.sample_variant_runs_as(name, 64, 151936)
        assert got in names
        if major == 9 and mv.sample_variant_runs(name):
            assert got == name, (name, got, TAG)
        assert mv.sample_variant_runs_as(name, 70000, 64) == "t1024"


@pytest.mark.parametrize("variant", ["cluster2_tp3g", "cluster2_tp3g_t512", "cluster4_tp3g", "cluster16_wide"])
@pytest.mark.parametrize("row", ["full round", "near pass"])
def test_wide_bins_of_long_slices_do_not_wrap(variant, row):
    """The runner's two rows (tests/c/sample_kernel_on_host.cpp, session 41) on the device: ~76 000 equal weights in one
    wide bin of a global-slice CTA at C = 2, whose 16-bit halves' 32-bit sums wrapped before (the full round's bins
    where the near bins do not reach, the near pass's where they do): the host's tokens and log-probabilities."""
    V = 151936
    z = torch.empty(1, V)
    if row == "full round":  # 10.5 over 100 000 zeros, the rest just below -1; top-p 0.9
        z[0, :100000], tail, top, top_p = 0.0, -1.0, 10.5, 0.9
    else:  # 10.0284 over 100 000 ones (each weighing ~257 500), the rest just below 0.5; top-p 0.8
        z[0, :100000], tail, top, top_p = 1.0, 0.5, 10.0284, 0.8
    z[0, 100000:] = tail - 1e-6 * torch.arange(V - 100000, dtype=torch.float32)
    z[0, 7] = top
    for step in range(2):
        c = mv.Sampler(1, V, device="cpu", seed=3 + step, temperature=1.0, top_p=top_p)(z.clone(), logprobs=True)
        g = mv.Sampler(1, V, device="cuda", seed=3 + step, variant=variant, temperature=1.0, top_p=top_p)(
            z.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), (variant, row, step)
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0)


@pytest.mark.parametrize("variant", ["cluster2_tp3g", "cluster2_tp3g_t512", "cluster4_tp3g", "cluster8_tp3"])
@pytest.mark.parametrize("row", ["list over, bin fits", "crossing 15 bins down"])
def test_near_codes_list_equals_host_sanitizer_subset(variant, row):
    """The runner's two rows of session 42 (tests/c/sample_kernel_on_host.cpp, flat 3 and 4) on the device: the
    global-slice forms list the crossing bin and above from the near pass's codes (list_nib). 5 000 logits 10 over 100
    distinct logits 9 .. 9.495 (top-p 0.997: a CTA's list over kClusterCand at C = 2, the bin's entries alone fitting
    the gather), and one logit 10 over 40 logits 0.8 at T = 4 (top-p 0.5: the crossing 15 near bins below the max's,
    past the codes, so listed from the mask): the host's tokens and log-probabilities, two steps."""
    V = 40000
    v = torch.arange(V)
    if row == "list over, bin fits":
        z = torch.full((1, V), -20.0)
        z[0, v % 400 == 5] = 9.0 + 0.005 * (v[v % 400 == 5] // 400).float()
        z[0, v % 8 == 3] = 10.0
        temperature, top_p = 1.0, 0.997
    else:
        z = (-30.0 - 1e-5 * v.float()).reshape(1, V)
        z[0, v % 1000 == 3] = 0.8
        z[0, 7] = 10.0
        temperature, top_p = 4.0, 0.5
    for step in range(2):
        c = mv.Sampler(1, V, device="cpu", seed=5 + step, temperature=temperature, top_p=top_p)(z.clone(), logprobs=True)
        g = mv.Sampler(1, V, device="cuda", seed=5 + step, variant=variant, temperature=temperature, top_p=top_p)(
            z.cuda(), logprobs=True)
        assert torch.equal(g.tokens.cpu(), c.tokens), (variant, row, step)
        torch.testing.assert_close(g.logprobs.cpu(), c.logprobs, atol=1e-6, rtol=0)
