"""CPU (CI): why K is quantized per channel and V per token (docs/attention.md, "Quantization
axes"), measured on synthetic data shaped like real K/V: K with a few outlier channels (large
per-channel offsets and gains), V without. 6-bit min/max codes in groups of 128 tokens, float64.

Metrics: relative reconstruction error ||x - x^||_F / ||x||_F, and for K the RMS error of the
attention scores q . k / sqrt(D) for random q. The test asserts the chosen axes win on the metric
that matters for each (K: scores; V: reconstruction), and prints the table that docs/attention.md
quotes (pytest -s)."""

import math

import torch
from attention_reference import fake_quant, outlier_k


def rel(x, xq):
    return ((x.double() - xq).norm() / x.double().norm()).item()


def score_rms(k, kq, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(64, k.shape[1], generator=g, dtype=torch.float64)
    d = (q @ (k.double() - kq).T) / math.sqrt(k.shape[1])
    return d.pow(2).mean().sqrt().item()


def test_k_per_channel_v_per_token():
    T, D = 1024, 128
    k = outlier_k(T, D, seed=1)
    v = torch.randn(T, D, generator=torch.Generator().manual_seed(2))
    rows = {}
    for axis in ("channel", "token"):
        kq, vq = fake_quant(k, axis), fake_quant(v, axis)
        rows[axis] = (rel(k, kq), score_rms(k, kq), rel(v, vq))
    print("\naxis      K rel err   K score rms   V rel err")
    for axis, (a, b, c) in rows.items():
        print(f"{axis:8s}  {a:9.5f}   {b:11.5f}   {c:9.5f}")
    # K: per channel is >= 2x better with outlier channels (per token, one outlier sets the
    # step of every channel of the token)
    assert rows["channel"][0] * 2 < rows["token"][0]
    assert rows["channel"][1] * 2 < rows["token"][1]
    # V: no outlier channels; per token is at least as good, and it is what the decode needs
    # (one scale a token folds into the probability: p * scale, p * min)
    assert rows["token"][2] <= rows["channel"][2] * 1.05
