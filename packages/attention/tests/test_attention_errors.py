"""CPU (CI): bad input raises ValueError naming the argument before anything runs; a full cache
raises CacheFullError and writes nothing (records, sink, tail, lengths all unchanged)."""

import pytest
import torch

import mlops.attention as A


def kv(B, H, T, D, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, H, T, D, generator=g).bfloat16(), torch.randn(B, H, T, D, generator=g).bfloat16()


@pytest.mark.parametrize("kwargs, arg", [
    (dict(batch=0, kv_heads=1, capacity=10), "batch"),
    (dict(batch=1, kv_heads=0, capacity=10), "kv_heads"),
    (dict(batch=1, kv_heads=1, capacity=0), "capacity"),
    (dict(batch=1, kv_heads=1, capacity=10, head_dim=96), "head_dim"),
    (dict(batch=1, kv_heads=1, capacity=10, mode="5+1"), "mode"),
])
def test_empty_bad_arguments(kwargs, arg):
    with pytest.raises(ValueError, match=f"^{arg}:"):
        A.empty(device="cpu", **kwargs)


def test_append_mismatches_are_named():
    c = A.empty(2, 2, 512, 64, device="cpu")
    k, v = kv(2, 2, 3, 64)
    with pytest.raises(ValueError, match="^k: expected kv_heads 2"):
        A.append(c, k[:, :1], v[:, :1])
    with pytest.raises(ValueError, match="^k: expected head_dim 64"):
        A.append(c, *kv(2, 2, 3, 128))
    with pytest.raises(ValueError, match="^k: expected batch 2"):
        A.append(c, k[:1], v[:1])
    with pytest.raises(ValueError, match="^k: expected bfloat16"):
        A.append(c, k.float(), v)
    with pytest.raises(ValueError, match="^v: expected bfloat16"):
        A.append(c, k, v.half())
    with pytest.raises(ValueError, match="^v: expected the shape of k"):
        A.append(c, k, v[:, :, :2])
    with pytest.raises(ValueError, match="^k: expected a contiguous last dimension"):
        A.append(c, k.transpose(2, 3).contiguous().transpose(2, 3), v)  # head_dim stride 3
    assert c.lengths.tolist() == [0, 0]


def test_encode_lengths_errors():
    k, v = kv(2, 1, 300, 64)
    with pytest.raises(ValueError, match=r"^lengths: lengths\[1\] = 301"):
        A.encode(k, v, [10, 301])
    with pytest.raises(ValueError, match="beyond capacity 200"):
        A.encode(k, v, [10, 250], capacity=200)
    with pytest.raises(ValueError, match="^lengths: expected 2 lengths"):
        A.encode(k, v, [10])


def test_decode_mismatches_are_named():
    k, v = kv(2, 2, 300, 64)
    c = A.encode(k, v)
    q = torch.randn(2, 4, 64).bfloat16()
    with pytest.raises(ValueError, match="^q: expected q_heads a multiple of kv_heads = 2"):
        A.decode(q[:, :3], c)
    with pytest.raises(ValueError, match="^q: expected head_dim 64"):
        A.decode(torch.randn(2, 4, 128).bfloat16(), c)
    with pytest.raises(ValueError, match="^q: expected bfloat16"):
        A.decode(q.float(), c)
    with pytest.raises(ValueError, match="^q: expected batch 2"):
        A.decode(q[:1], c)
    with pytest.raises(ValueError, match="^out_dtype:"):
        A.decode(q, c, out_dtype=torch.float16)
    with pytest.raises(ValueError, match="^scale:"):
        A.decode(q, c, scale=-1.0)
    with pytest.raises(ValueError, match="^gap:"):
        A.decode(q, c, gap=0.0)
    with pytest.raises(ValueError, match="^cache:"):
        A.decode(q, "not a cache")


