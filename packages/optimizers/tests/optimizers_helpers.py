"""Shared helpers of the optimizers tests: seeded parameter sets, gradient streams, and
bit-level comparisons of two optimizers' trajectories."""

from __future__ import annotations

import torch
from mlops_testing import assert_bits_equal


def make_params(sizes, dtype=torch.float32, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(dtype).to(device).requires_grad_() for s in sizes]


def clone_params(ps):
    return [p.detach().clone().requires_grad_() for p in ps]


def grads_for(ps, step, seed=1, scale=1.0):
    g = torch.Generator().manual_seed(seed * 100003 + step)
    return [(torch.randn(p.shape, generator=g) * scale).to(p.dtype).to(p.device) for p in ps]


def run(opt, ps, steps, seed=1, scale=1.0, start=0):
    for s in range(start, start + steps):
        for p, g in zip(ps, grads_for(ps, s, seed, scale)):
            p.grad = g
        opt.step()


def assert_same(ps, qs, what=""):
    for i, (p, q) in enumerate(zip(ps, qs)):
        assert_bits_equal(p.detach(), q.detach(), f"{what} param {i}")


def max_rel(ps, qs):
    return max(float(((p.detach().double() - q.detach().double()).abs() / (q.detach().double().abs() + 1e-3)).max())
               for p, q in zip(ps, qs))
