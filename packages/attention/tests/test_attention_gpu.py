"""GPU: the kernels against the host emulation bit for bit (encoder records, append, decode in both
modes and both output dtypes), GQA 1/2/4/5/8, head dims 64/128, lengths across group boundaries,
mixed-length batches, every decode variant (decode_variants()) against the host emulation of its P V form
(digits / chains); results independent of the CTA count;
exact == skip with every block
refined; a full cache flagged on the device with nothing written; CUDA-graph replay of append +
decode_at as the cache grows; a sanitizer subset. Run under each build of nox -s gpu_build (sm_90
and the compute_61 / 70 / 75 / 80 PTX builds: compute_61 is the DP4A + integer-rounding path, from
sm_80 the bf16 output takes cvt.rn)."""

import pytest
import torch
from mlops_testing import assert_bits_equal, gpu_arch_tag, requires_cuda

import mlops.attention as A

pytestmark = requires_cuda
GROUP = 128
VARIANTS = [v["name"] for v in A.decode_variants()]  # every variant == the host emulation of its form, bit for bit
PV = {v["name"]: v["pv"] for v in A.decode_variants()}  # the P V form a variant computes

def make(B, H, T, D, seed, Hq, peaked=0.0):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(B, H, T, D, generator=g)
    k[..., 7] = k[..., 7] * 8 + 3  # an outlier channel
    v = torch.randn(B, H, T, D, generator=g)
    q = torch.randn(B, Hq, D, generator=g)
    if peaked:
        G = Hq // H
        for b in range(B):
            for h in range(Hq):
                q[b, h] = k[b, h // G, int(torch.randint(0, T, (1,), generator=g))] * peaked
    return k.bfloat16(), v.bfloat16(), q.bfloat16()

def check_cache(gc, cc, what):
    tag = f"{what} ({gpu_arch_tag()})"
    assert gc.lengths.cpu().tolist() == cc.lengths.tolist(), tag
    assert_bits_equal(gc.records, cc.records, f"{tag}: records")
    assert_bits_equal(gc.sink_k, cc.sink_k, f"{tag}: sink_k")
    assert_bits_equal(gc.sink_v, cc.sink_v, f"{tag}: sink_v")
    for b, L in enumerate(cc.lengths.tolist()):
        filled = L % GROUP if L >= GROUP else 0  # rows past it are unspecified
        assert_bits_equal(gc.tail_k[b, :, :filled], cc.tail_k[b, :, :filled], f"{tag}: tail_k[{b}]")
        assert_bits_equal(gc.tail_v[b, :, :filled], cc.tail_v[b, :, :filled], f"{tag}: tail_v[{b}]")

@pytest.mark.parametrize("mode", ["3+3", "4+2"])
@pytest.mark.parametrize("D", [64, 128])
def test_encode_gpu_equals_host(mode, D):
    B, H, T = 3, 2, 9 * GROUP + 77
    k, v, _ = make(B, H, T, D, seed=D, Hq=H)
    lens = [T, 255, 2 * GROUP]
    gc = A.encode(k.cuda(), v.cuda(), lens, capacity=T + 100, mode=mode)
    cc = A.encode(k, v, lens, capacity=T + 100, mode=mode)
    check_cache(gc, cc, f"encode {mode} D={D}")

@pytest.mark.parametrize("mode", ["3+3", "4+2"])
@pytest.mark.parametrize("steps", [[1] * 140 + [120, 1, 1, 300, 7], [128, 128, 256, 1, 127, 129]])
def test_append_gpu_equals_host(mode, steps):
    B, H, D = 2, 2, 128
    T = sum(steps)
    k, v, _ = make(B, H, T, D, seed=len(steps), Hq=H)
    gc = A.empty(B, H, T, D, mode, device="cuda")
    cc = A.empty(B, H, T, D, mode, device="cpu")
    t = 0
    for n in steps:
        A.append(gc, k[:, :, t:t + n].cuda(), v[:, :, t:t + n].cuda())
        A.append(cc, k[:, :, t:t + n], v[:, :, t:t + n])
        t += n
    check_cache(gc, cc, f"append {mode} {steps[:3]}")

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", ["3+3", "4+2"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("G", [1, 2, 4, 5, 8])
def test_decode_gpu_equals_host(mode, D, G, variant):
    B, H = 4, 2
    lens = [1, 129, 5 * GROUP + 3, 8 * GROUP]  # sink only, across boundaries, group-aligned
    T = max(lens)
    k, v, q = make(B, H, T, D, seed=G * 100 + D, Hq=H * G, peaked=1.5)
    gc = A.encode(k.cuda(), v.cuda(), lens, capacity=T, mode=mode)
    cc = A.encode(k, v, lens, capacity=T, mode=mode)
    for exact in (True, False):
        for gap in (A.DEFAULT_GAP, 3.0):
            for od in (torch.float32, torch.bfloat16):
                g = A.decode(q.cuda(), gc, exact=exact, gap=gap, out_dtype=od, variant=variant)
                c = A.decode(q, cc, exact=exact, gap=gap, out_dtype=od, pv=PV[variant])
                assert_bits_equal(g, c, f"decode [{variant}] {mode} D={D} G={G} exact={exact} gap={gap} {od} "
                                        f"({gpu_arch_tag()})")

@pytest.mark.parametrize("variant", VARIANTS)
def test_tiny_q_gpu_equals_host(variant):
    """q ~ 1e-38 (zeros among it): every group's q digits 0 by digit_scale's 2^-96 guard (before it, inf * 0 gave
    NaN digits, converted to int by undefined behaviour on the host), kernels == host bit for bit."""
    k, v, q = make(2, 2, 3 * GROUP + 5, 128, seed=21, Hq=8)
    q = (q.float() * 1e-38).bfloat16()
    q[..., ::9] = 0.0  # zero q_d: 0 * inf was the NaN
    gc = A.encode(k.cuda(), v.cuda(), [3 * GROUP + 5, GROUP + 3])
    cc = A.encode(k, v, [3 * GROUP + 5, GROUP + 3])
    for exact in (True, False):
        g = A.decode(q.cuda(), gc, exact=exact, out_dtype=torch.float32, variant=variant)
        c = A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv=PV[variant])
        assert_bits_equal(g, c, f"tiny q [{variant}] exact={exact} ({gpu_arch_tag()})")


