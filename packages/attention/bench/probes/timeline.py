"""Session 22 timeline probe (timeline.patch's wheel): clock64 at refine_mma4_kernel's phase boundaries, thread 0 of
each CTA, the CTA's items 0..3 and 30..33, for the planned exact decode at B1 L16K and B8 L128K (3+3), one call after
an L2 flush. Prints the medians of each phase (us at the SM clock) and writes the raw table (.npy) to argv[1].

Points: 0 item top (after the item's barrier), 1 front done (q digits / flags, barrier), 2 the copy waited for,
3 scores done (chunk-max barrier), 4 P V done (barrier), 5 partial stored; 6 %smid, 7 %globaltimer at the top."""
import os
import statistics
import sys

import numpy as np
import torch

import mlops.attention as A
from mlops.attention._native import C

HQ, HK, D = 32, 8, 128
CTAS, SLOTS, PTS = 1056, 8, 8
out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
clk_ghz = torch.cuda.get_device_properties(0).clock_rate / 1e6 if hasattr(torch.cuda.get_device_properties(0), "clock_rate") else 1.98
flush = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1, device="cuda")


def table():
    t = np.zeros((CTAS, SLOTS, PTS), dtype=np.uint64)
    rc = C.probe_timeline(t.ctypes.data, t.nbytes, 0)
    assert rc == 0, rc
    return t


def run(B, L):
    g = torch.Generator(device="cuda").manual_seed(B * 7 + L)
    k = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    v = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    q = torch.randn(B, HQ, D, device="cuda", generator=g).bfloat16()
    c = A.encode(k, v, mode="3+3")
    out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device="cuda")
    res = {}
    for rep in range(3):
        for _ in range(3):
            A.decode(q, c, exact=True, out=out)
        torch.cuda.synchronize()
        assert C.probe_timeline(0, 0, 1) == 0
        flush.sum()
        torch.cuda._sleep(100000)
        A.decode(q, c, exact=True, out=out)
        torch.cuda.synchronize()
        res[rep] = table()
    np.save(os.path.join(out_dir, f"timeline-B{B}-L{L}.npy"), np.stack([res[r] for r in res]))
    t = res[2].astype(np.int64)
    used = t[:, :, 0] != 0
    print(f"== B{B} L{L}: CTAs recorded {int(used[:, 0].sum())}, clock {clk_ghz:.2f} GHz")
    names = ["front 0-1", "wait 1-2", "scores 2-3", "pv 3-4", "partial 4-5", "item 0-5"]
    for group, slots in (("first items (0..3)", range(4)), ("steady (30..33)", range(4, 8))):
        rows = {n: [] for n in names + ["top-to-top"]}
        for s in slots:
            for cta in np.nonzero(used[:, s])[0]:
                r = t[cta, s]
                if r[2] == 0:
                    continue  # the BF16 item (no copy)
                d = [r[1] - r[0], r[2] - r[1], r[3] - r[2], r[4] - r[3], r[5] - r[4], r[5] - r[0]]
                for n, x in zip(names, d):
                    rows[n].append(x / clk_ghz / 1e3)
                if s + 1 in slots and used[cta, s + 1]:
                    rows["top-to-top"].append((t[cta, s + 1, 0] - r[0]) / clk_ghz / 1e3)
        if not rows[names[0]]:
            continue
        print(f"  {group}: n={len(rows[names[0]])}")
        for n, xs in rows.items():
            if xs:
                q = np.percentile(xs, [10, 50, 90])
                print(f"    {n:12s} p10 {q[0]:7.3f}  p50 {q[1]:7.3f}  p90 {q[2]:7.3f} us  mean {statistics.mean(xs):7.3f}")
    # one round at B1: when the CTAs start and end against the earliest start (globaltimer, ns)
    gt = t[:, 0, 7]
    ok = gt != 0
    if ok.any():
        g0 = gt[ok].min()
        starts = (gt[ok] - g0) / 1e3
        print(f"  CTA first-item starts (globaltimer): p10 {np.percentile(starts, 10):.3f} p50 {np.percentile(starts, 50):.3f} "
              f"p90 {np.percentile(starts, 90):.3f} max {starts.max():.3f} us")
        ends = [(gt[c] - g0) / 1e3 + (t[c, 0, 5] - t[c, 0, 0]) / clk_ghz / 1e3 for c in np.nonzero(ok)[0] if t[c, 0, 5]]
        print(f"  first item's end (start + clock64 span): p50 {np.percentile(ends, 50):.3f} p90 {np.percentile(ends, 90):.3f} "
              f"max {max(ends):.3f} us")


for B, L in ((1, 16384), (8, 131072), (1, 4096)):
    run(B, L)
