"""What the GPU itself needs for a target's bytes: the size-matched floor of two targets that may sit below it.

Issue 2 asks 2048x4096 RMSNorm <= 0.5x F.rms_norm's time; issue 5 asks the 32000x4096 LM head >= 98 % of the measured
copy bandwidth. Both are read against a bandwidth measured on a 2 GiB copy, where launch, ramp and tail are amortised.
This times, with the bench harness's own method (tools/testing/mlops_bench.py: events, L2 flushed by a clean read, the
GPU busy before the start event, medians, interleaved), on the same inputs' byte counts:

  copy   a device-to-device copy moving the same bytes (read + written = the call's bytes), and
  read   a read-only reduction of the call's read bytes (torch.sum into one fp32: one kernel),

next to the peer and the planned mlops call of the same shape. If even the copy of the same bytes takes longer than
the target allows, the target is below this GPU's floor at that size.
Usage (GPU machine): PYTHONPATH=<mlops wheels>:tools/testing python3 ci/device/floor_probe.py [--out DIR]
    [--only rms_norm|lm_head]
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F
from mlops_bench import Bench


def floors(b: Bench, read: int, written: int) -> dict:
    """Seconds of the size-matched copy and of a read-only pass over `read` bytes (floats)."""
    half = (read + written) // 2
    a = torch.empty(half, dtype=torch.uint8, device="cuda")
    c = torch.empty_like(a)
    r = torch.ones(read // 4, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")
    return b.time_interleaved({"copy": lambda: c.copy_(a), "read": lambda: torch.sum(r, dim=0, out=sink)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("MLOPS_BENCH_OUT", "bench/results"))
    ap.add_argument("--only", choices=("rms_norm", "lm_head"), help="one of the two probes (run 97 ran rms_norm alone)")
    args = ap.parse_args()

    import mlops.norm as mn

    b = Bench("floor", results_dir=args.out)
    b.header()
    for T, H in ((2048, 4096), (16384, 4096)) if args.only != "lm_head" else ():
        x = torch.randn(T, H, dtype=torch.bfloat16, device="cuda")
        w = torch.randn(H, dtype=torch.bfloat16, device="cuda")
        io = 2 * T * H * 2 + H * 2
        t = b.time_interleaved({"mlops": lambda: mn.rms_norm(x, w), "F.rms_norm": lambda: F.rms_norm(x, (H,), w, 1e-6)})
        f = floors(b, T * H * 2 + H * 2, T * H * 2)
        for k, v in {**t, **{f"{k} of the same bytes": v for k, v in f.items()}}.items():
            b.record(case="floor rms_norm", shape=f"{T}x{H}", impl=k, seconds=v, bytes=io,
                     half_peer_us=round(0.5 * t["F.rms_norm"] * 1e6, 2))

    if args.only == "rms_norm":
        return
    import mlops.vocab as mv

    for V in (32000, 151936):
        H = 4096
        wt = torch.randn(V, H, dtype=torch.bfloat16, device="cuda") * 0.02
        x = torch.randn(1, H, dtype=torch.bfloat16, device="cuda")
        out = torch.empty(1, V, dtype=torch.float32, device="cuda")
        io = V * H * 2 + H * 2 + V * 4
        t = b.time_interleaved({"mlops (stats)": lambda: mv.lm_head(x, wt, out=out, stats=True),
                                "mlops": lambda: mv.lm_head(x, wt, out=out), "cuBLAS": lambda: x @ wt.T})
        f = floors(b, V * H * 2 + H * 2, V * 4)
        for k, v in {**t, **{f"{k} of the same bytes": v for k, v in f.items()}}.items():
            b.record(case="floor lm_head M=1", shape=f"{V}x{H}", impl=k, seconds=v, bytes=io,
                     target_98_us=round(io / (0.98 * b.copy_bw) * 1e6, 2))


if __name__ == "__main__":
    main()
