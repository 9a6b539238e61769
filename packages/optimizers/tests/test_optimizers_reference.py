"""CPU (CI): what torch.optim has no peer for, against references written from the papers'
rules in float64 (Lion, Adafactor), against the fp32 optimizer (8-bit states, master
weights), and by statistics (stochastic rounding); the fused gradient-norm clipping against
torch.nn.utils.clip_grad_norm_ and float64."""

import math

import mlops.optimizers as mo
import pytest
import torch
from mlops_testing import assert_bits_equal
from optimizers_helpers import assert_same, clone_params, grads_for, make_params, run

SIZES = [(64, 32), (1000,), (7,), (20000,)]


def lion_reference(p0, grads, lr, b1, b2, wd):
    """Chen et al. 2023, Algorithm 2 (Lion), float64."""
    p, m = p0.double().clone(), torch.zeros_like(p0, dtype=torch.float64)
    for g in grads:
        g = g.double()
        c = b1 * m + (1 - b1) * g
        p = p - lr * (torch.sign(c) + wd * p)
        m = b2 * m + (1 - b2) * g
    return p


def test_lion_vs_float64_paper_rule():
    ps = make_params(SIZES)
    p0 = [p.detach().clone() for p in ps]
    opt = mo.Lion(ps, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    run(opt, ps, 100)
    for i, p in enumerate(ps):
        grads = [grads_for(ps, s)[i] for s in range(100)]
        ref = lion_reference(p0[i], grads, 1e-3, 0.9, 0.99, 0.1)
        diff = (p.detach().double() - ref).abs()
        # float32 rounding of p every step: ~100 half-ulps of |p| <= 4 -> < 5e-5. Where c lies within float32
        # noise of 0 its sign may differ from float64's: that step moves p by 2 lr the other way. Such elements
        # are rare (1 in 20,000 here over 100 steps); none may flip more than twice.
        off = diff > 5e-5
        assert int(off.sum()) <= max(1, diff.numel() // 1000), (i, int(off.sum()))
        assert float(diff.max()) < 4 * 1e-3 + 5e-5, i


def adafactor_reference(p0, grads, eps1=1e-30, eps2=1e-3, d=1.0, decay=-0.8):
    """Shazeer & Stern 2018, Algorithm 4 (factored) / 5 (vector), relative step, float64."""
    x = p0.double().clone()
    factored = x.dim() >= 2
    r = torch.zeros(x.shape[:-1], dtype=torch.float64)
    c = torch.zeros(x.shape[:-2] + x.shape[-1:], dtype=torch.float64)
    v = torch.zeros_like(x)
    for t, g in enumerate(grads, start=1):
        g = g.double()
        rho = min(1e-2, 1 / math.sqrt(t))
        alpha = max(eps2, float(x.pow(2).mean().sqrt())) * rho
        b2 = 1 - t ** decay
        g2 = g * g + eps1
        if factored:
            r = b2 * r + (1 - b2) * g2.mean(-1)
            c = b2 * c + (1 - b2) * g2.mean(-2)
            vhat = r.unsqueeze(-1) * c.unsqueeze(-2) / r.mean(-1, keepdim=True).unsqueeze(-1)
        else:
            v = b2 * v + (1 - b2) * g2
            vhat = v
        u = g / vhat.sqrt()
        u = u / max(1.0, float(u.pow(2).mean().sqrt()) / d)
        x = x - alpha * u
    return x


def test_adafactor_vs_float64_paper_rule():
    ps = make_params([(48, 40), (300,), (4, 8, 16)])
    p0 = [p.detach().clone() for p in ps]
    opt = mo.Adafactor(ps)
    run(opt, ps, 100)
    for i, p in enumerate(ps):
        grads = [grads_for(ps, s)[i] for s in range(100)]
        ref = adafactor_reference(p0[i], grads)
        rel = ((p.detach().double() - ref).abs() / (ref.abs() + 1e-3)).max()
        assert float(rel) < 1e-4, i
    assert "exp_avg_sq_row" in opt.state[ps[0]] and opt.state[ps[0]]["exp_avg_sq_row"].shape == (48,)


def bnb_dynamic_map(signed):
    """bitsandbytes.functional.create_dynamic_map(signed, 7, 8), re-typed in torch."""
    data = []
    non_sign_bits = 7
    for i in range(7):
        items = int(2 ** (i + non_sign_bits - 7) + 1 if signed else 2 ** (i + non_sign_bits - 7 + 1) + 1)
        b = torch.linspace(0.1, 1, items, dtype=torch.float32)
        means = (b[:-1] + b[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-6 + i)) * means).tolist()
    data += [0.0, 1.0]
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


@pytest.mark.parametrize("signed", [True, False])
def test_dynamic_map_is_bitsandbytes(signed):
    ours = mo.dynamic_map(signed, "cpu")
    ref = bnb_dynamic_map(signed)
    assert ours.shape == (256,) and bool((ours[1:] >= ours[:-1]).all())
    assert float((ours - ref).abs().max()) <= 1e-7  # ours: double math rounded once; bnb: float32 linspace


def test_8bit_states_track_fp32_and_save_memory():
    ps = make_params([(256, 64), (5000,)], seed=3)
    qs = clone_params(ps)
    p0 = [p.detach().clone() for p in ps]
    a = mo.AdamW(ps, lr=1e-3, state_8bit=True)
    b = mo.AdamW(qs, lr=1e-3)
    run(a, ps, 100)
    run(b, qs, 100)
    for p, q, z in zip(ps, qs, p0):
        d8, d32 = (p.detach() - z), (q.detach() - z)
        # the update direction survives 8-bit moments: relative error of the total movement
        rel = float((d8 - d32).norm() / d32.norm())
        assert rel < 0.05, rel
    bytes8 = sum(t.numel() * t.element_size() for p in ps for k, t in a.state[p].items() if k != "step")
    bytes32 = sum(t.numel() * t.element_size() for q in qs for k, t in b.state[q].items() if k != "step")
    assert bytes8 / bytes32 <= 0.30, bytes8 / bytes32  # 1 byte + 4/256 bytes vs 4 bytes: 25.4 %
    assert a.state[ps[0]]["exp_avg"].dtype == torch.uint8


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_master_weights_follow_the_fp32_trajectory(dtype):
    """bf16 / fp16 params + fp32 master: the master follows the fp32 optimizer fed the same
    (low-precision) gradients bit for bit; the param is the master rounded to nearest even."""
    ps = make_params(SIZES, dtype=dtype)
    fs = [p.detach().float().clone().requires_grad_() for p in ps]
    a = mo.AdamW(ps, lr=1e-2, weight_decay=0.1, master_weights=True)
    b = mo.AdamW(fs, lr=1e-2, weight_decay=0.1)
    for s in range(50):
        gs = grads_for(ps, s)
        for p, f, g in zip(ps, fs, gs):
            p.grad, f.grad = g, g.float()
        a.step()
        b.step()
    for p, f in zip(ps, fs):
        assert_bits_equal(a.state[p]["master"], f.detach(), "master")
        assert_bits_equal(p.detach(), f.detach().to(dtype), "param = rne(master)")


def test_stochastic_rounding_unbiased_and_reproducible():
    """bf16 params without master weights: a step far below half a bf16 ulp (1.0 - 1e-4 a
    step, ulp 2^-7 below 1) never moves under round-to-nearest, and moves by the right
    amount on average under stochastic rounding."""
    n, steps, lr = 4096, 200, 1e-4

    def train(sr, seed):
        p = torch.ones(n, dtype=torch.bfloat16, requires_grad=True)
        opt = mo.SGD([p], lr=lr, stochastic_rounding=sr, seed=seed)
        for _ in range(steps):
            p.grad = torch.ones(n, dtype=torch.bfloat16)
            opt.step()
        return p.detach().float()

    assert bool((train(False, 0) == 1.0).all())
    a, b, c = train(True, 7), train(True, 7), train(True, 8)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    expect = 1.0 - steps * lr
    # each element is a sum of 200 independent bounded roundings: the mean of 4096 has sd < 2e-5
    assert abs(float(a.mean()) - expect) < 2e-4, float(a.mean())


def test_clip_grad_norm_vs_torch_and_float64():
    ps = make_params(SIZES + [(3, 300)])
    qs = clone_params(ps)
    for p, q, g in zip(ps, qs, grads_for(ps, 0, scale=3.0)):
        p.grad, q.grad = g.clone(), g.clone()
    ref = math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in ps))
    n1 = mo.clip_grad_norm_(ps, 1.0)
    n2 = torch.nn.utils.clip_grad_norm_(qs, 1.0)
    assert abs(float(n1) - ref) / ref < 1e-6 and abs(float(n2) - ref) / ref < 1e-6
    for p, q in zip(ps, qs):
        assert float((p.grad - q.grad).abs().max()) <= 1e-6 * float(q.grad.abs().max())
    # the same bits again: a fixed summation order
    for p, g in zip(ps, grads_for(ps, 0, scale=3.0)):
        p.grad = g
    assert_bits_equal(mo.clip_grad_norm_(ps, 1.0), n1, "norm twice")


def test_fused_clipping_equals_clip_then_step():
    ps = make_params(SIZES)
    qs = clone_params(ps)
    a = mo.AdamW(ps, lr=1e-2, max_grad_norm=0.5)
    b = mo.AdamW(qs, lr=1e-2)
    for s in range(20):
        for p, q, g in zip(ps, qs, grads_for(ps, s)):
            p.grad, q.grad = g.clone(), g.clone()
        a.step()
        n = mo.clip_grad_norm_(qs, 0.5)
        b.step()
        assert_bits_equal(a.last_grad_norm, n, "norm")
    assert_same(ps, qs, "fused clip")
