"""CPU (CI): bad input raises ValueError naming the argument, before anything changes."""

import mlops.optimizers as mo
import pytest
import torch


def p_(n=16, dtype=torch.float32, device="cpu"):
    return torch.zeros(n, dtype=dtype, device=device, requires_grad=True)


@pytest.mark.parametrize("make, arg", [
    (lambda: mo.AdamW([p_()], lr=-1.0), "lr"),
    (lambda: mo.AdamW([p_()], betas=(1.0, 0.999)), "betas"),
    (lambda: mo.AdamW([p_()], betas=(0.9, -0.1)), "betas"),
    (lambda: mo.AdamW([p_()], betas=(0.9,)), "betas"),
    (lambda: mo.AdamW([p_()], eps=-1e-8), "eps"),
    (lambda: mo.AdamW([p_()], weight_decay=-0.1), "weight_decay"),
    (lambda: mo.AdamW([p_()], amsgrad=True, state_8bit=True), "state_8bit"),
    (lambda: mo.AdamW([p_()], max_grad_norm=0.0), "max_grad_norm"),
    (lambda: mo.AdamW([p_()], seed=-1), "seed"),
    (lambda: mo.AdamW([p_()], lr=torch.tensor([1e-3, 1e-3])), "lr"),
    (lambda: mo.SGD([p_()], lr=-1e-3), "lr"),
    (lambda: mo.SGD([p_()], momentum=-0.5), "momentum"),
    (lambda: mo.SGD([p_()], nesterov=True), "nesterov"),
    (lambda: mo.Lion([p_()], betas=(0.9, 1.5)), "betas"),
    (lambda: mo.Adafactor([p_()], lr=1e-3), "lr"),
    (lambda: mo.Adafactor([p_()], relative_step=False, lr=-1.0), "lr"),
    (lambda: mo.AdamW([{"params": [p_()]}, {"params": [p_()], "lr": -2.0}]), "lr"),
])
def test_bad_hyperparameters(make, arg):
    with pytest.raises(ValueError, match=rf"^{arg}: "):
        make()


def test_sparse_grad():
    p = p_(8)
    opt = mo.AdamW([p])
    p.grad = torch.sparse_coo_tensor([[1, 3]], [1.0, 2.0], (8,))
    with pytest.raises(ValueError, match="^grad: .*sparse"):
        opt.step()


def test_unsupported_dtype():
    p = p_(8, dtype=torch.float64)
    opt = mo.AdamW([p])
    p.grad = torch.ones(8, dtype=torch.float64)
    with pytest.raises(ValueError, match="^params: .*float64"):
        opt.step()


def test_mixed_devices():
    a, b = p_(8), p_(8, device="meta")
    opt = mo.AdamW([a, b])
    a.grad = torch.ones(8)
    b.grad = torch.ones(8, device="meta")
    with pytest.raises(ValueError, match="^params: all parameters must be on one device"):
        opt.step()
    assert torch.equal(a.detach(), torch.zeros(8))  # nothing changed


def test_mismatched_dtypes_in_state_and_grad():
    # torch refuses a grad of another dtype at assignment; a grad that changed shape is ours to catch
    p = p_(8)
    opt = mo.AdamW([p])
    with pytest.raises(RuntimeError):
        p.grad = torch.ones(8, dtype=torch.float16)
    p.grad = torch.ones(8)
    opt.step()


def test_clip_bad_max_norm():
    p = p_(8)
    p.grad = torch.ones(8)
    with pytest.raises(ValueError, match="^max_norm: "):
        mo.clip_grad_norm_([p], -1.0)


def test_stochastic_rounding_is_ignored_off_bf16():
    # fp32 params: the option has nothing to round; the update is the plain one
    p, q = p_(16), p_(16)
    a, b = mo.AdamW([p], stochastic_rounding=True), mo.AdamW([q])
    for t in (p, q):
        t.grad = torch.ones(16)
    a.step()
    b.step()
    assert torch.equal(p.detach(), q.detach())


def test_noncontiguous_param():
    base = torch.zeros(8, 8)
    p = base.t().contiguous().t().requires_grad_()  # column-major leaf
    opt = mo.AdamW([p])
    p.grad = torch.ones_like(p)
    with pytest.raises(ValueError, match="^params: .*contiguous"):
        opt.step()
