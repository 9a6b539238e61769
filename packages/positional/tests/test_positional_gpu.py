"""GPU: the kernels against the host emulation bit for bit, for every dtype, layout, vector /
scalar path, cache / on-the-fly path, tokens-per-CTA choice, in place and out of place; mrope
and out-of-range positions; the cache builder; CUDA-graph capture with positions (and dynamic
inv_freq) in device memory; torch.compile(fullgraph=True); a kernel compiled by NVRTC (cupy)
from mlops/rope.cuh. Run under each build of nox -s gpu_build (sm_90 and the compute_61 / 70 /
75 / 80 PTX builds: the bf16 store takes cvt.rn.bf16x2 from sm_80, the integer rounding below)."""

import pytest
import torch
from mlops_testing import assert_bits_equal, gpu_arch_tag, randn, requires_cuda

import mlops.positional as P

pytestmark = requires_cuda

DTYPES = (torch.bfloat16, torch.float16, torch.float32)
VARIANTS = [v["name"] for v in P.rope_variants()]  # every kernel variant must give the host's bits


def _inv_freq(rd, theta=10000.0):
    return 1.0 / (theta ** (torch.arange(0, rd, 2, dtype=torch.int64).float() / rd))


def _both(fn):
    """fn(device) on the GPU and on the CPU (host emulation); returns (gpu, cpu) results."""
    return fn("cuda"), fn("cpu")


def _check(gpu, cpu, what):
    assert len(gpu) == len(cpu), what
    for i, (g, c) in enumerate(zip(gpu, cpu)):  # noqa: B905 (lengths checked; strict= needs 3.10)
        if g is None:
            assert c is None
            continue
        assert_bits_equal(g, c, f"{what} [{i}] ({gpu_arch_tag()})")


