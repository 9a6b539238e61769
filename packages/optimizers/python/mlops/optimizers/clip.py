"""clip_grad_norm_: torch.nn.utils.clip_grad_norm_'s contract, one multi-tensor pass for the
norm (fixed summation order: the same bits for the same gradients on any grid or GPU, and
on the CPU), then one multiply a gradient list (torch._foreach_mul_)."""

from __future__ import annotations

import torch

from . import _tables
from ._base import _fail, _grad_norm
from ._tables import DTYPE_CODE, Table, local, ptr


def grad_norm_tables(parameters):
    params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    buckets: dict = {}
    for i, g in enumerate(grads):
        if g.is_sparse:
            _fail("grad", f"gradient {i}: sparse gradients are not supported")
        lg = local(g)
        if g.dtype not in DTYPE_CODE:
            _fail("grad", f"gradient {i}: expected bfloat16, float16 or float32, got {g.dtype}")
        if not lg.is_contiguous():
            _fail("grad", f"gradient {i}: expected a contiguous tensor")
        rows = buckets.setdefault((lg.device, g.dtype), _tables.new_rows())
        rows["grad"].append(ptr(g))
        rows["param"].append(ptr(g))  # unused by the norm; the table builder wants a pointer
        rows["step"].append(ptr(g))
        for k in ("s1", "s2", "s3", "master", "am1", "am2"):
            rows[k].append(0)
        rows["numel"].append(lg.numel())
        rows["id"].append(i)
    devs = {d for d, _ in buckets}
    if len(devs) > 1:
        _fail("parameters", f"expected gradients on one device, got {sorted(map(str, devs))}")
    return [Table(d, dt, rows) for (d, dt), rows in buckets.items()], grads


def clip_grad_norm_(parameters, max_norm: float, grad_scale=None) -> torch.Tensor:
    """Scales the gradients in place so their global L2 norm is at most max_norm; returns the
    norm (a float32 tensor on the gradients' device, no host synchronization)."""
    if not (isinstance(max_norm, (int, float)) and max_norm > 0):
        _fail("max_norm", f"expected a number > 0, got {max_norm!r}")
    tables, grads = grad_norm_tables(parameters)
    if not tables:
        return torch.tensor(0.0)
    norm, coef = _grad_norm(tables, float(max_norm), grad_scale, {})
    torch._foreach_mul_(grads, coef.to(torch.float32))
    return norm
