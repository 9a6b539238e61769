"""CPU: the sampler's host emulation (the definition in mlops/vocab.h). Its exact integer masses
against the float64 renormalised softmax of each mode, greedy == the lowest argmax, penalties as
HF / OpenAI define them, NaN / inf flags, determinism in (logits, config, seed, step), the step
advancing, and a statistical test of the draws against the exact masses."""

import math

import pytest
import torch
from mlops_testing import randn
from vocab_reference import penalize64, softmax_masses

import mlops.vocab as mv

MODES = {
    "temperature": dict(temperature=0.7),
    "top_k": dict(temperature=1.0, top_k=20),
    "top_p": dict(temperature=0.9, top_p=0.8),
    "min_p": dict(temperature=1.0, min_p=0.05),
    "top_k_top_p_min_p": dict(temperature=1.3, top_k=50, top_p=0.9, min_p=0.02),
    "hot": dict(temperature=4.0, top_p=0.95),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("V", [1000, 32000, 4099])
def test_masses_against_float64_softmax(mode, V):
    z = randn(V, torch.float32, V, scale=3.0)
    cfg = MODES[mode]
    w, S = mv.row_weights(z, **cfg)
    assert S == int(w.sum()) and S > 0
    p = w.double() / S
    ref = softmax_masses(z, **cfg)
    # Same support (which tokens are kept) ...
    assert torch.equal(p > 0, ref > 0) or _support_differs_only_below(p, ref, 2**-31)
    # ... and the same probabilities: the weights are exp to ~2 ulp (2^-23 relative) quantised to
    # 2^-31 of the top token's weight, so |p - ref| <= 4e-7 * ref + 2^-31 * V / S_rel.
    tol = 4e-7 * ref + 2**-30
    assert bool(((p - ref).abs() <= tol).all()), float((p - ref).abs().max())


def _support_differs_only_below(p, ref, eps):
    d = (p > 0) != (ref > 0)
    return bool((ref[d] < eps).all() and (p[d] < eps).all())


def test_ties_at_top_k_are_kept():
    z = torch.tensor([1.0, 3.0, 2.0, 3.0, 2.0, 2.0, 0.0])
    w, S = mv.row_weights(z, temperature=1.0, top_k=3)
    assert (w > 0).tolist() == [False, True, True, True, True, True, False]


def _sample(z, seed=0, step=0, logprobs=False, variant=None, **cfg):
    s = mv.Sampler(z.shape[0], z.shape[1], device="cpu", seed=seed, variant=variant, **cfg)
    s.steps.fill_(step)
    return s(z.clone(), logprobs=logprobs), s


def test_greedy_is_lowest_argmax():
    z = randn((4, 1000), torch.float32, 1)
    z[1, [10, 500, 999]] = 100.0
    for cfg in (dict(temperature=0.0), dict(temperature=0.8, top_k=1)):
        out, _ = _sample(z, **cfg)
        assert out.tokens.tolist()[1] == 10
        assert out.tokens.long().tolist() == [int(torch.argmax(z[i])) for i in range(4)]
        assert out.flags.tolist() == [0, 0, 0, 0]


def test_logprobs():
    z = randn((3, 500), torch.float32, 2, scale=2.0)
    out, _ = _sample(z, logprobs=True, temperature=0.0)
    ref = torch.log_softmax(z.double(), -1).gather(1, out.tokens.long()[:, None])[:, 0]
    assert torch.allclose(out.logprobs.double(), ref, atol=1e-6)
    cfg = dict(temperature=0.8, top_k=40)
    out, _ = _sample(z, logprobs=True, **cfg)
    for i in range(3):
        p = softmax_masses(z[i], **cfg)[out.tokens[i].long()]
        assert math.isclose(float(out.logprobs[i]), math.log(float(p)), abs_tol=1e-6)


def test_deterministic_in_seed_and_step_and_step_advances():
    z = randn((8, 2000), torch.float32, 3, scale=2.0)
    a, s = _sample(z, seed=[5] * 8, temperature=1.0)
    # the same logits, seed and step in every row: the same token in every row
    assert len(set(a.tokens.tolist())) == 1 or not torch.equal(z[0], z[1])
    same = z[:1].expand(8, -1).contiguous()
    b, s = _sample(same, seed=[5] * 8, temperature=1.0)
    assert len(set(b.tokens.tolist())) == 1
    assert s.steps.tolist() == [1] * 8
    c = s(same.clone())  # step 1 now
    assert s.steps.tolist() == [2] * 8
    d, _ = _sample(same, seed=[5] * 8, step=1, temperature=1.0)
    assert torch.equal(c.tokens, d.tokens)


def test_rows_have_their_own_configs():
    z = randn((3, 300), torch.float32, 4)
    s = mv.Sampler(3, 300, device="cpu", configs=[dict(temperature=0.0), dict(temperature=1.0, top_k=1),
                                                   dict(temperature=1.0, top_k=3)])
    out = s(z.clone())
    top3 = set(torch.topk(z[2], 3).indices.tolist())
    assert out.tokens[0] == torch.argmax(z[0]) and out.tokens[1] == torch.argmax(z[1]) and int(out.tokens[2]) in top3


def test_penalties_in_place_as_hf_and_openai():
    z = randn((2, 100), torch.float32, 5, scale=2.0)
    hist = torch.tensor([[3, 3, 7, -1, 150, 99], [1, 2, 3, 4, 5, 6]], dtype=torch.int32)
    hlen = torch.tensor([5, 0], dtype=torch.int32)
    s = mv.Sampler(2, 100, device="cpu", temperature=0.0, repetition_penalty=1.3, presence_penalty=0.5,
                   frequency_penalty=0.25)
    zz = z.clone()
    s(zz, history=hist, history_len=hlen)
    assert torch.equal(zz[0], penalize64(z[0], [3, 3, 7, -1, 150], 1.3, 0.5, 0.25))
    assert torch.equal(zz[1], z[1])  # history_len 0: untouched
    assert int(s.penalty_counts.abs().sum()) == 0  # the workspace is zero again


def test_nan_and_inf_are_flagged_and_fall_back_to_greedy():
    z = randn((4, 64), torch.float32, 6)
    z[0, 5] = float("nan")
    z[1, 9] = float("inf")
    z[2] = float("-inf")
    z[3, :] = float("nan")
    out, _ = _sample(z, temperature=1.0, top_p=0.9)
    assert out.flags.tolist() == [1, 2, 4, 1 | 4]
    assert out.tokens.tolist()[1] == 9 and out.tokens.tolist()[2] == 0 and out.tokens.tolist()[3] == 0
    zz = z[0].clone()
    zz[5] = float("-inf")
    assert out.tokens.tolist()[0] == int(torch.argmax(zz))


@pytest.mark.parametrize("mode", ["temperature", "top_k_top_p_min_p"])
def test_draws_match_exact_masses(mode):
    """200000 draws (rows of the same logits, step = row index) on the host: chi-square against the
    exact masses with the kept tokens as cells; the 1e-6 tail of chi-square (via Wilson-Hilferty)."""
    V, N = 24, 200000
    z = randn(V, torch.float32, 11, scale=1.5)
    cfg = MODES[mode]
    w, S = mv.row_weights(z, **cfg)
    s = mv.Sampler(N, V, device="cpu", seed=[1234] * N, **cfg)
    s.steps.copy_(torch.arange(N))
    out = s(z[None].expand(N, V).contiguous())
    counts = torch.bincount(out.tokens.long(), minlength=V).double()
    p = w.double() / S
    assert bool((counts[p == 0] == 0).all()), "a token without mass was drawn"
    kept = p > 0
    exp = p[kept] * N
    chi2 = float(((counts[kept] - exp) ** 2 / exp).sum())
    k = int(kept.sum()) - 1
    # Wilson-Hilferty: chi2/k ~ N(1 - 2/(9k), 2/(9k))^3; z = 4.75 is the 1e-6 one-sided quantile
    limit = k * (1 - 2 / (9 * k) + 4.75 * math.sqrt(2 / (9 * k))) ** 3
    assert chi2 < limit, (chi2, limit)


@pytest.mark.parametrize("cfg", [dict(temperature=0.0), dict(temperature=0.9, top_k=30), dict(temperature=0.7, top_p=0.9)])
def test_lm_head_stats_give_the_same_tokens(cfg):
    """The sampler fed the LM head's statistics (no max pass; top-k's first level from the histogram)
    draws the same tokens as without them."""
    M, V, H = 5, 3001, 256
    x = randn((M, H), torch.bfloat16, 1)
    w = randn((V, H), torch.bfloat16, 2)
    o = mv.lm_head(x, w, stats=True)
    a = mv.Sampler(M, V, device="cpu", seed=3, **cfg)(o.logits.clone(), stats=o)
    b = mv.Sampler(M, V, device="cpu", seed=3, **cfg)(o.logits.clone())
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.flags, b.flags)
    if cfg["temperature"] == 0.0:
        assert torch.equal(a.tokens.long(), o.argmax)


