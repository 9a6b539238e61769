"""CPU (CI): the torch.library registrations (mlops_attention::append_, ::decode_into): schema,
fake (meta) implementations and autograd registration by torch.library.opcheck on real CPU calls;
the dispatcher path gives the same bits as the eager path."""

import torch

import mlops.attention as A
from mlops.attention import _ops as O

UTILS = ("test_schema", "test_faketensor", "test_autograd_registration")


def cache_and_q():
    g = torch.Generator().manual_seed(0)
    k = torch.randn(2, 2, 300, 64, generator=g).bfloat16()
    v = torch.randn(2, 2, 300, 64, generator=g).bfloat16()
    return A.encode(k, v, [300, 260], capacity=400), torch.randn(2, 4, 64, generator=g).bfloat16()


def test_opcheck_decode():
    c, q = cache_and_q()
    out = torch.empty(2, 4, 64)
    args = (q, c.records, c.sink_k, c.sink_v, c.tail_k, c.tail_v, c.lengths, c.scratch(4), out, O._geo(c), 0.125,
            False, 20.0, 0, 3, 1)  # variant code 3: "warps", pv 1: chains (its form)
    torch.library.opcheck(O._decode_op, args, test_utils=UTILS)


def test_opcheck_append():
    c, _ = cache_and_q()
    g = torch.Generator().manual_seed(1)
    k, v = torch.randn(2, 2, 5, 64, generator=g).bfloat16(), torch.randn(2, 2, 5, 64, generator=g).bfloat16()
    args = (c.records, c.sink_k, c.sink_v, c.tail_k, c.tail_v, c.lengths, c.flags, k, v, None, O._geo(c), 5, 5)
    torch.library.opcheck(O._append_op, args, test_utils=UTILS)


def test_dispatcher_path_same_bits():
    c, q = cache_and_q()
    eager = A.decode(q, c, out_dtype=torch.float32)
    out = torch.empty(2, 4, 64)
    torch.ops.mlops_attention.decode_into(q, c.records, c.sink_k, c.sink_v, c.tail_k, c.tail_v, c.lengths,
                                          c.scratch(4), out, O._geo(c), 0.125, False, A.DEFAULT_GAP, 0, 0, 0)
    assert torch.equal(out.view(torch.int32), eager.view(torch.int32))
