"""CPU: quantized outputs byte for byte against reference quantizers applied to the same y:
NVFP4 against torchao's nvfp4_quantize (torchao.prototype.mx_formats.nvfp4_tensor, 0.18.0),
FP8 against torch's float8_e4m3fn conversion, INT8 against the formula in torch ops."""

import pytest
import torch
from mlops_testing import assert_bits_equal, randn

import mlops.norm as mn

H = 2048


def _xw(dtype=torch.bfloat16, T=8, seed=0):
    return randn((T, H), dtype, seed, scale=3.0), randn(H, dtype, seed + 1)


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16, torch.float32))
def test_int8(dtype):
    x, w = _xw(dtype)
    y = mn.rms_norm(x, w)
    out = mn.rms_norm(x, w, quant="int8", return_y=True)
    assert_bits_equal(out.y, y, "y next to the int8 output")
    yb = y.float().reshape(8, H // 16, 16)
    amax = yb.abs().amax(-1)
    scale = amax / 127.0
    # codes multiply by 127/amax (an IEEE division; torch's `127.0 / t` is reciprocal(t) * 127)
    inv = torch.where(amax == 0, torch.zeros_like(amax), torch.full_like(amax, 127.0) / amax)
    q = torch.round(yb * inv.unsqueeze(-1)).clamp(-127, 127).to(torch.int8).reshape(8, H)
    assert_bits_equal(out.scale, scale, "int8 scales")
    assert_bits_equal(out.q, q, "int8 codes")


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float32))
@pytest.mark.parametrize("global_scale", (None, 0.0123))
def test_nvfp4_matches_torchao(dtype, global_scale):
    pytest.importorskip("torchao")
    from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize

    x, w = _xw(dtype, seed=3)
    gs = None if global_scale is None else torch.tensor(global_scale, dtype=torch.float32)
    out = mn.rms_norm(x, w, quant="nvfp4", scale=gs, return_y=True)
    ref_scales, ref_q = nvfp4_quantize(out.y, block_size=16, per_tensor_scale=gs)
    assert_bits_equal(out.q, ref_q.view(torch.uint8), "nvfp4 codes")
    assert_bits_equal(out.scale, ref_scales.reshape(out.scale.shape), "nvfp4 block scales")


def test_nvfp4_without_y():
    pytest.importorskip("torchao")
    x, w = _xw(seed=5)
    out = mn.rms_norm(x, w, quant="nvfp4")
    assert out.y is None and out.q.shape == (8, H // 2) and out.scale.dtype == torch.float8_e4m3fn


def test_fp8_static():
    x, w = _xw(seed=7)
    s = torch.tensor(0.0137, dtype=torch.float32)
    out = mn.rms_norm(x, w, quant="fp8", scale=s, return_y=True)
    ref = (out.y.float() * (torch.ones_like(s) / s)).clamp(-448, 448).to(torch.float8_e4m3fn)  # times 1/scale (fp32)
    assert_bits_equal(out.q, ref, "fp8 static codes")
    assert out.scale is s


def test_fp8_dynamic():
    x, w = _xw(seed=9)
    x[3] = 0  # an all-zero row gets scale 1
    out = mn.rms_norm(x, w, quant="fp8", return_y=True)
    amax = out.y.float().abs().amax(-1, keepdim=True)
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / 448.0)
    inv = torch.where(amax == 0, torch.ones_like(amax), torch.full_like(amax, 448.0) / amax)
    assert_bits_equal(out.scale, scale, "fp8 row scales")
    ref = (out.y.float() * inv).clamp(-448, 448).to(torch.float8_e4m3fn)
    assert_bits_equal(out.q, ref, "fp8 dynamic codes")


def test_quant_with_residual_and_layer_norm():
    x, w = _xw(seed=11)
    r = randn((8, H), torch.bfloat16, 12)
    out = mn.layer_norm(x, w, w, residual=r, quant="int8", return_y=True)
    plain = mn.layer_norm(x, w, w, residual=r)
    assert_bits_equal(out.y, plain.y)
    assert_bits_equal(out.residual, plain.residual)