def test_mode_aware_plan():
    """mlops_sample_plan_configs: the measured picks (docs/vocab.md, the planner), nothing else moves."""
    from mlops.vocab._native import C
    from mlops.vocab._sampler import pack_configs

    V = 151936

    def plan(rows, cfgs, stats=False, history=False, sm=90, vocab=V):
        packed = pack_configs(cfgs if isinstance(cfgs, list) else [cfgs] * rows)
        return mv.sample_variants()[C.sample_plan_configs(rows, vocab, sm, 132, packed.data_ptr(), stats, history)]["name"]

    # GPU run 21 (H200): the lean cluster variants, the gather forms where a row has top-k (B <= 8)
    # or top-k and top-p (B > 8), t1024 for greedy with the statistics; split no longer planned;
    # run 31: the wide forms for top-p without top-k
    # GPU run 201 (session 39): every sampled batch of B = 64 takes the global-slice form cluster2_tp3g
    for rows in (1, 8, 64):
        lean = "cluster16_lean" if rows <= 8 else "cluster8_lean"
        gather = "cluster16_gather" if rows <= 8 else "cluster8_gather"
        gsl = (lambda pick: "cluster2_tp3g") if rows == 64 else (lambda pick: pick)
        assert plan(rows, dict(temperature=0.8)) == gsl(lean)
        assert plan(rows, dict(temperature=0.8, min_p=0.05), history=True) == gsl(lean)
        assert plan(rows, dict(temperature=0.0)) == lean
        assert plan(rows, dict(temperature=0.0), stats=True) == "t1024"
        assert plan(rows, dict(temperature=0.0), stats=True, history=True) == lean
        # GPU run 31: the wide forms where a row has top-p and none takes the gather form; run 76 (session 13):
        # above B = 8, cluster8_tp where every sampled row has top-p and none top-k; since run 85 (session 15)
        # cluster8_tp3
        wide = "cluster16_wide" if rows <= 8 else "cluster8_tp3"
        assert plan(rows, dict(temperature=0.8, top_p=0.9)) == gsl(wide)
        assert plan(rows, dict(temperature=0.8, top_p=0.9), history=True) == gsl(wide)
        assert plan(rows, [dict(temperature=0.0)] + [dict(temperature=0.8, top_p=0.9)] * (rows - 1)) == (
            gsl(wide) if rows > 1 else "cluster16_lean")
        # GPU run 66 (session 12): the tk forms where every sampled row has top-k (with the statistics too);
        # run 69: cluster8_tk from B = 8 on
        tk = "cluster16_tk" if rows < 8 else "cluster8_tk"
        assert plan(rows, dict(temperature=0.8, top_k=50)) == gsl(tk)
        assert plan(rows, dict(temperature=0.8, top_k=50), stats=True) == gsl(tk)
        both = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
        assert plan(rows, both) == gsl(tk)
        assert plan(rows, both, stats=True) == gsl(tk)
        assert plan(rows, [dict(temperature=0.0)] + [both] * (rows - 1)) == (gsl(tk) if rows > 1 else lean)
        # batches with a sampled row without top-k keep the earlier picks: GPU runs 52 / 53, top-k and top-p
        # from B = 8 on the wide form, the gather form below (with the statistics too)
        mixed = [dict(temperature=0.8)] + [both] * (rows - 1)
        if rows > 1:
            assert plan(rows, mixed) == gsl(gather if rows < 8 else "cluster8_wide")
            assert plan(rows, mixed, stats=True) == gsl(gather)
        # configurations on the device (mlops_sample_plan): the smallest worst loss
        assert mv.sample_variants()[C.sample_plan(rows, V, 90, 132)]["name"] == (gather if rows <= 8 else lean)
    # the unmeasured batch sizes between follow B = 64 from B = 9 on
    assert plan(9, dict(temperature=0.8)) == "cluster8_lean"
    assert plan(4, dict(temperature=0.8, top_p=0.9)) == "cluster16_wide"
    assert plan(9, dict(temperature=0.8, top_p=0.9)) == "cluster8_tp3"
    assert plan(9, dict(temperature=0.8, top_p=0.9, min_p=0.05)) == "cluster8_tp3"
    assert plan(9, dict(temperature=0.8, top_p=0.9), stats=True) == "cluster8_tp3"
    # a mixed batch: one top-k row moves a small batch to the gather form; a large one needs a row
    # with top-k and top-p; greedy rows (top_k = 1) count as neither
    assert plan(2, [dict(temperature=0.8), dict(temperature=0.8, top_k=50)]) == "cluster16_gather"
    assert plan(2, [dict(temperature=0.8), dict(temperature=0.8, top_k=1, top_p=0.9)]) == "cluster16_lean"
    assert plan(2, [dict(temperature=0.8), dict(temperature=0.8, top_p=0.9)]) == "cluster16_wide"
    assert plan(2, [dict(temperature=0.0), dict(temperature=0.8)], stats=True) == "cluster16_lean"
    # a large batch with top-k rows and top-p rows apart: the lean form (the wide one's top-k is not measured better)
    # (B = 30: below the global-slice form's batch sizes)
    assert plan(30, [dict(temperature=0.8, top_k=50)] * 29 + [dict(temperature=0.8, top_p=0.9)]) == "cluster8_lean"
    assert plan(30, [dict(temperature=0.8)] * 29 + [dict(temperature=0.8, top_p=0.9)]) == "cluster8_wide"
    assert plan(30, [dict(temperature=0.8)] * 29 + [dict(temperature=0.8, top_k=50, top_p=0.9)]) == "cluster8_wide"
    # GPU run 201: cluster2_tp3g from B = 40 on for every sampled batch, from B = 31 where every sampled row has top-k;
    # runs 207 / 209 (session 41, B = 32 on both cards): every sampled batch from B = 31 on; while 2 CTAs a row fit the
    # SMs (B <= 66 of 132) and only at 65536 < V <= 262144; greedy batches as before
    for rows in (31, 39, 40, 48, 66):
        for cfg in (dict(temperature=0.8), dict(temperature=0.8, top_p=0.9), dict(temperature=0.8, top_k=50)):
            assert plan(rows, cfg) == "cluster2_tp3g"
        assert plan(rows, [dict(temperature=0.8, top_k=50)] * (rows - 1) + [dict(temperature=0.8, top_p=0.9)]) == (
            "cluster2_tp3g")
        assert plan(rows, dict(temperature=0.0)) == "cluster8_lean"
        assert plan(rows, dict(temperature=0.0), stats=True) == "t1024"
    assert plan(30, dict(temperature=0.8)) == "cluster8_lean"
    assert plan(30, dict(temperature=0.8, top_p=0.9)) == "cluster8_tp3"
    assert plan(31, dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)) == "cluster2_tp3g"
    assert plan(30, dict(temperature=0.8, top_k=50)) == "cluster8_tk"
    assert plan(31, [dict(temperature=0.8)] + [dict(temperature=0.8, top_k=50)] * 30) == "cluster2_tp3g"
    assert plan(67, dict(temperature=0.8)) == "cluster8_lean"
    assert plan(67, dict(temperature=0.8, top_k=50)) == "cluster8_tk"
    assert plan(64, dict(temperature=0.8), vocab=32000) == "cluster8_lean"
    assert plan(64, dict(temperature=0.8), vocab=65536) == "cluster8_lean"
    assert plan(64, dict(temperature=0.8), vocab=262144) == "cluster2_tp3g"
    assert plan(64, dict(temperature=0.8), vocab=262145) == "cluster8_lean"
    assert plan(64, dict(temperature=0.8), vocab=151938) == "cluster8_lean"  # V % 4: the form would run as cluster8_tp3
    assert plan(64, dict(temperature=0.8), sm=80) == "t1024"
    assert plan(7, dict(temperature=0.8, top_k=50, top_p=0.9)) == "cluster16_tk"
    assert plan(9, dict(temperature=0.8, top_k=50, top_p=0.9)) == "cluster8_tk"
    assert plan(7, [dict(temperature=0.8, top_p=0.9)] + [dict(temperature=0.8, top_k=50, top_p=0.9)] * 6) == "cluster16_gather"
    assert plan(9, [dict(temperature=0.8, top_p=0.9)] + [dict(temperature=0.8, top_k=50, top_p=0.9)] * 8) == "cluster8_wide"
    # below sm_90, and below V = 16384, nothing changes
    assert plan(1, dict(temperature=0.8), sm=80) == "t1024"
    assert plan(1, dict(temperature=0.0), stats=True, sm=80) == "t1024"
    assert mv.sample_variants()[C.sample_plan(1, 8192, 90, 132)]["name"] == "t512"


def test_sampler_planned_on_cpu_is_the_host_emulation():
    s = mv.Sampler(2, 100, device="cpu", temperature=0.8)
    assert set(s._plans.values()) == {-1} and s.workspace is None


def test_variant_runs_as():
    assert mv.sample_variant_runs_as("t256", 1, 100) == "t256"
    assert mv.sample_variant_runs_as("split", 4, 151936) == "split"
    if not torch.cuda.is_available():  # no device: every cluster variant runs t1024
        for v in mv.sample_variants():
            if v["cluster"]:
                assert mv.sample_variant_runs_as(v["name"], 1, 151936) == "t1024"
