"""CPU (CI): the host emulation against torch.optim's own AdamW / Adam / SGD over 100 steps
of random gradients.

Bit for bit against torch's fused CPU kernels (fused=True) where the arithmetic is the same:
tensors whose sizes are multiples of 16 run only torch's AVX-512 / AVX2 vector path, whose
operation order (incl. the FMAs GCC contracts in torch's x86 wheels) src/optim_math.h
follows. torch's scalar tail (size % 16 elements, mixed double/float arithmetic) and its
non-fused single-tensor path (lerp_, addcdiv_, Sleef sqrt) differ in the last bits:
there the tolerance is 5e-5 relative after 100 steps (a few float ulps a step, compounded)."""

import mlops.optimizers as mo
import pytest
import torch
from optimizers_helpers import assert_same, clone_params, make_params, max_rel, run

ALIGNED = [(64, 32), (4096,), (16,), (40000,), (3, 5, 16)]
RAGGED = [(1000,), (7,), (33, 3), (16385,)]

CASES = {
    "adamw": (lambda p: mo.AdamW(p, lr=1e-2, weight_decay=0.1),
              lambda p, **k: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, **k)),
    "adamw_amsgrad_maximize": (lambda p: mo.AdamW(p, lr=3e-3, betas=(0.8, 0.99), eps=1e-6, amsgrad=True,
                                                  maximize=True),
                               lambda p, **k: torch.optim.AdamW(p, lr=3e-3, betas=(0.8, 0.99), eps=1e-6,
                                                                amsgrad=True, maximize=True, **k)),
    "adam_l2": (lambda p: mo.Adam(p, lr=1e-2, weight_decay=0.05),
                lambda p, **k: torch.optim.Adam(p, lr=1e-2, weight_decay=0.05, **k)),
    "adam_beta1_0.6": (lambda p: mo.Adam(p, lr=1e-2, betas=(0.4, 0.9)),  # 1 - beta1 >= 0.5: the other lerp form
                       lambda p, **k: torch.optim.Adam(p, lr=1e-2, betas=(0.4, 0.9), **k)),
    "sgd_momentum": (lambda p: mo.SGD(p, lr=1e-2, momentum=0.9, dampening=0.1, weight_decay=0.01),
                     lambda p, **k: torch.optim.SGD(p, lr=1e-2, momentum=0.9, dampening=0.1, weight_decay=0.01, **k)),
    "sgd_nesterov": (lambda p: mo.SGD(p, lr=1e-2, momentum=0.9, nesterov=True),
                     lambda p, **k: torch.optim.SGD(p, lr=1e-2, momentum=0.9, nesterov=True, **k)),
    "sgd_plain_maximize": (lambda p: mo.SGD(p, lr=1e-2, maximize=True),
                           lambda p, **k: torch.optim.SGD(p, lr=1e-2, maximize=True, **k)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bit_for_bit_vs_torch_fused(case):
    ours, theirs = CASES[case]
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    a, b = ours(ps), theirs(qs, fused=True)
    run(a, ps, 100)
    run(b, qs, 100)
    assert_same(ps, qs, case)
    # the states too
    for p, q in zip(ps, qs):
        for k, v in b.state[q].items():
            if k != "step":
                assert torch.equal(a.state[p][k], v), (case, k)
        assert float(a.state[p]["step"]) == 100.0
        if "step" in b.state[q]:  # torch's SGD keeps no step
            assert float(b.state[q]["step"]) == 100.0


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("path", ["fused_ragged", "single_tensor", "foreach"])
def test_close_to_torch(case, path):
    ours, theirs = CASES[case]
    sizes = RAGGED if path == "fused_ragged" else ALIGNED + RAGGED
    ps = make_params(sizes)
    qs = clone_params(ps)
    kw = {"fused_ragged": {"fused": True}, "single_tensor": {"foreach": False}, "foreach": {"foreach": True}}[path]
    run(ours(ps), ps, 100)
    run(theirs(qs, **kw), qs, 100)
    assert max_rel(ps, qs) < 5e-5


def test_param_groups_own_hyperparameters():
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    a = mo.AdamW([{"params": ps[:2], "lr": 1e-2}, {"params": ps[2:], "lr": 1e-3, "weight_decay": 0.0,
                                                    "betas": (0.5, 0.9)}], weight_decay=0.2)
    b = torch.optim.AdamW([{"params": qs[:2], "lr": 1e-2}, {"params": qs[2:], "lr": 1e-3, "weight_decay": 0.0,
                                                             "betas": (0.5, 0.9)}], weight_decay=0.2, fused=True)
    run(a, ps, 30)
    run(b, qs, 30)
    assert_same(ps, qs, "groups")


def test_grad_scale_and_found_inf_like_torch_fused():
    """GradScaler's protocol: grads arrive scaled; grad_scale divides them; found_inf != 0
    skips the whole step (params, states and step counts unchanged)."""
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    a = mo.AdamW(ps, lr=1e-2)
    b = torch.optim.AdamW(qs, lr=1e-2, fused=True)
    scale = torch.tensor(1024.0)
    for s in range(20):
        for p, q in zip(ps, qs):
            g = torch.randn(p.shape, generator=torch.Generator().manual_seed(s)) * 1024.0
            p.grad, q.grad = g.clone(), g.clone()
        inf = torch.tensor(1.0 if s % 5 == 3 else 0.0)
        before = [p.detach().clone() for p in ps]
        a.step(grad_scale=scale, found_inf=inf)
        b.grad_scale, b.found_inf = scale, inf
        b.step()
        if s % 5 == 3:
            assert_same(ps, before, "skipped step")
    assert_same(ps, qs, "scaled")
    assert float(a.state[ps[0]]["step"]) == 16.0


def test_params_without_grads_are_skipped():
    ps = make_params([(64,), (128,), (32,)])
    before = [p.detach().clone() for p in ps]
    opt = mo.AdamW(ps, lr=1e-1)
    ps[0].grad = torch.ones(64)
    ps[2].grad = torch.ones(32)
    opt.step()
    assert ps[1] not in opt.state or not opt.state[ps[1]]
    assert torch.equal(ps[1].detach(), before[1])
    assert not torch.equal(ps[0].detach(), before[0])
    # the gradient set changes: the table is rebuilt, the step counts stay per parameter
    ps[1].grad = torch.ones(128)
    opt.step()
    assert float(opt.state[ps[0]]["step"]) == 2.0 and float(opt.state[ps[1]]["step"]) == 1.0


def test_lr_as_tensor_same_bits():
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    run(mo.AdamW(ps, lr=torch.tensor(1e-2)), ps, 10)
    run(mo.AdamW(qs, lr=float(torch.tensor(1e-2))), qs, 10)
    assert_same(ps, qs, "tensor lr")


def test_moved_parameter_rebuilds_the_table():
    """`p.data = ...` (module.to(), .half()) gives a parameter new memory: the next step must
    update the new tensor, never the freed one."""
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    a = mo.AdamW(ps, lr=1e-2)
    b = torch.optim.AdamW(qs, lr=1e-2, fused=True)
    run(a, ps, 3)
    run(b, qs, 3)
    for p in ps:
        p.data = p.data.clone()
    run(a, ps, 3, start=3)
    run(b, qs, 3, start=3)
    assert_same(ps, qs, "after p.data = ...")


def test_grad_scaler_on_cpu():
    """torch.amp.GradScaler's protocol end to end (CPU): the scaler hands grad_scale / found_inf
    to the optimizer; an inf gradient skips the step and halves the scale."""
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    a = mo.AdamW(ps, lr=1e-2)
    b = mo.AdamW(qs, lr=1e-2)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)
    for s in range(6):
        scaler.scale(torch.ones(()))  # what scaler.scale(loss) does first: the scale tensor exists
        gs = [torch.randn(p.shape, generator=torch.Generator().manual_seed(s)) for p in ps]
        for p, g in zip(ps, gs):
            p.grad = g * scaler.get_scale()
        if s == 2:
            ps[1].grad.view(-1)[5] = float("inf")
        before = [p.detach().clone() for p in ps]
        scaler.step(a)
        scaler.update()
        if s == 2:
            assert_same(ps, before, "inf step skipped")
        else:
            for q, g in zip(qs, gs):
                q.grad = g
            b.step()
    assert_same(ps, qs, "GradScaler")
    assert scaler.get_scale() == 2.0**7


def test_switching_amsgrad_mid_run_rebuilds_the_table():
    """A group option that adds a state (amsgrad) changes the rows: the table is rebuilt and the
    new state created (torch creates max_exp_avg_sq lazily the same way)."""
    ps = make_params(ALIGNED)
    qs = clone_params(ps)
    a = mo.AdamW(ps, lr=1e-2)
    b = torch.optim.AdamW(qs, lr=1e-2, fused=True)
    run(a, ps, 2)
    run(b, qs, 2)
    a.param_groups[0]["amsgrad"] = True
    b.param_groups[0]["amsgrad"] = True
    for st in b.state.values():  # torch expects the state to exist once amsgrad is on
        st["max_exp_avg_sq"] = torch.zeros_like(st["exp_avg_sq"])
    run(a, ps, 3, start=2)
    run(b, qs, 3, start=2)
    assert "max_exp_avg_sq" in a.state[ps[0]]
    assert_same(ps, qs, "amsgrad switched on")
