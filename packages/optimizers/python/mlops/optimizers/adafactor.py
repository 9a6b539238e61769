"""Adafactor (Shazeer & Stern 2018, "Adafactor: Adaptive Learning Rates with Sublinear Memory
Cost", Algorithm 4 with relative step sizes, update clipping and factored second moments).
Written with torch ops (CPU and CUDA alike); the factored state is two vectors a matrix
(rows and columns of the last two dims), O(n + m) instead of O(n m).

Per step t, for a parameter X (shape [..., n, m]) and gradient G:
  rho_t = min(1e-2, 1/sqrt(t)) if relative_step else lr;  alpha_t = max(eps2, RMS(X)) * rho_t
  (scale_parameter; else alpha_t = rho_t);  beta2_t = 1 - t^decay_rate (decay_rate = -0.8)
  R = beta2_t R + (1 - beta2_t) mean_cols(G^2 + eps1);  C = beta2_t C + (1 - beta2_t) mean_rows(G^2 + eps1)
  V = R C^T / mean(R);  U = G / sqrt(V);  U /= max(1, RMS(U) / d);  X -= alpha_t U  (+ weight decay)
Tensors with fewer than two dims keep an unfactored V = beta2_t V + (1 - beta2_t)(G^2 + eps1).
"""

from __future__ import annotations

import math

import torch

from ._base import _fail, check_nonneg


class Adafactor(torch.optim.Optimizer):
    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                 weight_decay=0.0, scale_parameter=True, relative_step=True):
        if lr is not None and relative_step:
            _fail("lr", "give either lr or relative_step=True, not both")
        if lr is None and not relative_step:
            _fail("lr", "needed when relative_step is False")
        if lr is not None:
            check_nonneg("lr", lr)
        if not (isinstance(eps, (tuple, list)) and len(eps) == 2 and all(e >= 0 for e in eps)):
            _fail("eps", f"expected a pair (eps1, eps2) of numbers >= 0, got {eps!r}")
        if beta1 is not None and not (0.0 <= beta1 < 1.0):
            _fail("beta1", f"expected None or a value in [0, 1), got {beta1!r}")
        if not decay_rate < 0:
            _fail("decay_rate", f"expected < 0, got {decay_rate!r}")
        check_nonneg("weight_decay", weight_decay)
        defaults = {"lr": lr, "eps": tuple(eps), "clip_threshold": clip_threshold, "decay_rate": decay_rate, "beta1": beta1,
                        "weight_decay": weight_decay, "scale_parameter": scale_parameter, "relative_step": relative_step}
        super().__init__(params, defaults)

    @staticmethod
    def _rms(t):
        return t.norm(2) / math.sqrt(t.numel())

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if g.is_sparse:
                    _fail("grad", "sparse gradients are not supported")
                g = g.float()
                st = self.state[p]
                factored = p.dim() >= 2
                if not st:
                    st["step"] = torch.tensor(0.0)
                    if factored:
                        st["exp_avg_sq_row"] = torch.zeros(g.shape[:-1], dtype=torch.float32, device=g.device)
                        st["exp_avg_sq_col"] = torch.zeros(g.shape[:-2] + g.shape[-1:], dtype=torch.float32,
                                                           device=g.device)
                    else:
                        st["exp_avg_sq"] = torch.zeros_like(g)
                    if group["beta1"] is not None:
                        st["exp_avg"] = torch.zeros_like(g)
                st["step"] += 1
                t = float(st["step"])
                x = p.float()
                rho = min(1e-2, 1.0 / math.sqrt(t)) if group["relative_step"] else group["lr"]
                alpha = rho * max(eps2, float(self._rms(x))) if group["scale_parameter"] else rho
                beta2t = 1.0 - t ** group["decay_rate"]
                g2 = g * g + eps1
                if factored:
                    r, c = st["exp_avg_sq_row"], st["exp_avg_sq_col"]
                    r.mul_(beta2t).add_(g2.mean(dim=-1), alpha=1.0 - beta2t)
                    c.mul_(beta2t).add_(g2.mean(dim=-2), alpha=1.0 - beta2t)
                    r_fac = (r / r.mean(dim=-1, keepdim=True)).rsqrt().unsqueeze(-1)
                    c_fac = c.rsqrt().unsqueeze(-2)
                    u = g * r_fac * c_fac
                else:
                    v = st["exp_avg_sq"]
                    v.mul_(beta2t).add_(g2, alpha=1.0 - beta2t)
                    u = g * v.rsqrt()
                u = u / max(1.0, float(self._rms(u)) / group["clip_threshold"])
                if group["beta1"] is not None:
                    m = st["exp_avg"]
                    m.mul_(group["beta1"]).add_(u, alpha=1.0 - group["beta1"])
                    u = m
                if group["weight_decay"] != 0:
                    x.add_(x, alpha=-group["weight_decay"] * alpha)
                x.add_(u, alpha=-alpha)
                p.copy_(x)  # x is p itself (fp32) or its fp32 copy (rounded back here)
        return loss
