"""torch.library ops, so torch.compile(opt.step, fullgraph=True) holds a whole optimizer step:
the traced step (MultiTensorOptimizer._step_traced) gathers tensor lists and calls
mlops_optimizers::multi_tensor_step_ (mutating params, states, masters and step counters)
and mlops_optimizers::grad_norm. Their implementations build (and cache, keyed on every
address) the same tables as the eager path and run the same kernels / host emulation, so
compiled and eager steps give the same bits."""

from __future__ import annotations

from typing import List, Optional

import torch

from . import _tables
from ._native import C
from ._tables import DTYPE_CODE, Table, local, ptr

_CACHE: dict = {}
_CACHE_LIMIT = 16


def _tables_for(params, grads, s1, s2, s3, masters, am1, am2, steps, ids):
    key = tuple(ptr(t) for lst in (params, grads, s1, s2, s3, masters, am1, am2, steps) for t in lst) + tuple(ids)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    buckets: dict = {}
    for i, p in enumerate(params):
        rows = buckets.setdefault(p.dtype, _tables.new_rows())
        rows["param"].append(ptr(p))
        rows["grad"].append(ptr(grads[i]))
        for name, lst in (("s1", s1), ("s2", s2), ("s3", s3), ("master", masters), ("am1", am1), ("am2", am2)):
            rows[name].append(ptr(lst[i]) if lst else 0)
        rows["step"].append(ptr(steps[i]))
        rows["numel"].append(local(p).numel())
        rows["id"].append(ids[i] & 0xFFFFFFFF)
    dev = local(params[0]).device
    tables = [Table(dev, dt, rows) for dt, rows in buckets.items()]
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = tables
    return tables


@torch.library.custom_op(
    "mlops_optimizers::multi_tensor_step_",
    mutates_args=("params", "states1", "states2", "states3", "masters", "absmax1", "absmax2", "steps"),
    device_types=("cpu", "cuda"),
)
def multi_tensor_step_(params: List[torch.Tensor], grads: List[torch.Tensor], states1: List[torch.Tensor],
                       states2: List[torch.Tensor], states3: List[torch.Tensor], masters: List[torch.Tensor],
                       master_of: List[int], absmax1: List[torch.Tensor], absmax2: List[torch.Tensor],
                       steps: List[torch.Tensor], ids: List[int],
                       grad_scale: Optional[torch.Tensor], found_inf: Optional[torch.Tensor],
                       clip_coef: Optional[torch.Tensor], lr_tensor: Optional[torch.Tensor], algo: int,
                       decoupled: bool, amsgrad: bool, maximize: bool, nesterov: bool, state_8bit: bool,
                       stochastic_rounding: bool, seed: int, lr: float, beta1: float, beta2: float, eps: float,
                       weight_decay: float, variant: int) -> None:
    if not params:
        return
    from ._base import dynamic_map  # the map cache lives there

    # a state list is empty (the algorithm keeps no such state) or has one tensor a parameter; masters
    # are listed only where they exist (auto_functionalize takes no None inside a mutated list)
    full_masters = [masters[k] if k >= 0 else None for k in master_of]
    tables = _tables_for(params, grads, states1, states2, states3, full_masters, absmax1, absmax2, steps, ids)
    for t in tables:
        on_cuda = t.device.type == "cuda"
        stream = torch.cuda.current_stream(t.device).cuda_stream if on_cuda else 0
        lr_dev = ptr(lr_tensor) if lr_tensor is not None and lr_tensor.device == t.device else 0
        C.step(on_cuda, stream, algo, DTYPE_CODE[t.dtype], decoupled, amsgrad, maximize, nesterov, state_8bit,
               stochastic_rounding and t.dtype == torch.bfloat16, seed, lr, lr_dev, beta1, beta2, eps, weight_decay,
               ptr(grad_scale), ptr(found_inf), ptr(clip_coef),
               dynamic_map(True, t.device).data_ptr() if state_8bit else 0,
               dynamic_map(False, t.device).data_ptr() if state_8bit else 0,
               t.table.data_ptr(), t.num_tensors, t.num_chunks, variant)


@multi_tensor_step_.register_fake
def _(params, grads, states1, states2, states3, masters, master_of, absmax1, absmax2, steps, ids, grad_scale, found_inf,
      clip_coef, lr_tensor, algo, decoupled, amsgrad, maximize, nesterov, state_8bit, stochastic_rounding, seed, lr,
      beta1, beta2, eps, weight_decay, variant):
    return None


@torch.library.custom_op("mlops_optimizers::grad_norm", mutates_args=(), device_types=("cpu", "cuda"))
def grad_norm(grads: List[torch.Tensor], max_norm: float, grad_scale: Optional[torch.Tensor]) -> torch.Tensor:
    """[norm, clip coefficient] of the gradients (float32, on their device)."""
    from ._base import _grad_norm

    tables, _ = grad_norm_tables_of(grads)
    out = torch.empty(2, dtype=torch.float32, device=local(grads[0]).device)
    if not tables:
        out.zero_()
        return out
    norm, coef = _grad_norm(tables, max_norm, grad_scale, {})
    out[0] = norm
    out[1] = coef
    return out


@grad_norm.register_fake
def _(grads, max_norm, grad_scale):
    return grads[0].new_empty(2, dtype=torch.float32)


def grad_norm_tables_of(grads):
    from .clip import grad_norm_tables

    class _G:  # grad_norm_tables reads .grad of what it is given
        __slots__ = ("grad",)

        def __init__(self, g):
            self.grad = g

    return grad_norm_tables([_G(g) for g in grads])
