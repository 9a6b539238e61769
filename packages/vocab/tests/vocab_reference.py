"""Independent references for mlops.vocab: float64 math and the roundings spelled out in torch ops."""

from __future__ import annotations

import torch


def softmax_masses(z: torch.Tensor, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0) -> torch.Tensor:
    """The renormalised softmax in float64 after HF's warpers in HF's order (temperature, top-k with
    ties at the k-th value kept, top-p keeping the smallest top set reaching p with ties kept, min-p
    relative to the top probability)."""
    s = z.double() / temperature
    keep = torch.isfinite(s) | (s == float("-inf"))
    s = torch.where(keep, s, torch.full_like(s, float("-inf")))
    if 0 < top_k < s.numel():
        kth = torch.topk(s, top_k).values[-1]
        s = torch.where(s < kth, torch.full_like(s, float("-inf")), s)
    p = torch.softmax(s, 0)
    if top_p < 1.0:
        # the mass strictly above each value: exclusive cumulative sums in descending order, a run
        # of equal values taking the sum before its first member
        vals, order = torch.sort(p, descending=True)
        excl = torch.cumsum(vals, 0) - vals
        _, inverse, counts = torch.unique_consecutive(vals, return_inverse=True, return_counts=True)
        first = torch.cumsum(counts, 0) - counts
        above = torch.empty_like(p)
        above[order] = excl[first[inverse]]
        p = torch.where(above < top_p, p, torch.zeros_like(p))
        p = p / p.sum()
    if min_p > 0:
        p = torch.where(p >= min_p * p.max(), p, torch.zeros_like(p))
    return p / p.sum()


def penalize64(z: torch.Tensor, history: list[int], rep=1.0, presence=0.0, frequency=0.0) -> torch.Tensor:
    """HF's RepetitionPenaltyLogitsProcessor then OpenAI's presence / frequency penalties, in float32
    torch ops (one rounding a step, as the package does)."""
    out = z.clone()
    counts = {}
    for t in history:
        if 0 <= t < z.numel():
            counts[t] = counts.get(t, 0) + 1
    for t, c in counts.items():
        v = out[t]
        if rep != 1.0:
            v = v / rep if v > 0 else v * rep
        v = v - torch.tensor(presence, dtype=torch.float32)
        v = v - torch.tensor(frequency, dtype=torch.float32) * torch.tensor(float(c), dtype=torch.float32)
        out[t] = v
    return out


def lm_head64(x, w, row_scale=None, logit_scale=1.0):
    y = x.double() @ w.double().T
    if row_scale is not None:
        y = y * row_scale.double()[:, None]
    return y * logit_scale


def stats_of(z: torch.Tensor):
    """What lm_head(..., stats=True) returns for these logits (max, lowest argmax, key-byte counts),
    built with torch ops on z's device (the bench's helper)."""
    import mlops.vocab as mv

    bits = z.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    key = torch.where(bits >= 0x80000000, (~bits) & 0xFFFFFFFF, bits | 0x80000000)
    kmax = key.max(1, keepdim=True).values
    first = torch.argmax((key == kmax).to(torch.int8), 1, keepdim=True)
    best = ((kmax << 32) | (0xFFFFFFFF - first))[:, 0]
    hist = torch.stack([torch.bincount(key[i] >> 24, minlength=256) for i in range(z.shape[0])]).to(torch.int32)
    mx, am = mv.decode_best(best)
    return mv.LmHeadOutput(z, mx, am, hist, best)