@pytest.mark.parametrize("variant", VARIANTS)
def test_decode_independent_of_ctas(variant):
    B, H, D, G = 2, 8, 128, 4
    k, v, q = make(B, H, 20 * GROUP + 5, D, seed=3, Hq=H * G, peaked=1.0)
    gc = A.encode(k.cuda(), v.cuda(), [20 * GROUP + 5, 700])
    qc = q.cuda()
    ref = A.decode(qc, gc, out_dtype=torch.float32, pv=PV[variant])  # the planner's pick of the variant's form
    ref_e = A.decode(qc, gc, exact=True, out_dtype=torch.float32, pv=PV[variant])
    for ctas in (0, 1, 3, 17, 1000):
        assert_bits_equal(A.decode(qc, gc, out_dtype=torch.float32, ctas=ctas, variant=variant), ref,
                          f"[{variant}] ctas={ctas}")
        assert_bits_equal(A.decode(qc, gc, exact=True, out_dtype=torch.float32, ctas=ctas, variant=variant), ref_e,
                          f"[{variant}] exact ctas={ctas}")

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", ["3+3", "4+2"])
def test_exact_equals_skip_all_refined_gpu(mode, variant):
    k, v, q = make(2, 2, 3000, 128, seed=4, Hq=8, peaked=2.0)
    gc = A.encode(k.cuda(), v.cuda(), [3000, 1000], mode=mode)
    e = A.decode(q.cuda(), gc, exact=True, out_dtype=torch.float32, variant=variant)
    s = A.decode(q.cuda(), gc, exact=False, gap=float("inf"), out_dtype=torch.float32, variant=variant)
    assert_bits_equal(e, s, f"[{variant}] exact == skip(gap=inf)")

