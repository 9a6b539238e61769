"""Session 22 timeline probe (a wheel built with timeline.patch, or timeline_dyn.patch on the kDyn refine): clock64 at
refine_mma4_kernel's phase boundaries, thread 0 of each CTA, for the planned exact decode at B1 L16K, B8 L128K and B1 L4K
(3+3), one call after an L2 flush (three such calls; the last is summarised). Prints the medians of each phase (us at
the SM clock) and writes the raw tables (.npy) to argv[1].

Points: 0 item top (after the item's barrier), 1 front done (q digits / flags, barrier), 2 the copy (kSplitV: its K
part) waited for, 3 scores done (chunk-max barrier), 4 P V done (barrier), 5 partial stored; 6 %smid (timeline_dyn:
| the CTA's item count << 16), 7 %globaltimer at the top. Slots: the CTA's items 0..3 and 30..33 (timeline.patch), or
0..3, 30..32 and its latest (timeline_dyn.patch)."""
import collections
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
props = torch.cuda.get_device_properties(0)
clk_ghz = getattr(props, "clock_rate", 1_980_000) / 1e6
flush = torch.ones(2 * props.L2_cache_size // 4 + 1, device="cuda")


def table():
    t = np.zeros((CTAS, SLOTS, PTS), dtype=np.uint64)
    rc = C.probe_timeline(t.ctypes.data, t.nbytes, 0)
    assert rc == 0, rc
    return t


def us(cycles):
    return cycles / clk_ghz / 1e3


def summarise(t):
    used = t[:, :, 0] != 0
    names = ["front 0-1", "wait 1-2", "scores 2-3", "pv 3-4", "partial 4-5", "item 0-5"]
    for group, slots in (("first items (0..3)", range(4)), ("later (slots 4..7)", range(4, 8))):
        rows = {n: [] for n in names + ["top-to-top"]}
        for s in slots:
            for cta in np.nonzero(used[:, s])[0]:
                r = t[cta, s]
                if r[2] == 0:
                    continue  # the BF16 item (no copy)
                d = [r[1] - r[0], r[2] - r[1], r[3] - r[2], r[4] - r[3], r[5] - r[4], r[5] - r[0]]
                for n, x in zip(names, d):
                    rows[n].append(us(x))
                if s + 1 in slots and used[cta, s + 1] and (t[cta, s + 1, 6] >> 16) == (r[6] >> 16) + 1:
                    rows["top-to-top"].append(us(t[cta, s + 1, 0] - r[0]))
        if not rows[names[0]]:
            continue
        print(f"  {group}: n={len(rows[names[0]])}")
        for n, xs in rows.items():
            if xs:
                q = np.percentile(xs, [10, 50, 90])
                print(f"    {n:12s} p10 {q[0]:7.3f}  p50 {q[1]:7.3f}  p90 {q[2]:7.3f} us  mean {statistics.mean(xs):7.3f}")
    gt = t[:, 0, 7]
    ok = gt != 0
    if not ok.any():
        return
    g0 = gt[ok].min()
    starts = (gt[ok] - g0) / 1e3
    print(f"  CTA first-item starts (globaltimer): p10 {np.percentile(starts, 10):.3f} p50 {np.percentile(starts, 50):.3f} "
          f"p90 {np.percentile(starts, 90):.3f} max {starts.max():.3f} us")
    # each CTA's end: its last recorded slot's top (globaltimer) + its span (clock64); items per CTA where recorded
    ends, counts = [], []
    for c in np.nonzero(ok)[0]:
        s = max(k for k in range(SLOTS) if t[c, k, 0] != 0)
        if t[c, s, 5]:
            ends.append((t[c, s, 7] - g0) / 1e3 + us(t[c, s, 5] - t[c, s, 0]))
            counts.append(int(t[c, s, 6] >> 16) + 1)
    ends = np.array(ends)
    print(f"  CTA ends (last recorded item): p10 {np.percentile(ends, 10):.2f} p50 {np.percentile(ends, 50):.2f} "
          f"p90 {np.percentile(ends, 90):.2f} max {ends.max():.2f} us; items a CTA (timeline_dyn) "
          f"min {min(counts)} max {max(counts)}")
    # us an item by the CTA's rank of blockIdx on its SM (the first 30 items, timeline.patch's slot 4 = item 30)
    if used[:, 4].sum() > 0:
        sm = (t[:, 0, 6] & 0xffff).astype(int)
        by = collections.defaultdict(list)
        for c in np.nonzero(used[:, 4])[0]:
            by[sm[c]].append(c)
        ranks = collections.defaultdict(list)
        for cs in by.values():
            for k, c in enumerate(sorted(cs)):
                n = int(t[c, 4, 6] >> 16) or 30
                ranks[k].append(us(t[c, 4, 0] - t[c, 0, 0]) / n)
        print("  us an item over the first 30, by the CTA's rank on its SM:",
              [round(float(np.mean(v)), 2) for k, v in sorted(ranks.items())])


def run(B, L):
    g = torch.Generator(device="cuda").manual_seed(B * 7 + L)
    k = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    v = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    q = torch.randn(B, HQ, D, device="cuda", generator=g).bfloat16()
    c = A.encode(k, v, mode="3+3")
    out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device="cuda")
    tabs = []
    for _ in range(3):
        for _ in range(3):
            A.decode(q, c, exact=True, out=out)
        torch.cuda.synchronize()
        assert C.probe_timeline(0, 0, 1) == 0
        flush.sum()
        torch.cuda._sleep(100000)
        A.decode(q, c, exact=True, out=out)
        torch.cuda.synchronize()
        tabs.append(table())
    np.save(os.path.join(out_dir, f"timeline-B{B}-L{L}.npy"), np.stack(tabs))
    t = tabs[-1].astype(np.int64)
    print(f"== B{B} L{L}: CTAs recorded {int((t[:, 0, 0] != 0).sum())}, clock {clk_ghz:.2f} GHz")
    summarise(t)


for B, L in ((1, 16384), (8, 131072), (1, 4096)):
    run(B, L)