# (hq, hk, head_dim, rotary_dim): Llama-3 8B GQA, MQA, head_dim 64 / 80 (partial, Phi-2) / 256
# (GPT-J partial), and rotary_dim 66 (half 33: no 16-byte chunk fits, the scalar path).
SHAPES = [(32, 8, 128, 128), (8, 1, 64, 64), (6, 2, 80, 32), (4, 4, 256, 64), (3, 1, 96, 66)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("on_the_fly", [False, True])
def test_kernel_equals_host_emulation(dtype, interleaved, shape, on_the_fly):
    hq, hk, D, rd = shape
    T = 300
    f = _inv_freq(rd, 500000.0)
    pos = torch.randint(0, 65536, (T,), generator=torch.Generator().manual_seed(D + rd))
    q0, k0 = randn((T, hq, D), dtype, seed=1), randn((T, hk, D), dtype, seed=2)

    def run(dev, variant=None):
        q, k = q0.to(dev), k0.to(dev)
        if on_the_fly:
            return P.apply_rope(q, k, pos.to(dev), inv_freq=f.to(dev), attention_scaling=1.25,
                                interleaved=interleaved, variant=variant)
        cache = P.build_cos_sin_cache(f, 65536, 1.25, device=dev)
        return P.apply_rope(q, k, pos.to(dev), cache, interleaved=interleaved, variant=variant)

    cpu = run("cpu")  # once for every variant
    for v in [None, *VARIANTS]:
        _check(run("cuda", v), cpu, f"{dtype} {shape} interleaved={interleaved} on_the_fly={on_the_fly} variant={v}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tpc,hpc", [(1, 0), (3, 0), (16, 0), (0, 0), (1, 5), (2, 19), (4, 1)])
@pytest.mark.parametrize("layout", ["tokens", "bshd", "bhsd", "fused_inplace", "misaligned"])
def test_layouts_and_cta_splits(dtype, tpc, hpc, layout):
    """Every token layout, CTA split (tokens and heads a CTA; the planner's for (0, 0)) and kernel
    variant gives the host emulation's bits; 'misaligned' shifts the
    tensors by one element so the 16-byte path is refused and the scalar path runs."""
    B, S, hq, hk, D = 3, 77, 16, 4, 128
    T = B * S
    f = _inv_freq(D)
    pos = torch.randint(0, 8192, (B, S), generator=torch.Generator().manual_seed(tpc + hpc + 5)).int()
    base = randn((T * (hq + 2 * hk) * D + 1,), dtype, seed=tpc + hpc + 7)

    def run(dev, v=None):
        cache = P.build_cos_sin_cache(f, 8192, device=dev)
        buf = base.to(dev).clone()
        p = pos.to(dev)
        if layout == "misaligned":
            qkv = buf[1:].view(T, (hq + 2 * hk) * D)
        else:
            qkv = buf[:-1].view(T, (hq + 2 * hk) * D)
        q = qkv[:, : hq * D].view(T, hq, D)
        k = qkv[:, hq * D:(hq + hk) * D].view(T, hk, D)
        if layout in ("tokens", "misaligned"):
            return P.apply_rope(q, k, p.view(-1), cache, tokens_per_cta=tpc, heads_per_cta=hpc, variant=v)
        if layout == "bshd":
            return P.apply_rope(q.reshape(B, S, hq, D), k.reshape(B, S, hk, D), p, cache, tokens_per_cta=tpc,
                                heads_per_cta=hpc, variant=v)
        if layout == "bhsd":
            qh = q.reshape(B, S, hq, D).transpose(1, 2)
            kh = k.reshape(B, S, hk, D).transpose(1, 2)
            return P.apply_rope(qh, kh, p, cache, head_first=True, tokens_per_cta=tpc, heads_per_cta=hpc, variant=v)
        P.apply_rope(q, k, p.view(-1), cache, inplace=True, tokens_per_cta=tpc, heads_per_cta=hpc, variant=v)
        return (qkv,)  # q, k rotated and v untouched, in the one buffer

    cpu = run("cpu")
    for v in [None, *VARIANTS]:
        _check(run("cuda", v), cpu, f"{layout} tpc={tpc} hpc={hpc} {dtype} variant={v}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_mrope_and_out_of_range(dtype):
    T, D = 200, 128
    f = _inv_freq(D, 1000000.0)
    pos = torch.randint(0, 4096, (3, T), generator=torch.Generator().manual_seed(3))
    pos[1, 17], pos[0, 50], pos[2, 199] = 4096, -5, 1 << 40  # three tokens with one bad row each
    q0, k0 = randn((T, 12, D), dtype, seed=3), randn((T, 2, D), dtype, seed=4)

    def run(dev):
        flag = torch.zeros(1, dtype=torch.int32, device=dev)
        cache = P.build_cos_sin_cache(f, 4096, device=dev)
        a = P.apply_rope(q0.to(dev), k0.to(dev), pos.to(dev), cache, mrope_section=[16, 24, 24], out_of_range=flag)
        q, k = q0.to(dev).clone(), k0.to(dev).clone()  # in place: never q0 itself (.to("cpu") would be)
        P.apply_rope(q, k, pos.to(dev), inv_freq=f.to(dev), max_positions=4096, mrope_section=[16, 24, 24],
                     inplace=True)
        return (*a, q, k, flag)

    gpu, cpu = _both(run)
    _check(gpu, cpu, f"mrope {dtype}")
    assert int(gpu[-1]) == 1
    for t in (17, 50, 199):
        assert torch.equal(gpu[0][t].cpu(), q0[t]) and torch.equal(gpu[2][t].cpu(), q0[t])


def test_cache_builder_gpu_equals_host():
    for rd, scale in ((128, 1.0), (64, 1.2079441541679836), (256, 1.0)):
        f = _inv_freq(rd, 1e6)
        assert_bits_equal(P.build_cos_sin_cache(f, 200000, scale, device="cuda"),
                          P.build_cos_sin_cache(f, 200000, scale, device="cpu"), f"cache rd={rd}")


def test_large_grid():
    """70000 tokens, 2 heads: many CTAs, the last one partial."""
    T = 70001
    f = _inv_freq(64)
    pos = torch.randint(0, 1 << 20, (T,), generator=torch.Generator().manual_seed(9))
    q0 = randn((T, 2, 64), torch.bfloat16, seed=9)
    cpu = P.apply_rope(q0, None, pos, inv_freq=f)[:1]
    for v in [None, *VARIANTS]:
        _check(P.apply_rope(q0.cuda(), None, pos.cuda(), inv_freq=f.cuda(), variant=v)[:1], cpu, f"large grid {v}")


@pytest.mark.parametrize("T", [1, 7, 32, 4096])
def test_variants_on_the_bench_shape(T):
    """The bench's call (Llama-3 8B: q and k views of a fused qkv tensor, in place, int64 positions,
    fp32 cache) with the planner's split of every variant, decode to prefill; also on the fly and
    from a cache view 4 bytes off 16-byte alignment (the flat / dec kernels' scalar / shared-row
    paths), the same bits (the cache holds what the kernels compute)."""
    HQ, HK, D = 32, 8, 128
    f = _inv_freq(D, 500000.0)
    pos = torch.randint(0, 131072, (T,), generator=torch.Generator().manual_seed(T))
    qkv0 = randn((T, (HQ + 2 * HK) * D), torch.bfloat16, seed=T + 30)
    cache = P.build_cos_sin_cache(f, 131072, device="cuda")

    def run(qkv, p, c, v, f=None):
        q = qkv[:, : HQ * D].view(T, HQ, D)
        k = qkv[:, HQ * D:(HQ + HK) * D].view(T, HK, D)
        if f is None:
            P.apply_rope(q, k, p, c, inplace=True, variant=v)
        else:
            P.apply_rope(q, k, p, inv_freq=f, inplace=True, variant=v)
        return (qkv,)

    want = run(qkv0.clone(), pos, cache.cpu(), None)
    odd = torch.empty(cache.numel() + 1, device="cuda")[1:].view_as(cache).copy_(cache)  # 4 bytes off
    for v in [None, *VARIANTS]:
        _check(run(qkv0.cuda(), pos.cuda(), cache, v), want, f"bench shape T={T} variant={v}")
        _check(run(qkv0.cuda(), pos.cuda(), None, v, f.cuda()), want, f"bench shape T={T} on the fly variant={v}")
        _check(run(qkv0.cuda(), pos.cuda(), odd, v), want, f"bench shape T={T} misaligned cache variant={v}")


def test_cuda_graph_replay_reads_positions_and_inv_freq_from_device_memory():
    """Captured once; new positions (continuous batching) and a new inv_freq (dynamic NTK's
    in-place update) written into the same buffers are what each replay uses."""
    T, D = 64, 128
    f = _inv_freq(D).cuda()
    cache = P.build_cos_sin_cache(f, 4096)
    q_in = randn((T, 8, D), torch.bfloat16, seed=10, device="cuda")
    k_in = randn((T, 2, D), torch.bfloat16, seed=11, device="cuda")
    pos = torch.zeros(T, dtype=torch.int64, device="cuda")
    q_out, k_out = torch.empty_like(q_in), torch.empty_like(k_in)
    q2, k2 = torch.empty_like(q_in), torch.empty_like(k_in)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            P.apply_rope(q_in, k_in, pos, cache, out_q=q_out, out_k=k_out)
            P.apply_rope(q_in, k_in, pos, inv_freq=f, out_q=q2, out_k=k2)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        P.apply_rope(q_in, k_in, pos, cache, out_q=q_out, out_k=k_out)
        P.apply_rope(q_in, k_in, pos, inv_freq=f, out_q=q2, out_k=k2)
    for step in range(3):
        new_pos = torch.randperm(4096, generator=torch.Generator().manual_seed(step))[:T]
        pos.copy_(new_pos.cuda())
        f.copy_(_inv_freq(D, 10000.0 * (step + 1)).cuda())
        g.replay()
        torch.cuda.synchronize()
        eq, ek = P.apply_rope(q_in.cpu(), k_in.cpu(), new_pos, cache.cpu())
        assert_bits_equal(q_out, eq, f"graph cache q step {step}")
        assert_bits_equal(k_out, ek, f"graph cache k step {step}")
        fq, fk = P.apply_rope(q_in.cpu(), k_in.cpu(), new_pos, inv_freq=f.cpu())
        assert_bits_equal(q2, fq, f"graph on-the-fly q step {step}")
        assert_bits_equal(k2, fk, f"graph on-the-fly k step {step}")


def test_dynamic_module_on_gpu_follows_cpu():
    cfg = dict(head_dim=128, max_position_embeddings=2048,
               rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})
    g, c = P.RotaryEmbedding(cfg, device="cuda"), P.RotaryEmbedding(cfg)
    for length in (100, 3000, 5000, 1000):
        q = randn((length, 4, 128), torch.bfloat16, seed=length)
        pos = torch.arange(length)
        a, _ = g(q.cuda(), None, pos.cuda())
        b, _ = c(q, None, pos)
        assert_bits_equal(a, b, f"dynamic length {length}")


def test_torch_compile_fullgraph():
    T, D = 48, 128
    cache = P.build_cos_sin_cache(_inv_freq(D), 1024, device="cuda")
    q = randn((T, 8, D), torch.bfloat16, seed=12, device="cuda")
    k = randn((T, 2, D), torch.bfloat16, seed=13, device="cuda")
    pos = torch.randint(0, 1024, (T,), device="cuda")

    def f(q, k, pos):
        a, b = P.apply_rope(q, k, pos, cache)
        return a.float() * 2, b  # elementwise and exact: no reduction order to differ

    def g(q, k, pos):
        P.apply_rope(q, k, pos, cache, inplace=True)
        return q * 1

    eager = f(q, k, pos)
    comp = torch.compile(f, fullgraph=True)(q, k, pos)
    assert_bits_equal(comp[0], eager[0], "compile out-of-place")
    assert_bits_equal(comp[1], eager[1], "compile k")
    qc = q.clone()
    out = torch.compile(g, fullgraph=True)(qc, k.clone(), pos)
    ref, _ = P.apply_rope(q, k, pos, cache)
    assert_bits_equal(out, ref, "compile in place")
    assert_bits_equal(qc, ref, "compile in place mutates q")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
def test_nvrtc_kernel_from_rope_cuh_gives_the_same_bits(dtype, interleaved):
    """A kernel built at run time by NVRTC (cupy) from mlops/rope.cuh == the host emulation."""
    cupy = pytest.importorskip("cupy")
    from positional_nvrtc import INCLUDE, KERNEL_SOURCE

    T, H, D, rd = 97, 6, 128, 96
    f = _inv_freq(rd, 500000.0)
    pos = torch.randint(0, 1 << 20, (T,), generator=torch.Generator().manual_seed(14))
    x = randn((T, H, D), dtype, seed=15)
    want, _ = P.apply_rope(x, None, pos, inv_freq=f, attention_scaling=1.1, rotary_dim=rd, interleaved=interleaved)
    mod = cupy.RawModule(code=KERNEL_SOURCE, options=(f"-I{INCLUDE}", "--std=c++17"))
    name = {torch.bfloat16: "rope_bf16", torch.float16: "rope_f16", torch.float32: "rope_f32"}[dtype]
    kern = mod.get_function(name)
    xd = x.cuda()
    yd = torch.empty_like(xd)
    pd, fd = pos.cuda(), f.cuda()
    with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        kern((T,), (64,), (cupy.uint64(xd.data_ptr()), cupy.uint64(yd.data_ptr()), cupy.uint64(pd.data_ptr()),
                           cupy.uint64(fd.data_ptr()), cupy.float32(1.1), cupy.int32(H), cupy.int32(D),
                           cupy.int32(rd), cupy.int32(1 if interleaved else 0)))
    torch.cuda.synchronize()
    assert_bits_equal(yd, want, f"nvrtc {dtype} interleaved={interleaved}")
    # and the mlops kernel agrees with both
    got, _ = P.apply_rope(xd, None, pd, inv_freq=fd, attention_scaling=1.1, rotary_dim=rd, interleaved=interleaved)
    assert_bits_equal(got, want, "mlops kernel")


def test_sanitizer_subset():
    """A small mixed workload, what ci/gpu_tests.py runs under compute-sanitizer memcheck /
    racecheck: out-of-range positions (cache and on the fly: must not read outside the cache),
    the scalar path on a misaligned view, out-of-place partial rotary (the tail copy), GPT-J,
    mrope, split CTAs, and the cache builder; each kernel variant."""
    f = _inv_freq(64)
    cache_cpu = P.build_cos_sin_cache(f, 100)
    T = 37
    pos = torch.randint(-3, 104, (T,), generator=torch.Generator().manual_seed(21))
    pos3 = torch.randint(0, 101, (3, T), generator=torch.Generator().manual_seed(22))
    base = randn((T * 6 * 96 + 1,), torch.bfloat16, seed=23)
    # 6400 tokens of one head: a 400-CTA grid of 16-token blocks (and, with variant None, the eager
    # fast path C.run_fast)
    z0 = randn((6400, 1, 64), torch.bfloat16, seed=24)
    posz = torch.randint(-1, 100, (6400,), generator=torch.Generator().manual_seed(25))

    def run(dev, v=None):
        cache = P.build_cos_sin_cache(f, 100, device=dev)
        flag = torch.zeros(1, dtype=torch.int32, device=dev)
        x = base.to(dev)[1:].view(T, 6, 96)  # misaligned by one element: scalar path
        y = base.to(dev)[:-1].view(T, 6, 96)
        outs = []
        outs += P.apply_rope(x[:, :4], x[:, 4:], pos.to(dev), cache, rotary_dim=64, out_of_range=flag, variant=v)
        outs += P.apply_rope(y[:, :4], y[:, 4:], pos.to(dev), cache, rotary_dim=64, interleaved=True,
                             tokens_per_cta=2, heads_per_cta=3, variant=v)
        outs += P.apply_rope(y[:, :4], None, pos.to(dev), inv_freq=f.to(dev), max_positions=100, rotary_dim=64, variant=v)
        outs += P.apply_rope(y[:, :4], y[:, 4:], pos3.to(dev), cache, rotary_dim=64, mrope_section=[8, 12, 12],
                             variant=v)
        outs += P.apply_rope(z0.to(dev), None, posz.to(dev), cache, variant=v)[:1]
        return (*outs, flag)

    cpu = run("cpu")
    for v in [None, *VARIANTS]:  # racecheck sees every variant's barriers
        gpu = run("cuda", v)
        _check(gpu, cpu, f"sanitizer subset {v}")
        assert int(gpu[-1]) == 1
    assert_bits_equal(P.build_cos_sin_cache(f, 100, device="cuda"), cache_cpu, "sanitizer cache")


@pytest.mark.parametrize("rope_parameters", [
    {"rope_type": "default"},
    {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 512},
    {"rope_type": "longrope", "short_factor": [1.0 + 0.01 * i for i in range(32)],
     "long_factor": [1.5 + 0.05 * i for i in range(32)], "original_max_position_embeddings": 1024},
    {"rope_type": "default", "mrope_section": [8, 12, 12]},
], ids=["default", "yarn", "llama3", "longrope", "mrope"])
def test_rotary_embedding_module_gpu_equals_cpu(rope_parameters):
    cfg = dict(head_dim=128, partial_rotary_factor=0.5, max_position_embeddings=4096,
               rope_parameters={**rope_parameters, "rope_theta": 10000.0})
    g, c = P.RotaryEmbedding(cfg, device="cuda"), P.RotaryEmbedding(cfg)
    mrope = "mrope_section" in rope_parameters
    for length in (17, 2000, 3000):  # 3000: past on_the_fly_from_tokens, cache modes go on the fly
        q = randn((length, 6, 128), torch.bfloat16, seed=length)
        k = randn((length, 2, 128), torch.bfloat16, seed=length + 1)
        pos = torch.arange(length).expand(3, -1).contiguous() if mrope else torch.arange(length)
        a = g(q.cuda(), k.cuda(), pos.cuda())
        b = c(q, k, pos)
        _check(a, b, f"module {rope_parameters['rope_type']} length {length}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_eager_fast_path_equals_general_path_and_host(dtype):
    """apply_rope's eager fast path (_fast -> C.run_fast: CUDA [T, H, D], one position row, no
    split / variant / out_q) against the general path (variant given) and the host emulation: in
    place and out of place, k None, int32 / int64 positions, GPT-J, partial rotary (the tail copy),
    on the fly with max_positions, the out_of_range flag; and the calls it must leave to the general
    path still raise their named errors."""
    from mlops.positional import _ops

    T, hq, hk, D = 45, 6, 2, 128
    f = _inv_freq(64, 500000.0)
    pos = torch.randint(0, 1024, (T,), generator=torch.Generator().manual_seed(44))
    pos[3], pos[17], pos[30] = -2, 1029, 1000  # out of range of the cache (-2, 1029) and of max_positions=1000
    qkv0 = randn((T, (hq + 2 * hk) * D), dtype, seed=45)

    def calls(dev, variant):
        cache = P.build_cos_sin_cache(f, 1024, device=dev)
        qkv = qkv0.to(dev).clone()
        q, k = qkv[:, : hq * D].view(T, hq, D), qkv[:, hq * D:(hq + hk) * D].view(T, hk, D)
        p64, p32 = pos.to(dev), pos.int().to(dev)
        fl1, fl2 = (torch.zeros(1, dtype=torch.int32, device=dev) for _ in range(2))
        out = [*P.apply_rope(q, k, p64, cache, variant=variant, out_of_range=fl1)]  # partial rotary, out of place
        out += [P.apply_rope(q, None, p32, cache, interleaved=True, variant=variant)[0]]
        out += [*P.apply_rope(q, k, p32, inv_freq=f.to(dev), attention_scaling=1.5, max_positions=1000,
                              variant=variant, out_of_range=fl2)]
        P.apply_rope(q, k, p64, cache, inplace=True, variant=variant)
        return (*out, qkv, fl1, fl2)

    seen = []
    real = _ops.C.run_fast
    _ops.C.run_fast = lambda *a: seen.append(1) or real(*a)  # the fast path must be the one taken
    try:
        fast = calls("cuda", None)
    finally:
        _ops.C.run_fast = real
    assert len(seen) == 4
    _check(fast, calls("cpu", None), f"fast path vs host {dtype}")
    _check(fast, calls("cuda", "early2"), f"fast path vs general path {dtype}")
    assert int(fast[-2]) == 1 and int(fast[-1]) == 1
    q = torch.zeros(4, 2, 128, device="cuda", dtype=dtype)
    with pytest.raises(ValueError, match="^rotary_dim:"):
        P.apply_rope(q, None, torch.arange(4, device="cuda"), P.build_cos_sin_cache(_inv_freq(200), 8, device="cuda"))
    with pytest.raises(ValueError, match="^max_positions:"):
        P.apply_rope(q, None, torch.arange(4, device="cuda"), P.build_cos_sin_cache(f, 8, device="cuda"),
                     max_positions=9)


def test_device_mismatch_is_a_named_error():
    cache = P.build_cos_sin_cache(_inv_freq(128), 64, device="cuda")
    q = torch.zeros(4, 2, 128, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="^positions:"):
        P.apply_rope(q, None, torch.arange(4), cache)
    with pytest.raises(ValueError, match="^k:"):
        P.apply_rope(q, q.cpu(), torch.arange(4, device="cuda"), cache)
    with pytest.raises(ValueError, match="^cos_sin_cache:"):
        P.apply_rope(q, None, torch.arange(4, device="cuda"), cache.cpu())