def test_full_cache_flag_gpu():
    k, v, _ = make(2, 2, 400, 64, seed=5, Hq=2)
    gc = A.encode(k[:, :, :390].cuda(), v[:, :, :390].cuda(), [390, 100], capacity=400)
    before = [t.clone() for t in (gc.records, gc.sink_k, gc.sink_v, gc.tail_k, gc.tail_v, gc.lengths)]
    with pytest.raises(A.CacheFullError):  # Python's pre-check
        A.append(gc, k[:, :, :11].cuda(), v[:, :, :11].cuda())
    gc.host_lengths = None  # as after CUDA-graph replays: only the device knows
    A.append(gc, k[:, :, :11].cuda(), v[:, :, :11].cuda())
    torch.cuda.synchronize()
    assert gc.flags.item() == 1
    for a, b in zip(before, (gc.records, gc.sink_k, gc.sink_v, gc.tail_k, gc.tail_v, gc.lengths)):
        assert_bits_equal(a, b, "full cache: nothing written")

@pytest.mark.parametrize("variant", VARIANTS)
def test_cuda_graph_append_and_decode_at(variant):
    """One graph of (append one token, decode_at) replayed step after step: the lengths live on the
    device, so each replay attends to one more token; each step == the host emulation's."""
    B, H, D, G = 2, 2, 128, 4
    T0, steps = 250, 12  # crosses the 256 boundary (a group closes inside the graph)
    k, v, q = make(B, H, T0 + steps, D, seed=6, Hq=H * G)
    gc = A.encode(k[:, :, :T0].cuda(), v[:, :, :T0].cuda(), capacity=T0 + steps)
    cc = A.encode(k[:, :, :T0], v[:, :, :T0], capacity=T0 + steps)
    sk, sv, sq = torch.empty_like(k[:, :, :1]).cuda(), torch.empty_like(v[:, :, :1]).cuda(), q.cuda()
    gc.scratch(H * G)  # allocated before capture
    gc.host_lengths = None  # replays advance the device lengths only
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up on the capture stream (a step of its own)
        sk.copy_(k[:, :, T0:T0 + 1])
        sv.copy_(v[:, :, T0:T0 + 1])
        A.append(gc, sk, sv)
        A.decode_at(sq, gc, out_dtype=torch.float32, variant=variant)
    torch.cuda.current_stream().wait_stream(stream)
    A.append(cc, k[:, :, T0:T0 + 1], v[:, :, T0:T0 + 1])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        A.append(gc, sk, sv)
        out = A.decode_at(sq, gc, out_dtype=torch.float32, variant=variant)
    for t in range(T0 + 1, T0 + steps):
        sk.copy_(k[:, :, t:t + 1])
        sv.copy_(v[:, :, t:t + 1])
        graph.replay()
        torch.cuda.synchronize()
        A.append(cc, k[:, :, t:t + 1], v[:, :, t:t + 1])
        assert gc.lengths.cpu().tolist() == [t + 1] * B
        assert_bits_equal(out, A.decode(q, cc, out_dtype=torch.float32, pv=PV[variant]), f"graph step {t}")
    check_cache(gc, cc, "after graph replays")

@pytest.mark.parametrize("variant", ["mma_pv+coarse_imma", "imma_occ+coarse_imma", "warps+coarse_warps"])
def test_decode_long_gpu_equals_host(variant):
    """A row of more than 128 partials (L = 40,000: 157 slots): combine_warps_kernel's slots past the 4 tiles whose
    m / l it loads at once (the other tests stay under 8 slots)."""
    k, v, q = make(1, 1, 40000, 64, seed=9, Hq=2, peaked=1.0)
    gc = A.encode(k.cuda(), v.cuda())
    cc = A.encode(k, v)
    for exact in (True, False):
        g = A.decode(q.cuda(), gc, exact=exact, gap=3.0, out_dtype=torch.float32, variant=variant)
        c = A.decode(q, cc, exact=exact, gap=3.0, out_dtype=torch.float32, pv=PV[variant])
        assert_bits_equal(g, c, f"[{variant}] L=40000 exact={exact} ({gpu_arch_tag()})")

