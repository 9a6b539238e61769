"""CPU: bad input raises a ValueError that names the argument and what was expected, before
anything runs (the outputs a call would write stay untouched)."""

import pytest
import torch

import mlops.norm as mn

H = 512


def x_(dtype=torch.bfloat16, shape=(4, H)):
    return torch.randn(shape).to(dtype)


def w_(dtype=torch.bfloat16, n=H):
    return torch.randn(n).to(dtype)


CASES = [
    ("x", "expected bfloat16, float16 or float32", lambda: mn.rms_norm(x_().to(torch.int32), w_())),
    ("x", "non-empty", lambda: mn.rms_norm(torch.empty(0, H, dtype=torch.bfloat16), w_())),
    ("x", "contiguous last dimension", lambda: mn.rms_norm(x_(shape=(H, 4)).t(), w_())),
    ("x", "torch.Tensor", lambda: mn.rms_norm([1.0, 2.0], w_())),
    ("weight", "expected shape (512,)", lambda: mn.rms_norm(x_(), w_(n=256))),
    ("weight", "expected bfloat16, float16 or float32", lambda: mn.rms_norm(x_(), w_().to(torch.int8))),
    ("weight", "contiguous", lambda: mn.rms_norm(x_(), torch.randn(2 * H)[::2])),
    ("bias", "expected weight's dtype", lambda: mn.layer_norm(x_(), w_(), w_(torch.float32))),
    ("kind", "'rms' or 'layer'", lambda: mn.norm(x_(), w_(), kind="batch")),
    ("group_size", "multiple of 256", lambda: mn.rms_norm(x_(), w_(), group_size=100)),
    ("group_size", "divides", lambda: mn.rms_norm(x_(shape=(2, 768)), w_(n=768), group_size=512)),
    ("residual", "expected shape", lambda: mn.rms_norm(x_(), w_(), residual=x_(shape=(3, H)))),
    ("residual", "expected dtype", lambda: mn.rms_norm(x_(), w_(), residual=x_(torch.float16))),
    ("gate", "contiguous last dimension", lambda: mn.rms_norm(x_(), w_(), gate=x_(shape=(H, 4)).t())),
    ("gate_position", "'before' or 'after'", lambda: mn.rms_norm(x_(), w_(), gate=x_(), gate_position="middle")),
    ("order", "'hf' or 'single'", lambda: mn.rms_norm(x_(), w_(), order="twice")),
    ("quant", "'int8'", lambda: mn.rms_norm(x_(), w_(), quant="int4")),
    ("x", "multiple of 16", lambda: mn.rms_norm(x_(shape=(2, 40)), w_(n=40), quant="int8")),
    ("scale", "float32 tensor of one element", lambda: mn.rms_norm(x_(), w_(), quant="fp8", scale=1.0)),
    ("scale", "only FP8", lambda: mn.rms_norm(x_(), w_(), quant="int8", scale=torch.ones(1))),
    ("out", "expected shape", lambda: mn.rms_norm(x_(), w_(), out=torch.empty(4, 256, dtype=torch.bfloat16))),
    ("out", "expected dtype", lambda: mn.rms_norm(x_(), w_(), out=torch.empty(4, H))),
    ("residual_out", "without a residual", lambda: mn.rms_norm(x_(), w_(), residual_out=x_())),
    ("variant", "expected one of", lambda: mn.rms_norm(x_(), w_(), variant="w3")),
    ("variant", "index below", lambda: mn.rms_norm(x_(), w_(), variant=99)),
    ("return_y", "needs a quantized output", lambda: mn.rms_norm(x_(), w_(), return_y=False)),
]


@pytest.mark.parametrize("arg,expect,call", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_names_the_argument(arg, expect, call):
    with pytest.raises(ValueError) as e:
        call()
    msg = str(e.value)
    assert msg.startswith(arg + ":"), msg
    assert expect in msg, msg


def test_out_untouched_on_error():
    out = torch.full((4, H), 7.0, dtype=torch.bfloat16)
    with pytest.raises(ValueError):
        mn.rms_norm(x_(), w_(n=256), out=out)
    assert torch.all(out == 7.0)


def test_c_level_validation_reaches_python():
    """What only the C API checks (rows overlapping through a too-small stride) arrives as ValueError."""
    from mlops.norm._native import C

    with pytest.raises(ValueError, match="^x: row stride"):
        C.run(False, 0, 2, 512, 0, 0, 0, 0, 0, 1e-6, 0.0, 1, 16, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 512,
              0, 0, 0, 0, 0, -1)


def test_mixed_devices_named():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU to place tensors on two devices")
    with pytest.raises(ValueError, match="^weight: expected device"):
        mn.rms_norm(x_().cuda(), w_())
