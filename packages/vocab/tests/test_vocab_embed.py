"""CPU: embed's host emulation (what CPU tensors run, and what the GPU must equal bit for bit):
rows widened exactly, bf16(x * w) as torch rounds it, the per-256 sums of squares against float64,
rms_r bit for bit the r of mlops-norm (embed + first norm == the unfused pair), OOV ids."""

import pytest
import torch
from mlops_testing import assert_bits_equal, randn

import mlops.vocab as mv

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H", [256, 1000, 4096, 40])
@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64])
def test_rows_widened_and_xw(dtype, H, id_dtype):
    V = 37
    table = randn((V, H), dtype, H, scale=2.0)
    w = randn(H, torch.bfloat16, H + 1)
    ids = torch.tensor([0, 36, 5, 5, 17], dtype=id_dtype)
    o = mv.embed(ids, table, w, eps=1e-6, sums=True)
    assert_bits_equal(o.x, table[ids.long()].float(), "x")
    assert_bits_equal(o.xw, (table[ids.long()].float() * w.float()).bfloat16(), "xw")
    assert int(o.oov) == 0
    ref = table[ids.long()].double()
    units = (H + 255) // 256
    pad = torch.zeros(ids.numel(), units * 256, dtype=torch.float64)
    pad[:, :H] = ref
    ss = (pad.reshape(-1, units, 256) ** 2).sum(-1)
    # fp32 sums of 256 squares: relative error below 256 * 2^-24 (a loose bound; typically 1e-7)
    assert float(((o.unit_sumsq.double() - ss).abs() / ss.clamp_min(1e-30)).max()) < 256 * 2**-24
    r64 = 1 / torch.sqrt((ref**2).mean(-1) + 1e-6)
    assert float(((o.rms_r.double() - r64).abs() / r64).max()) < 2**-16


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("H", [256, 1000, 4096])
def test_embed_then_norm_equals_unfused(dtype, H):
    """The r embed computes is mlops-norm's r bit for bit: rebuild the norm's HF-order output from it
    with torch's correctly rounded float32 ops and compare with mlops.norm on the same rows."""
    mn = pytest.importorskip("mlops.norm")
    V = 50
    table = randn((V, H), dtype, 7 * H, scale=0.5)
    w = randn(H, dtype, 3)
    ids = torch.tensor([3, 49, 0, 12], dtype=torch.int64)
    o = mv.embed(ids, table, eps=1e-6)
    rows = table[ids]
    y_norm = mn.rms_norm(rows, w, eps=1e-6, order="hf")
    n = (rows.float() * o.rms_r[:, None]).to(dtype).float()
    y_fused = (w.float() * n).to(dtype)
    assert_bits_equal(y_norm, y_fused, f"norm(embed rows) vs rebuilt from embed's r ({dtype}, H={H})")


def test_oov_gives_zero_row_and_flag():
    table = randn((10, 512), torch.bfloat16, 1)
    ids = torch.tensor([1, 10, -3, 9, 1 << 40], dtype=torch.int64)
    o = mv.embed(ids, table, torch.ones(512), eps=1e-6, sums=True)
    assert int(o.oov) == 1
    for i in (1, 2, 4):
        assert torch.count_nonzero(o.x[i]) == 0 and torch.count_nonzero(o.xw[i].float()) == 0
        assert torch.count_nonzero(o.unit_sumsq[i]) == 0
        assert float(o.rms_r[i]) == pytest.approx(1e3, rel=1e-6)
    assert_bits_equal(o.x[3], table[9].float())
    ok = mv.embed(torch.tensor([0, 9], dtype=torch.int32), table)
    assert int(ok.oov) == 0


def test_ids_keep_their_shape():
    table = randn((20, 64), torch.float32, 2)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
    o = mv.embed(ids, table, sums=True)
    assert o.x.shape == (2, 3, 64) and o.unit_sumsq.shape == (2, 3, 1)
    assert_bits_equal(o.x, table[ids.long()])


def test_variants_listed():
    names = [v["name"] for v in mv.embed_variants()]
    assert names == ["w1", "w2", "w4", "w8"]
