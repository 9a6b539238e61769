"""CPU and GPU: the torch.library registration. opcheck runs the schema/fake/dispatch checks,
torch.compile(fullgraph=True) traces through the custom op and gives the eager bits."""

import pytest
import torch
from mlops_testing import HAS_CUDA, assert_bits_equal, randn

import mlops.norm as mn
from mlops.norm import _ops

DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = randn((8, 512), torch.bfloat16, 1, device=device)
    w = randn(512, torch.bfloat16, 2, device=device)
    y = torch.empty_like(x)
    args = (x, w, None, None, None, None, y, None, None, None, 0, 1e-6, 0.0, 0, 0, 0, 0, -1)
    torch.library.opcheck(_ops._norm_into, args, test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_same_bits(device):
    x = randn((16, 1024), torch.bfloat16, 3, device=device)
    r = randn((16, 1024), torch.bfloat16, 4, device=device)
    w = randn(1024, torch.bfloat16, 5, device=device)

    def block(x, r, w):
        out = mn.rms_norm(x, w, residual=r, quant="int8", return_y=True)
        return out.y, out.residual, out.q, out.scale

    eager = block(x, r, w)
    compiled = torch.compile(block, fullgraph=True, backend="eager" if device == "cpu" else "inductor")(x, r, w)
    for a, b in zip(eager, compiled):
        assert_bits_equal(a, b)
