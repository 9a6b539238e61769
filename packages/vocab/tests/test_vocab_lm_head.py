"""CPU: the LM head's host emulation against float64, the epilogue (row_scale, logit_scale) and its
statistics (max, lowest argmax, key-byte counts) against torch on the same logits."""

import pytest
import torch
from mlops_testing import assert_bits_equal, randn
from vocab_reference import lm_head64

import mlops.vocab as mv


def keys(t: torch.Tensor) -> torch.Tensor:
    b = t.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    return torch.where(b >= 0x80000000, (~b) & 0xFFFFFFFF, b | 0x80000000)


@pytest.mark.parametrize("M", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("V,H", [(1001, 512), (37, 1000), (300, 4096), (5, 8)])
def test_against_float64(M, V, H):
    x = randn((M, H), torch.bfloat16, M * H)
    w = randn((V, H), torch.bfloat16, V + H, scale=0.05)
    y = mv.lm_head(x, w)
    ref = lm_head64(x, w)
    # fp32 fmaf chains of <= H/8 terms a lane, then 5 + 3 levels of additions: the error is below
    # (H/8 + 8) * 2^-24 * sum |x w| (a first-order bound with margin for H <= 4096)
    mag = x.double().abs() @ w.double().abs().T
    err = (y.double() - ref).abs()
    assert float((err / ((H / 8 + 8) * 2**-24 * mag + 1e-30)).max()) <= 1.0


def test_epilogue_scales():
    M, V, H = 4, 333, 768
    x = randn((M, H), torch.bfloat16, 1)
    w = randn((V, H), torch.bfloat16, 2, scale=0.05)
    r = torch.tensor([0.5, 2.0, 1.25, 3.0])
    plain = mv.lm_head(x, w)
    scaled = mv.lm_head(x, w, row_scale=r, logit_scale=0.75)
    assert_bits_equal(scaled, (plain * r[:, None]) * 0.75, "((dot * r) * logit_scale), two roundings in that order")


@pytest.mark.parametrize("M", [1, 3, 8])
def test_stats(M):
    V, H = 2053, 256
    x = randn((M, H), torch.bfloat16, 5)
    w = randn((V, H), torch.bfloat16, 6, scale=0.1)
    o = mv.lm_head(x, w, stats=True)
    am = o.logits.argmax(1)  # torch's argmax is the first maximal index
    assert torch.equal(o.argmax, am)
    assert_bits_equal(o.max, o.logits.max(1).values, "max")
    hist = torch.stack([torch.bincount((keys(o.logits[m]) >> 24), minlength=256) for m in range(M)]).to(torch.int32)
    assert torch.equal(o.key_hist, hist)


def test_argmax_ties_pick_lowest_index():
    H = 64
    x = torch.ones((1, H), dtype=torch.bfloat16)
    w = torch.zeros((100, H), dtype=torch.bfloat16)
    w[[17, 42, 99]] = 1.0
    o = mv.lm_head(x, w, stats=True)
    assert int(o.argmax[0]) == 17 and float(o.max[0]) == 64.0


def test_one_dimensional_x():
    x = randn(512, torch.bfloat16, 9)
    w = randn((64, 512), torch.bfloat16, 10)
    y = mv.lm_head(x, w)
    assert y.shape == (64,)
    assert_bits_equal(y, mv.lm_head(x[None], w)[0])


def test_variants_listed_as_data():
    vs = mv.lm_head_variants()
    assert vs and all({"index", "name", "kind", "min_sm", "ctas_per_sm", "bitwise_host"} <= set(v) for v in vs)
    assert [v["index"] for v in vs] == list(range(len(vs)))
    # the whole table crosses the binding (a fixed-size copy there once cut it at 16 entries)
    assert {"mma_m16n8k16_bf16_stream8_rr", "mma_m16n8k16_bf16_stream32_rr", "mma_m16n8k16_bf16_stream16_deep",
            "mma_m16n8k16_bf16_stream16_deep_rr"} <= {v["name"] for v in vs}


def test_planner_picks_tensor_cores_where_the_arch_has_them():
    """mlops_lm_head_plan for a build with code for the arch: on sm_90 with H <= 4096 the 3-stage pipe
    where its last round of tiles is full (GPU run 77), else the stream kernel of 32-row chunks; the
    cp.async-pipelined m16n8k16 on sm_80+ (its 6-stage form at M = 1 on sm_90 for H > 4096), m16n8k8 FP16
    on sm_75, m8n8k4 FP16 on sm_70 / 72, the CUDA-core instance below; and the chosen instance's min_sm
    never above the arch."""
    from mlops.vocab._native import C

    by_name = {v["name"]: v for v in mv.lm_head_variants()}
    want = {90: "mma_m16n8k16_bf16_pipe", 89: "mma_m16n8k16_bf16_pipe", 86: "mma_m16n8k16_bf16_pipe",
            80: "mma_m16n8k16_bf16_pipe", 75: "mma_m16n8k8_f16", 72: "mma_m8n8k4_f16", 70: "mma_m8n8k4_f16",
            61: "cuda_core", 52: "cuda_core", 50: "cuda_core"}
    for sm, name in want.items():
        for M in range(1, 9):
            for V, H in [(151936, 4096), (32000, 4096), (5, 8), (151936, 8192), (32000, 5120)]:
                want_m = name
                if sm >= 90 and H <= 4096:
                    # run 77 (read flush, with stats): the 3-stage pipe at every M of 151936 x 4096, whose
                    # 4748 tiles fill 36 rounds of 132 CTAs (290.9 .. 293.8 us; stream32 302.5 .. 306.1);
                    # 32000 rows (7.6 rounds) and 5 rows (one tile) leave its last round empty: stream32
                    want_m = "mma_m16n8k16_bf16_pipe3" if V == 151936 else "mma_m16n8k16_bf16_stream32"
                elif sm >= 90 and M == 1:
                    want_m = "mma_m16n8k16_bf16_pipe_deep"  # run 14: 319.7 vs 325.9 us; 379.2 vs 336.1 at M = 8
                i = C.lm_head_plan(M, H, V, sm, 132)
                v = mv.lm_head_variants()[i]
                assert v["name"] == want_m, (sm, M, V, H, v["name"])
                assert v["min_sm"] <= sm
    # the pipe's idle CTA slots over all rounds: 4748 tiles on 160 SMs (30 rounds, the last 68 % full)
    # leave 1.1 % idle; 2000 tiles (64000 rows) on 132 SMs 5.3 %
    plan = lambda V, sms: mv.lm_head_variants()[C.lm_head_plan(1, 4096, V, 90, sms)]["name"]  # noqa: E731
    assert plan(151936, 160) == "mma_m16n8k16_bf16_pipe3"
    assert plan(64000, 132) == "mma_m16n8k16_bf16_stream32"
    assert by_name["mma_m16n8k16_bf16_pipe"]["kind"] == "mma_m16n8k16_bf16_pipe"
    assert not by_name["mma_m16n8k16_bf16_pipe"]["bitwise_host"]
