"""Session 18 (l): what the LM head's statistics cost, one wheel a process (before / new alternate in ci/device/s18l.sh).

For 32000 x 4096 and 151936 x 4096, M = 1, 2, 4, 8: the planned mlops.vocab.lm_head without and with stats=True and
cuBLAS (F.linear) beside them, each captured in CUDA graphs over two weight copies replayed in rotation, L2 flushed
by a read, interleaved, events (tools/testing/mlops_bench.py, as bench_vocab.py --only lm_head). One JSON line a
(shape, impl) in $MLOPS_BENCH_OUT, and a line a shape as it is timed: plain, stats, their difference, cuBLAS (us).
--timeline (M = 1): CUPTI's records (torch.profiler) of 10 graph replays each of the plain and the stats call: a
line per kernel of the call (name, start after the call's first kernel, duration), so the run shows where the
statistics' microseconds sit (the clear in front, the head, the decode behind it).
Usage (GPU machine): PYTHONPATH=<vocab wheel dir>:tools/testing python3 ci/device/s18l_bench.py LABEL [--timeline]
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch
import torch.nn.functional as F
from mlops_bench import Bench, graphed, spin_groups

import mlops.vocab as mv


def rotating(replays):
    state = {"i": 0}

    def call():
        state["i"] = (state["i"] + 1) % len(replays)
        replays[state["i"]]()
    return call


def timeline(label: str, V: int, name: str, replay) -> None:
    """Kernel records of 10 replays (each after the harness's lead spin): per kernel of the call, the median start
    after the call's first kernel and the median duration, in us."""
    from torch.profiler import ProfilerActivity, profile

    replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            torch.cuda._sleep(100_000)
            replay()
        torch.cuda.synchronize()
    groups = [g for g in spin_groups(prof) if g]
    if not groups or len({len(g) for g in groups}) != 1:
        print(f"# timeline {label} {V}x4096 M=1 {name}: not the expected shape ({[len(g) for g in groups]})")
        return
    spans = [g[-1].time_range.end - g[0].time_range.start for g in groups]
    print(f"timeline {label} {V}x4096 M=1 {name}: span {statistics.median(spans):.2f} us, {len(groups[0])} kernels")
    for i in range(len(groups[0])):
        st = statistics.median(g[i].time_range.start - g[0].time_range.start for g in groups)
        du = statistics.median(g[i].time_range.elapsed_us() for g in groups)
        print(f"  {groups[0][i].name[:90]:90s} start +{st:8.2f}  dur {du:8.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--timeline", action="store_true")
    ap.add_argument("--reps", type=int, default=40)
    a = ap.parse_args()
    b = Bench("vocab", results_dir=os.environ.get("MLOPS_BENCH_OUT"))
    b.header()
    H = 4096
    for V in (32000, 151936):
        ws = [torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(2)]
        for M in (1, 2, 4, 8):
            x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(M, V, device="cuda")
            makers = {"mlops": lambda w: (lambda: mv.lm_head(x, w, out=out)),
                      "mlops+stats": lambda w: (lambda: mv.lm_head(x, w, out=out, stats=True)),
                      "cublas": lambda w: (lambda: F.linear(x, w))}
            replays = {k: [graphed(m(w)) for w in ws] for k, m in makers.items()}
            t = b.time_interleaved({k: rotating(r) for k, r in replays.items()}, flush=True, reps=a.reps)
            nbytes = V * H * 2 + M * H * 2 + M * V * 4
            for k in ("mlops", "mlops+stats"):
                b.record(case=f"lm_head {V}x{H} M={M}", impl=k, label=a.label, seconds=t[k], bytes=nbytes,
                         peer="cublas", peer_seconds=t["cublas"])
            b.record(case=f"lm_head {V}x{H} M={M}", impl="cublas", label=a.label, seconds=t["cublas"],
                     bytes=V * H * 2 + M * H * 2 + M * V * 2)
            us = {k: v * 1e6 for k, v in t.items()}
            print(f"{a.label} {V}x{H} M={M}: plain {us['mlops']:.2f} stats {us['mlops+stats']:.2f} "
                  f"(+{us['mlops+stats'] - us['mlops']:.2f}) cublas {us['cublas']:.2f} us", flush=True)
            if a.timeline and M == 1:
                for k in ("mlops", "mlops+stats"):
                    try:
                        timeline(a.label, V, k, replays[k][0])
                    except Exception as e:  # noqa: BLE001 - a diagnostic, never a reason to lose the bench
                        print(f"# timeline {a.label} {V} {k}: {e}")
        ws.clear()


if __name__ == "__main__":
    main()