# The planner's pick for pv digits at three amounts of refine work (32 q / 8 kv heads unless said), each against the
# host emulation's digits bits, as the named variants beside it:
# - "one_round", B1 L16K (D 128): mma_pv's resident CTAs take the items in more rounds than mma_pv4r's (H200: 520
#   items, 396 against 528 CTAs): the planner runs mma_pv4r's kernel (fbla_launch.cu, session 14; mma_pv4's before);
# - "within_one_round", B1 L4K (D 128; H200 ~130 items against 396): on sm_90 mma_pv4r's kernel (GPU run 80: 23.97 us
#   3+3 exact against mma_pv's 25.79), below sm_90 mma_pv's;
# - "many_rounds", 8 q / 8 kv heads, 64 K tokens, D 64 (2056 items, H200 ~4 rounds of either): on sm_90 mma_pv4r's
#   kernel (run 79: B8 L128K 1050 us against mma_pv's 1140), below sm_90 mma_pv's;
# - "many_rounds_d128", 32 q / 8 kv heads, 32 K tokens, D 128 (1032 items against 528 CTAs): on sm_90 mma_pv4r's
#   kernel's kEarly instance (session 17: session 16 a2's front where more than one round runs), below sm_90 mma_pv's.
PLANNER_CASES = {
    "one_round": (dict(T=16 * 1024, D=128, seed=12, Hq=32), ("mma_pv", "mma_pv4", "mma_pv4r"), "B1 L16K"),
    "within_one_round": (dict(T=4 * 1024, D=128, seed=15, Hq=32), ("mma_pv", "mma_pv4r"), "B1 L4K"),
    "many_rounds": (dict(T=64 * 1024, D=64, seed=14, Hq=8), ("mma_pv", "mma_pv4r"), "B1 H8 L64K D64"),
    "many_rounds_d128": (dict(T=32 * 1024, D=128, seed=16, Hq=32), ("mma_pv4r",), "B1 L32K D128"),
}


@pytest.mark.parametrize("work", sorted(PLANNER_CASES))
def test_planner_digits_gpu(work):
    shape, named, label = PLANNER_CASES[work]
    k, v, q = make(1, 8, shape["T"], shape["D"], seed=shape["seed"], Hq=shape["Hq"])
    gc = A.encode(k.cuda(), v.cuda())
    cc = A.encode(k, v)
    for exact in (True, False):
        c = A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv="digits")
        for variant in (None,) + tuple(f"{n}+coarse_imma" for n in named):
            g = A.decode(q.cuda(), gc, exact=exact, out_dtype=torch.float32, variant=variant)
            assert_bits_equal(g, c, f"[{variant or 'planner'}] {label} exact={exact} ({gpu_arch_tag()})")


def test_planner_long_rows_d128_gpu():
    """Rows of 256 slots or more (~64 K tokens) on the planner's kEarly refine (sm_90, D 128, more than one round of
    items): the combine that fbla_launch.cu's mma4_launch picks for them (an ordinary launch; since session 29
    combine_staged_kernel, its partials staged by bulk copies) against the host emulation, in a batch of two lengths
    (289 and 259 slots: neither a whole number of the staged combine's tiles of 32)."""
    lengths = [73800, 66100]
    k, v, q = make(2, 2, lengths[0], 128, seed=17, Hq=8)
    gc = A.encode(k.cuda(), v.cuda(), lengths=lengths)
    cc = A.encode(k, v, lengths=lengths)
    for exact in (True, False):
        c = A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv="digits")
        g = A.decode(q.cuda(), gc, exact=exact, out_dtype=torch.float32)
        assert_bits_equal(g, c, f"[planner] B2 L72K/65K D128 exact={exact} ({gpu_arch_tag()})")


