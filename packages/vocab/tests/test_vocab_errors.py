"""CPU: bad input raises ValueError naming the argument, before anything runs."""

import pytest
import torch

import mlops.vocab as mv


def raises(arg, fn, *a, **kw):
    with pytest.raises(ValueError, match=f"^{arg}: "):
        fn(*a, **kw)


def test_embed_errors():
    t = torch.zeros(10, 64, dtype=torch.bfloat16)
    raises("ids", mv.embed, torch.tensor([1.0]), t)
    raises("ids", mv.embed, torch.zeros(0, dtype=torch.int32), t)
    raises("table", mv.embed, torch.tensor([1]), torch.zeros(10, 64, dtype=torch.int8))
    raises("table", mv.embed, torch.tensor([1]), torch.zeros(64, dtype=torch.bfloat16))
    raises("norm_weight", mv.embed, torch.tensor([1]), t, torch.ones(63))
    raises("eps", mv.embed, torch.tensor([1]), t, eps=-1.0)
    raises("variant", mv.embed, torch.tensor([1]), t, variant="w3")
    raises("out", mv.embed, torch.tensor([1]), t, out=torch.empty(1, 63))


def test_lm_head_errors():
    w = torch.zeros(100, 64, dtype=torch.bfloat16)
    raises("x", mv.lm_head, torch.zeros(9, 64, dtype=torch.bfloat16), w)  # M > 8
    raises("x", mv.lm_head, torch.zeros(2, 64), w)  # fp32 x
    raises("weight", mv.lm_head, torch.zeros(2, 128, dtype=torch.bfloat16), w)  # hidden mismatch
    raises("x", mv.lm_head, torch.zeros(2, 60, dtype=torch.bfloat16), torch.zeros(5, 60, dtype=torch.bfloat16))
    raises("row_scale", mv.lm_head, torch.zeros(2, 64, dtype=torch.bfloat16), w, row_scale=torch.ones(3))
    raises("variant", mv.lm_head, torch.zeros(2, 64, dtype=torch.bfloat16), w, variant="nope")
    raises("out", mv.lm_head, torch.zeros(2, 64, dtype=torch.bfloat16), w, out=torch.empty(2, 99))


def test_m_over_8_message_says_what_to_do():
    with pytest.raises(ValueError, match="1 .. 8 tokens.*got 9.*GEMM"):
        mv.lm_head(torch.zeros(9, 64, dtype=torch.bfloat16), torch.zeros(10, 64, dtype=torch.bfloat16))


@pytest.mark.parametrize("field,value", [("top_p", 0.0), ("top_p", 1.5), ("top_p", float("nan")), ("top_k", -1),
                                         ("temperature", -0.5), ("min_p", 2.0), ("repetition_penalty", 0.0),
                                         ("top_k", 2.5)])
def test_sampler_config_errors(field, value):
    raises(field, mv.Sampler, 2, 100, device="cpu", **{field: value})


def test_sampler_call_errors():
    s = mv.Sampler(2, 100, device="cpu", temperature=1.0)
    raises("logits", s, torch.zeros(2, 101))
    raises("logits", s, torch.zeros(2, 100, dtype=torch.float16))
    raises("history_len", s, torch.zeros(2, 100), history=torch.zeros(2, 3, dtype=torch.int32))
    raises("history", s, torch.zeros(2, 100), history=torch.zeros(3, 3, dtype=torch.int32),
           history_len=torch.zeros(3, dtype=torch.int32))
    raises("config", mv.Sampler, 2, 100, device="cpu", configs=[{"topk": 3}, {}])
    raises("configs", mv.Sampler, 2, 100, device="cpu", configs=[{}])
    raises("seed", mv.Sampler, 2, 100, device="cpu", seed=[1, 2, 3])
    raises("batch", mv.Sampler, 0, 100, device="cpu")


def test_c_api_rejects_bad_configs_too():
    """The C API's own check (mlops_sample_check_configs) on a packed image, with the argument named."""
    from mlops.vocab._native import C

    good = mv.pack_configs([dict(top_p=0.5)])
    bad = good.clone()
    bad.view(torch.float32)[0, 2] = 0.0  # top_p
    with pytest.raises(ValueError, match="^top_p: "):
        C.check_configs(bad.data_ptr(), 1)
    bad = good.clone()
    bad[0, 1] = -4  # top_k
    with pytest.raises(ValueError, match="^top_k: "):
        C.check_configs(bad.data_ptr(), 1)


def test_device_check_treats_cuda_as_the_current_index():
    # GPU run 6 (H200): Sampler(device="cuda") rejected logits on cuda:0; the check now compares
    # a bare "cuda" with any index, and the Sampler keeps the indexed device.
    from mlops.vocab._common import same_device

    assert same_device(torch.device("cuda", 0), torch.device("cuda"))
    assert same_device(torch.device("cuda", 1), "cuda:1")
    assert not same_device(torch.device("cuda", 1), "cuda:0")
    assert not same_device(torch.device("cpu"), "cuda")