@pytest.mark.parametrize("mode", ["3+3", "4+2"])
def test_full_cache_writes_nothing(mode):
    B, H, D, cap = 2, 2, 64, 400
    k, v = kv(B, H, cap + 10, D, seed=1)
    c = A.encode(k[:, :, :390].contiguous(), v[:, :, :390].contiguous(), [390, 200], capacity=cap, mode=mode)
    before = [t.clone() for t in (c.records, c.sink_k, c.sink_v, c.tail_k, c.tail_v, c.lengths)]
    with pytest.raises(A.CacheFullError, match="sequence 0 holds 390 tokens, 11 more exceed capacity 400"):
        A.append(c, k[:, :, :11], v[:, :, :11])
    for a, b in zip(before, (c.records, c.sink_k, c.sink_v, c.tail_k, c.tail_v, c.lengths)):
        assert torch.equal(a, b)
    # the host emulation's own check (the C API's MLOPS_ERR_DATA), past the Python pre-check
    c.host_lengths = None
    with pytest.raises(A.CacheFullError, match="capacity 400; nothing written"):
        A.append(c, k[:, :, :11], v[:, :, :11])
    assert c.flags.item() == 1
    for a, b in zip(before, (c.records, c.sink_k, c.sink_v, c.tail_k, c.tail_v, c.lengths)):
        assert torch.equal(a, b)
    A.append(c, k[:, :, :10], v[:, :, :10])  # exactly full is fine
    assert c.lengths.tolist() == [400, 210]


def test_decode_variants_by_name_or_index():
    vs = A.decode_variants()
    names = [v["name"] for v in vs]
    assert names == ["items", "items+combine_warps", "warps", "warps+coarse_warps", "imma+coarse_warps",
                     "imma+coarse_imma", "imma_occ+coarse_imma", "stage+coarse_imma", "stage_pipe+coarse_imma",
                     "stage_bf+coarse_imma", "mma_pv+coarse_imma", "mma_pv4+coarse_imma", "mma_pv4w+coarse_imma",
                     "mma_pv4f+coarse_imma", "mma_pv4r+coarse_imma"]
    assert [v["pv"] for v in vs] == ["chains"] * 10 + ["digits"] * 5
    k, v = kv(1, 2, 300, 64)
    c = A.encode(k, v)
    q = torch.randn(1, 4, 64).bfloat16()
    ref = {pv: A.decode(q, c, out_dtype=torch.float32, pv=pv) for pv in A.PV_FORMS}
    assert torch.equal(A.decode(q, c, out_dtype=torch.float32), ref["digits"])  # the default form
    assert not torch.equal(ref["digits"], ref["chains"])  # two numerics (close: test_attention_decode.py)
    for var in names + list(range(len(names))):  # the host emulation runs the variant's form
        pv = vs[var if isinstance(var, int) else names.index(var)]["pv"]
        assert torch.equal(A.decode(q, c, out_dtype=torch.float32, variant=var), ref[pv])
    for bad in ("nope", len(names), -1, True):
        with pytest.raises(ValueError, match="^variant:"):
            A.decode(q, c, variant=bad)
    with pytest.raises(ValueError, match="^pv: variant 'warps' computes pv='chains', got pv='digits'"):
        A.decode(q, c, variant="warps", pv="digits")
    with pytest.raises(ValueError, match="^pv: expected one of"):
        A.decode(q, c, pv="fp32")


def test_decode_planner_pick():
    # pv digits: mma_pv+coarse_imma (docs/attention.md, "Two P V forms"), whose launch takes mma_pv4r's refine past
    # mma_pv's one round of items (session 14, GPU run 79; the same bits): where that makes them one round (every
    # device, as mma_pv4's since session 12) or, on sm_90, in more rounds too; on sm_90 also within mma_pv's one round
    # (GPU run 80: B1 L4K 23.97 us against 25.79);
    # pv chains: H200 runs 18 / 20: imma_occ+coarse_imma fastest at B1 L16K and B8 L128K, exact and skip;
    # below sm_80 decode_device takes warps+coarse_warps (no tensor core), unaligned rows items+combine_warps
    picks = [(v["name"], v["pv"]) for v in A.decode_variants() if v["planner"]]
    assert picks == [("imma_occ+coarse_imma", "chains"), ("mma_pv+coarse_imma", "digits")]
    min_sm = {v["name"]: v["min_sm"] for v in A.decode_variants()}
    # tensor-core MMA (shuffles below sm_80)
    assert min_sm["imma+coarse_warps"] == min_sm["imma+coarse_imma"] == min_sm["imma_occ+coarse_imma"] == 80
    assert min_sm["mma_pv+coarse_imma"] == min_sm["mma_pv4+coarse_imma"] == min_sm["mma_pv4w+coarse_imma"] == 80
    assert min_sm["mma_pv4f+coarse_imma"] == min_sm["mma_pv4r+coarse_imma"] == 80
    assert min_sm["stage+coarse_imma"] == min_sm["stage_pipe+coarse_imma"] == min_sm["stage_bf+coarse_imma"] == 90
