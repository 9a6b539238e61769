"""The optimizers: drop-in torch.optim.Optimizer subclasses with torch's hyperparameter
names and state keys (step, exp_avg, exp_avg_sq, max_exp_avg_sq, momentum_buffer), so a
torch.optim state_dict loads into them and theirs into torch.optim.

Extra per-group options: master_weights (bf16 / fp16 params keep an fp32 copy in
state['master']), stochastic_rounding (bf16 params without master weights round
stochastically, reproducibly for a seed), state_8bit (Adam: block-wise 8-bit moments).
Extra optimizer options: max_grad_norm (fused global-norm clipping before the update; the
norm is left in .last_grad_norm), seed."""

from __future__ import annotations

from ._base import (
    ALGO_ADAM,
    ALGO_LION,
    ALGO_SGD,
    MultiTensorOptimizer,
    _fail,
    check_betas,
    check_lr,
    check_nonneg,
)


class _AdamBase(MultiTensorOptimizer):
    _algo = ALGO_ADAM
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, master_weights=False, stochastic_rounding=False, state_8bit=False,
                 max_grad_norm: float | None = None, seed: int = 0, variant=None):
        defaults = {"lr": lr, "betas": tuple(betas) if isinstance(betas, list) else betas, "eps": eps,
                        "weight_decay": weight_decay, "amsgrad": amsgrad, "maximize": maximize, "master_weights": master_weights,
                        "stochastic_rounding": stochastic_rounding, "state_8bit": state_8bit}
        super().__init__(params, defaults, max_grad_norm=max_grad_norm, seed=seed, variant=variant)

    def _check_group(self, group):
        check_lr(group["lr"])
        check_betas(group["betas"])
        check_nonneg("eps", group["eps"])
        check_nonneg("weight_decay", group["weight_decay"])
        if group.get("state_8bit") and group.get("amsgrad"):
            _fail("state_8bit", "8-bit states do not support amsgrad")

    def _state_spec(self, group):
        return {"s1": "exp_avg", "s2": "exp_avg_sq", "s3": "max_exp_avg_sq" if group["amsgrad"] else None}

    def _launch_args(self, group):
        b1, b2 = group["betas"]
        return {"beta1": b1, "beta2": b2, "eps": group["eps"], "decoupled": self._decoupled, "amsgrad": bool(group["amsgrad"])}


class AdamW(_AdamBase):
    """AdamW (Loshchilov & Hutter): p *= 1 - lr*wd, then Adam. Same arithmetic as
    torch.optim.AdamW(fused=True)."""

    _decoupled = True


class Adam(_AdamBase):
    """Adam (Kingma & Ba) with L2 weight decay (g += wd*p), or decoupled=True for AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, *,
                 decoupled: bool = False, **kw):
        self._decoupled = bool(decoupled)
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kw)


class SGD(MultiTensorOptimizer):
    """SGD with momentum, dampening and Nesterov momentum, torch.optim.SGD's rule (fused order)."""

    _algo = ALGO_SGD

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False, master_weights=False, stochastic_rounding=False,
                 max_grad_norm: float | None = None, seed: int = 0, variant=None):
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay, "nesterov": nesterov,
                        "maximize": maximize, "master_weights": master_weights, "stochastic_rounding": stochastic_rounding}
        super().__init__(params, defaults, max_grad_norm=max_grad_norm, seed=seed, variant=variant)

    def _check_group(self, group):
        check_lr(group["lr"])
        check_nonneg("momentum", group["momentum"])
        check_nonneg("dampening", group["dampening"])
        check_nonneg("weight_decay", group["weight_decay"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            _fail("nesterov", "needs momentum > 0 and dampening 0")

    def _state_spec(self, group):
        return {"s1": "momentum_buffer" if group["momentum"] != 0 else None}

    def _launch_args(self, group):
        return {"beta1": group["momentum"], "beta2": group["dampening"], "nesterov": bool(group["nesterov"])}


class Lion(MultiTensorOptimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"):
    c = b1*m + (1-b1)*g; p = p*(1 - lr*wd) - lr*sign(c); m = b2*m + (1-b2)*g."""

    _algo = ALGO_LION

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *, maximize=False,
                 master_weights=False, stochastic_rounding=False, max_grad_norm: float | None = None,
                 seed: int = 0, variant=None):
        defaults = {"lr": lr, "betas": tuple(betas) if isinstance(betas, list) else betas, "weight_decay": weight_decay,
                        "maximize": maximize, "master_weights": master_weights, "stochastic_rounding": stochastic_rounding}
        super().__init__(params, defaults, max_grad_norm=max_grad_norm, seed=seed, variant=variant)

    def _check_group(self, group):
        check_lr(group["lr"])
        check_betas(group["betas"])
        check_nonneg("weight_decay", group["weight_decay"])

    def _state_spec(self, group):
        return {"s1": "exp_avg"}

    def _launch_args(self, group):
        b1, b2 = group["betas"]
        return {"beta1": b1, "beta2": b2}
