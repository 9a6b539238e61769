"""CPU (and GPU where present): the torch.library registration. opcheck runs the schema and fake
tensor checks; torch.compile(fullgraph=True) traces through the custom ops and gives eager's bits."""

import pytest
import torch
from mlops_testing import HAS_CUDA, assert_bits_equal, randn

import mlops.vocab as mv
from mlops.vocab import _embed, _lm_head, _sampler

DEVICES = ["cpu"] + (["cuda"] if HAS_CUDA else [])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    table = randn((50, 256), torch.bfloat16, 1, device=device)
    ids = torch.tensor([1, 2, 60], dtype=torch.int32, device=device)
    out = torch.empty(3, 256, device=device)
    oov = torch.zeros(1, dtype=torch.int32, device=device)
    torch.library.opcheck(_embed._embed_into, (ids, table, None, out, None, None, None, oov, 0.0, -1),
                          test_utils=("test_schema", "test_faketensor"))
    x = randn((2, 256), torch.bfloat16, 2, device=device)
    logits = torch.empty(2, 50, device=device)
    torch.library.opcheck(_lm_head._lm_head_into, (x, table, None, logits, None, None, 1.0, -1),
                          test_utils=("test_schema", "test_faketensor"))
    s = mv.Sampler(2, 50, device=device, temperature=1.0)
    toks = torch.empty(2, dtype=torch.int32, device=device)
    flags = torch.empty(2, dtype=torch.int32, device=device)
    torch.library.opcheck(_sampler._sample_into,
                          (logits.normal_(), s.configs, s.seeds, s.steps, None, None, None, toks, None, flags,
                           None, None, None, -1),
                          test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_same_bits(device):
    table = randn((300, 512), torch.bfloat16, 3, device=device)
    w = randn(512, torch.bfloat16, 4, device=device)
    ids = torch.tensor([5, 299], dtype=torch.int64, device=device)

    def step(ids):
        e = mv.embed(ids, table, w, eps=1e-6)
        o = mv.lm_head(e.xw, table, row_scale=e.rms_r, logit_scale=0.5, stats=True)
        return o.logits, o.max, o.argmax, o.key_hist

    eager = step(ids)
    compiled = torch.compile(step, fullgraph=True, backend="eager" if device == "cpu" else "inductor")(ids)
    for a, b in zip(eager, compiled):
        assert_bits_equal(a, b)
