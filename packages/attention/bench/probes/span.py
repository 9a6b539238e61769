"""Session 23 span probe (a wheel built with span.patch): where a planned decode's GPU time goes, kernel by kernel.
%globaltimer (ns) at: a one-thread mark kernel before the call (m0), the refine's CTA entries / items done / exits, the
combine's CTA entries / after its griddepcontrol.wait / exits, a mark kernel after the call (m1); CUDA events around the
same four launches. After an L2 flush and a 50 us spin, as the bench harness times a call. Prints the medians over the
repetitions, us relative to m0. argv[1]: the output folder (raw tables, .npy)."""
import os
import statistics
import sys

import numpy as np
import torch

import mlops.attention as A
from mlops.attention._native import C

HQ, HK, D = 32, 8, 128
NCTA = 2048
out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
props = torch.cuda.get_device_properties(0)
flush = torch.ones(2 * props.L2_cache_size // 4 + 1, device="cuda")
sink = torch.empty((), device="cuda")


def tables():
    t = np.zeros(6 * NCTA + 8, dtype=np.uint64)
    assert C.probe_span(t.ctypes.data, t.nbytes, 0) == 0
    return t[: 6 * NCTA].reshape(6, NCTA), t[6 * NCTA:]


def one(fn):
    s = torch.cuda.current_stream().cuda_stream
    torch.cuda.synchronize()
    assert C.probe_span(0, 0, 1) == 0
    torch.sum(flush, dim=0, out=sink)
    torch.cuda._sleep(100000)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    C.probe_mark(0, s)
    fn()
    C.probe_mark(1, s)
    e1.record()
    torch.cuda.synchronize()
    span, mark = tables()
    ev = e0.elapsed_time(e1) * 1e3
    m0 = int(mark[0])
    r = {"events": ev, "m1": (int(mark[1]) - m0) / 1e3}

    def col(k):
        x = span[k][span[k] != 0].astype(np.int64)
        return (x - m0) / 1e3 if x.size else None

    names = ["refine entry", "refine items done", "refine exit", "combine entry", "combine waited", "combine exit"]
    for k, n in enumerate(names):
        x = col(k)
        if x is not None:
            r[n + " first"] = float(x.min())
            r[n + " p50"] = float(np.median(x))
            r[n + " last"] = float(x.max())
            r[n + " n"] = int(x.size)
    return r, span, mark


def case(label, fn):
    for _ in range(5):
        fn()
    rows, raw = [], []
    for _ in range(reps):
        r, span, mark = one(fn)
        rows.append(r)
        raw.append(np.concatenate([span.reshape(-1), mark]))
    np.save(os.path.join(out_dir, f"span-{label.replace(' ', '_')}.npy"), np.stack(raw))
    keys = [k for k in rows[0] if all(k in r for r in rows) and not k.endswith(" n")]
    print(f"== {label}: {reps} calls, medians (us from the mark kernel before the call)")
    for k in keys:
        xs = [r[k] for r in rows]
        print(f"   {k:28s} {statistics.median(xs):8.2f}   (p10 {np.percentile(xs, 10):7.2f}, p90 {np.percentile(xs, 90):7.2f})")
    ns = {k: rows[0][k] for k in rows[0] if k.endswith(" n")}
    print("   CTAs:", ns)


def run(B, L, modes=("3+3",)):
    g = torch.Generator(device="cuda").manual_seed(B * 7 + L)
    k = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    v = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    q = torch.randn(B, HQ, D, device="cuda", generator=g).bfloat16()
    out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device="cuda")
    for mode in modes:
        c = A.encode(k, v, mode=mode)
        case(f"B{B} L{L} {mode} exact", lambda: A.decode(q, c, exact=True, out=out))
    kk, vv = k, v
    qq = q[:, :, None]

    def sdpa():
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, enable_gqa=True)

    case(f"B{B} L{L} sdpa", sdpa)


case("empty (marks only)", lambda: None)
for B, L in ((1, 16384), (1, 4096), (8, 16384), (1, 16384 + 30), (1, 16384 + 100)):
    # L 16414 / 16484: a filling group of 30 / 100 tokens (the BF16 item's K rows staged / not: they fit up to 60 at D 128)
    run(B, L, ("3+3", "4+2") if L == 16384 and B == 1 else ("3+3",))
