"""CPU: the element conversions and the deterministic exp, exhaustively where the domain is small.
The host side is the integer code that the GPU also uses below sm_80 (the GPU suite checks the
sm_80+ hardware path against it through the norm outputs)."""

import math

import numpy as np
import torch

from mlops.norm._native import C


def _run(kind, src: np.ndarray, dst_dtype):
    src = np.ascontiguousarray(src)
    dst = np.empty(src.shape, dtype=dst_dtype)
    C._convert(kind, src.ctypes.data, dst.ctypes.data, src.size)
    return dst


def _all_f32_from_bf16_patterns():
    # every bf16 value, plus each with random low bits (values between two bf16s, ties included)
    hi = np.arange(1 << 16, dtype=np.uint32) << 16
    rng = np.random.default_rng(0)
    low = rng.integers(0, 1 << 16, size=hi.size, dtype=np.uint32)
    ties = hi | 0x8000
    return np.concatenate([hi, hi | low, ties]).view(np.float32)


def test_f32_to_bf16_all_patterns():
    f = _all_f32_from_bf16_patterns()
    ours = _run(0, f, np.uint16)
    ref = torch.from_numpy(f).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(f)
    assert np.array_equal(ours[~nan], ref[~nan])
    assert np.all((ours[nan] & 0x7FC0) == 0x7FC0)


def test_f32_to_f16_all_patterns():
    f = _all_f32_from_bf16_patterns()
    rng = np.random.default_rng(1)
    f = np.concatenate([f, rng.standard_normal(1 << 20).astype(np.float32) * 1e-5,
                        rng.standard_normal(1 << 20).astype(np.float32) * 3e4])
    ours = _run(1, f, np.uint16)
    ref = f.astype(np.float16).view(np.uint16)
    nan = np.isnan(f)
    assert np.array_equal(ours[~nan], ref[~nan])


def test_f16_to_f32_all_patterns():
    h = np.arange(1 << 16, dtype=np.uint16)
    ours = _run(2, h, np.float32)
    ref = h.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(ours[~nan].view(np.uint32), ref[~nan].view(np.uint32))


def test_e4m3_matches_torch():
    f = _all_f32_from_bf16_patterns()
    f = f[np.abs(f) <= 448]  # callers clamp; torch turns larger values into NaN
    ours = _run(3, f, np.uint8)
    ref = torch.from_numpy(f).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    assert np.array_equal(ours, ref)
    codes = np.arange(256, dtype=np.uint8)
    back = _run(4, codes, np.float32)
    tref = torch.from_numpy(codes).view(torch.float8_e4m3fn).float().numpy()
    ok = ~np.isnan(tref)
    assert np.array_equal(back[ok].view(np.uint32), tref[ok].view(np.uint32))


def test_e2m1_matches_torchao():
    import pytest

    pytest.importorskip("torchao")
    from torchao.prototype.mx_formats.kernels import f32_to_f4_unpacked

    rng = np.random.default_rng(2)
    grid = np.arange(-6.0, 6.0001, 0.125, dtype=np.float32)  # every tie and code point
    f = np.concatenate([grid, np.float32([-0.0, 0.0]), np.clip(rng.standard_normal(1 << 16) * 3, -6, 6).astype(np.float32)])
    ours = _run(5, f, np.uint8)
    ref = f32_to_f4_unpacked(torch.from_numpy(f)).numpy()
    assert np.array_equal(ours, ref)


def test_exp_det_accuracy():
    """exp_det is within 2 ulp of the correctly rounded float32 exp over its range."""
    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(-87, 88, 200001, dtype=np.float32),
                        rng.uniform(-20, 20, 200000).astype(np.float32)])
    ours = _run(6, x, np.float32)
    ref = np.exp(x.astype(np.float64)).astype(np.float32)
    ulps = np.abs(ours.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps.max() <= 2, int(ulps.max())
    assert _run(6, np.float32([100.0, -200.0, np.nan]), np.float32)[0] == np.inf


def test_silu_det():
    z = np.linspace(-30, 30, 10001, dtype=np.float32)
    ours = _run(7, z, np.float32)
    ref = (z.astype(np.float64) / (1 + np.exp(-z.astype(np.float64))))
    assert np.allclose(ours, ref, rtol=3e-7 * 4, atol=1e-30)
    assert math.isfinite(float(ours.sum()))