def test_fold_graph_gpu():
    """mma_pv4f (session 13: the combine folded into the refine; fold_zero_kernel or the coarse pass zeroes the
    counters, the CTA counting a (b, kv head)'s last item combines) under CUDA-graph replay at B1 L16K-like work: one
    graph of (append one token, decode_at) (32 q / 8 kv heads, D 128, capacity 16512: 65 slots a row, 520 refine items,
    one round on an H200), exact and skip, replayed across a group's close; each step == the host's digits bits (the
    counters start from whatever the scratch holds and the previous replay left)."""
    V = "mma_pv4f+coarse_imma"
    B, H, D, Hq = 1, 8, 128, 32
    T0, steps = 16253, 5  # 127 * 128 = 16256: a group closes inside the graph
    k, v, q = make(B, H, T0 + steps, D, seed=13, Hq=Hq)
    for exact in (True, False):
        gc = A.encode(k[:, :, :T0].cuda(), v[:, :, :T0].cuda(), capacity=16512)
        cc = A.encode(k[:, :, :T0], v[:, :, :T0], capacity=16512)
        sk, sv, sq = torch.empty_like(k[:, :, :1]).cuda(), torch.empty_like(v[:, :, :1]).cuda(), q.cuda()
        gc.scratch(Hq).fill_(0xa5)  # garbage counters before the first decode
        gc.host_lengths = None
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            sk.copy_(k[:, :, T0:T0 + 1])
            sv.copy_(v[:, :, T0:T0 + 1])
            A.append(gc, sk, sv)
            A.decode_at(sq, gc, exact=exact, out_dtype=torch.float32, variant=V)
        torch.cuda.current_stream().wait_stream(stream)
        A.append(cc, k[:, :, T0:T0 + 1], v[:, :, T0:T0 + 1])
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            A.append(gc, sk, sv)
            out = A.decode_at(sq, gc, exact=exact, out_dtype=torch.float32, variant=V)
        for t in range(T0 + 1, T0 + steps):
            sk.copy_(k[:, :, t:t + 1])
            sv.copy_(v[:, :, t:t + 1])
            graph.replay()
            torch.cuda.synchronize()
            A.append(cc, k[:, :, t:t + 1], v[:, :, t:t + 1])
            assert gc.lengths.cpu().tolist() == [t + 1]
            c = A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv="digits")
            assert_bits_equal(out, c, f"[{V}] graph step {t} exact={exact} ({gpu_arch_tag()})")


def test_decode_matches_float64_gpu():
    k, v, q = make(2, 8, 4 * 1024, 128, seed=8, Hq=32)
    gc = A.encode(k.cuda(), v.cuda())
    cc = A.encode(k, v)
    ref = A.reference_decode(q, cc)
    host = {pv: A.decode(q, cc, out_dtype=torch.float32, pv=pv) for pv in A.PV_FORMS}
    for variant in VARIANTS:
        out = A.decode(q.cuda(), gc, out_dtype=torch.float32, variant=variant)
        assert (out.cpu().double() - ref).abs().max().item() <= 2e-4 * v.float().abs().max().item(), variant
        assert_bits_equal(out, host[PV[variant]], f"[{variant}] 32/8 heads x 4K == host")

def test_sanitizer_subset():
    """A small mixed workload, what ci/gpu_tests.py runs under compute-sanitizer memcheck/racecheck."""
    for mode in ("3+3", "4+2"):
        for D, G in ((64, 5), (128, 2)):
            k, v, q = make(2, 2, 700, D, seed=D + G, Hq=2 * G, peaked=1.0)
            gc = A.encode(k[:, :, :600].cuda(), v[:, :, :600].cuda(), [600, 130], capacity=700, mode=mode)
            cc = A.encode(k[:, :, :600], v[:, :, :600], [600, 130], capacity=700, mode=mode)
            A.append(gc, k[:, :, 600:640].cuda(), v[:, :, 600:640].cuda())
            A.append(cc, k[:, :, 600:640], v[:, :, 600:640])
            check_cache(gc, cc, f"sanitizer subset {mode} D={D}")
            for exact in (True, False):
                c = {pv: A.decode(q, cc, exact=exact, gap=4.0, pv=pv) for pv in A.PV_FORMS}
                for variant in VARIANTS:
                    g = A.decode(q.cuda(), gc, exact=exact, gap=4.0, variant=variant)
                    c_ = c[PV[variant]]
                    assert_bits_equal(g, c_, f"sanitizer subset decode [{variant}] {mode} D={D} exact={exact}")
