"""CPU (CI) and GPU: torch.compile(opt.step, fullgraph=True) holds a whole step (the
mlops_optimizers ops registered with torch.library); compiled steps give the eager steps'
bits. torch.library.opcheck checks the ops' schemas and fake implementations."""

import mlops.optimizers as mo
import pytest
import torch
from mlops.optimizers import _ops
from mlops_testing import HAS_CUDA, assert_bits_equal
from optimizers_helpers import assert_same, clone_params, grads_for, make_params

DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])
SIZES = [(64, 32), (1000,), (7,)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("make", [
    lambda p: mo.AdamW(p, lr=1e-2, weight_decay=0.1, max_grad_norm=1.0),
    lambda p: mo.SGD(p, lr=1e-2, momentum=0.9, nesterov=True),
    lambda p: mo.AdamW(p, lr=1e-2, state_8bit=True),
    lambda p: mo.Lion(p, lr=1e-3, master_weights=True, stochastic_rounding=True),
], ids=["adamw_clip", "sgd_nesterov", "adamw_8bit", "lion_master_sr"])
def test_compiled_step_equals_eager(device, dtype, make):
    torch._dynamo.reset()
    ps = [p.detach().to(device).requires_grad_() for p in make_params(SIZES, dtype=dtype)]
    qs = clone_params(ps)
    a, b = make(ps), make(qs)

    def feed(step):
        for p, q, g in zip(ps, qs, grads_for(ps, step)):
            p.grad, q.grad = g.to(device), g.to(device).clone()

    feed(0)
    a.step()  # states are created eagerly
    b.step()
    compiled = torch.compile(b.step, fullgraph=True)
    for s in range(1, 6):
        feed(s)
        a.step()
        compiled()
    assert_same(ps, qs, f"compiled on {device}")
    for p, q in zip(ps, qs):
        for k, v in a.state[p].items():
            assert_bits_equal(b.state[q][k], v, k)


def test_opcheck_ops():
    ps = make_params([(64,), (300,)])
    for p, g in zip(ps, grads_for(ps, 0)):
        p.grad = g
    opt = mo.AdamW(ps, lr=1e-2)
    opt.step()
    st = [opt.state[p] for p in ps]
    args = ([p.detach() for p in ps], [p.grad for p in ps], [s["exp_avg"] for s in st], [s["exp_avg_sq"] for s in st],
            [], [], [-1, -1], [], [], [s["step"] for s in st], [0, 1], None, None, None,
            None, 0, True, False, False, False, False, False, 0, 1e-2, 0.9, 0.999, 1e-8, 0.01, -1)
    torch.library.opcheck(_ops.multi_tensor_step_, args, test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(_ops.grad_norm, ([p.grad for p in ps], 1.0, None))
