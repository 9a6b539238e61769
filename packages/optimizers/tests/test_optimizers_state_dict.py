"""CPU (CI): state_dict round trips: mlops -> mlops, torch.optim.AdamW -> mlops AdamW and
back (same state keys: step, exp_avg, exp_avg_sq, max_exp_avg_sq), and the trajectories
continuing after a load are those of an uninterrupted run (bit for bit against torch's fused
CPU AdamW, whose arithmetic is the same)."""

import io

import mlops.optimizers as mo
import pytest
import torch
from optimizers_helpers import assert_same, clone_params, make_params, run

SIZES = [(64, 32), (4096,), (48,)]


def roundtrip(sd):
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize("make", [
    lambda p: mo.AdamW(p, lr=1e-2, amsgrad=True),
    lambda p: mo.SGD(p, lr=1e-2, momentum=0.9),
    lambda p: mo.Lion(p, lr=1e-3),
    lambda p: mo.AdamW(p, lr=1e-2, state_8bit=True),
], ids=["adamw_amsgrad", "sgd", "lion", "adamw_8bit"])
def test_mlops_roundtrip_continues_identically(make):
    ps = make_params(SIZES)
    qs = clone_params(ps)
    a = make(ps)
    run(a, ps, 10)
    sd = roundtrip(a.state_dict())
    for p, q in zip(ps, qs):
        q.data.copy_(p.detach())
    b = make(qs)
    b.load_state_dict(sd)
    run(a, ps, 10, start=10)
    run(b, qs, 10, start=10)
    assert_same(ps, qs, "after load")


def test_torch_adamw_state_into_mlops_and_back():
    ps = make_params(SIZES)
    t = torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, amsgrad=True, fused=True)
    run(t, ps, 10)
    sd = roundtrip(t.state_dict())
    keys = set(sd["state"][0])
    assert keys == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}

    qs = clone_params(ps)
    m = mo.AdamW(qs, lr=1e-2, weight_decay=0.1, amsgrad=True)
    m.load_state_dict(sd)
    run(t, ps, 10, start=10)
    run(m, qs, 10, start=10)
    assert_same(ps, qs, "torch -> mlops")

    # and back: mlops' state_dict loads into torch's AdamW and continues identically
    sd2 = roundtrip(m.state_dict())
    assert set(sd2["state"][0]) >= keys
    rs = clone_params(qs)
    t2 = torch.optim.AdamW(rs, lr=1e-2, weight_decay=0.1, amsgrad=True, fused=True)
    t2.load_state_dict(sd2)
    run(m, qs, 10, start=20)
    run(t2, rs, 10, start=20)
    assert_same(qs, rs, "mlops -> torch")


def test_torch_default_adamw_state_loads():
    """torch's non-fused AdamW keeps step on the CPU; the load moves it where the kernels read it."""
    ps = make_params(SIZES)
    t = torch.optim.AdamW(ps, lr=1e-2)
    run(t, ps, 3)
    qs = clone_params(ps)
    m = mo.AdamW(qs, lr=1e-2)
    m.load_state_dict(roundtrip(t.state_dict()))
    assert float(m.state[qs[0]]["step"]) == 3.0
    assert m.state[qs[0]]["step"].dtype == torch.float32
    run(m, qs, 1, start=3)
    assert float(m.state[qs[0]]["step"]) == 4.0
    assert m.param_groups[0]["master_weights"] is False  # the group keys torch does not have are restored


def test_bf16_master_state_roundtrip():
    ps = make_params(SIZES, dtype=torch.bfloat16)
    a = mo.AdamW(ps, lr=1e-2, master_weights=True)
    run(a, ps, 5)
    sd = roundtrip(a.state_dict())
    assert sd["state"][0]["master"].dtype == torch.float32
    assert sd["state"][0]["exp_avg"].dtype == torch.float32
    qs = clone_params(ps)
    b = mo.AdamW(qs, lr=1e-2, master_weights=True)
    b.load_state_dict(sd)
    # torch's load casts float states to the param's dtype; the optimizer restores float32
    assert b.state[qs[0]]["exp_avg"].dtype == torch.float32
    assert torch.equal(b.state[qs[0]]["master"], a.state[ps[0]]["master"])
