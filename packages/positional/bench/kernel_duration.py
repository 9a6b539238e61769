"""Device time of one call, by CUPTI (torch.profiler), next to the bench's CUDA-event time.

The event time of a call holds the harness's floor (the empty kernel reads 4.2-4.5 us on the H200:
event records around a launch behind the L2 flush and the lead spin); the kernel duration is what
the GPU spent in the call's own kernels. Both are measured the same way for mlops and the peers:
the calls run as in Bench.time_interleaved (L2 flush, lead spin, call; order reversed every other
round) under torch.profiler, and a call's device time is the sum of the durations of the kernels,
memsets and memcpys between its lead spin and the next flush.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile

DEVICE_CATS = ("kernel", "gpu_memset", "gpu_memcpy")
FLUSH = "FillFunctor"  # Bench.flush_l2: fill_ of the flush buffer
LEAD = "spin_kernel"   # Bench._lead: torch.cuda._sleep


def device_events(trace: dict) -> list[tuple[str, float, float]]:
    """(name, start us, duration us) of the device activities of a chrome trace, in start order."""
    ev = [(e.get("name", ""), float(e["ts"]), float(e.get("dur", 0.0)))
          for e in trace.get("traceEvents", []) if e.get("cat") in DEVICE_CATS and "ts" in e]
    return sorted(ev, key=lambda e: e[1])


def split_calls(events: list[tuple[str, float, float]]) -> list[list[tuple[str, float, float]]]:
    """The device activities of each call: what follows a flush + lead pair (a FillFunctor kernel
    directly followed by a spin_kernel) up to the next such pair. A call that is itself a spin
    (the empty kernel) or launches a fill of its own stays inside its segment."""
    marks = [i for i in range(len(events) - 1) if FLUSH in events[i][0] and LEAD in events[i + 1][0]]
    return [events[m + 2:(marks[j + 1] if j + 1 < len(marks) else len(events))] for j, m in enumerate(marks)]


def per_call_us(events, order: list[str]) -> dict[str, dict]:
    """Median device us a call of each name (order: the names in launch order), and the kernels a call."""
    calls = split_calls(events)
    if len(calls) != len(order):
        raise RuntimeError(f"kernel duration: {len(calls)} calls in the trace, {len(order)} launched")
    sums: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    for name, acts in zip(order, calls):
        sums.setdefault(name, []).append(sum(d for _, _, d in acts))
        counts.setdefault(name, []).append(len(acts))
    return {n: {"kernel_us": round(statistics.median(sums[n]), 2), "kernels": int(statistics.median(counts[n]))}
            for n in sums}


def kernel_durations(bench, fns: dict, reps: int = 20) -> dict[str, dict]:
    """Per name: {'kernel_us': median device us of one call, 'kernels': device activities a call}."""
    import torch

    names = list(fns)
    for n in names:
        fns[n]()
    torch.cuda.synchronize()
    order = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(reps):
            for n in names if i % 2 == 0 else names[::-1]:
                bench.flush_l2()
                bench._lead()
                fns[n]()
                order.append(n)
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    return per_call_us(device_events(trace), order)
