"""mlops-norm against its peers, side by side in one process on the same inputs (H200 tables in
docs/performance.md). L2 is flushed before every timed call. One JSON line per case.

    python packages/norm/bench/bench_norm.py [--quick] [--variants] [--shapes 16384x4096,2048x4096]
        [--kernel-time r16l,r16lx] [--lead-us 150]
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "testing"))
from mlops_bench import Bench  # noqa: E402

import mlops.norm as mn  # noqa: E402


def hf_rms(x, w, eps: float = 1e-6):  # LlamaRMSNorm.forward
    v = x.float()
    v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)
    return w * v.to(x.dtype)


def hf_add_rms(x, r, w, eps: float = 1e-6):
    s = x + r
    return hf_rms(s, w, eps), s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", action="store_true", help="also time every variant (planner tuning)")
    ap.add_argument("--shapes", help="only these TxH shapes, e.g. 16384x4096,2048x4096")
    ap.add_argument("--variant-names", default="",
                    help="comma-separated: --variants times only these (default: every variant)")
    ap.add_argument("--kernel-time", default="",
                    help="comma-separated variants whose --variants rows also get kernel_us (CUPTI, Bench.kernel_time)")
    ap.add_argument("--lead-us", type=float, default=150.0,
                    help="GPU busy time queued before each timed call (the harness's is ~50 us)")
    ap.add_argument("--overhead-only", action="store_true",
                    help="only the 1x4096 Python call overhead case (run it first in a call, on an idle host)")
    a = ap.parse_args()
    # Run 18 timed r16l4cs's INT8 call (the very kernel r16l4 ran in 17.3 us) at 27.8 us and
    # every add+norm variant after it 5-6 us slow at 2048x4096, while ncu (run 19) gave r16lq
    # 15.1 us against r16l's 16.2: the general Python path of a variant= call (tensor
    # allocations, checks) outran the harness's ~50 us lead on a busy host, so the events timed
    # the host. A longer lead keeps the call queued before its start event.
    b = Bench("norm", lead_us=a.lead_us)
    b.header()
    if a.overhead_only:
        overhead(b)
        return
    hf_rms_c = torch.compile(hf_rms, dynamic=True)
    hf_add_c = torch.compile(hf_add_rms, dynamic=True)
    Ts = [1, 2048] if a.quick else [1, 8, 128, 2048, 16384]
    Hs = [4096] if a.quick else [2048, 4096, 8192]
    dt = torch.bfloat16
    shapes = [(T, H) for T in Ts for H in Hs]
    if a.shapes:
        shapes = [tuple(int(v) for v in sh.split("x")) for sh in a.shapes.split(",")]
    for T, H in shapes:
        x = torch.randn(T, H, device="cuda", dtype=dt)
        r = torch.randn(T, H, device="cuda", dtype=dt)
        w = torch.randn(H, device="cuda", dtype=dt)
        bias = torch.randn(H, device="cuda", dtype=dt)
        s = torch.tensor([0.02], device="cuda")
        e = x.element_size()
        io = 2 * T * H * e + H * e  # read x, write y, read w
        shape = f"{T}x{H}"
        t = b.time_interleaved({
            "mlops": lambda: mn.rms_norm(x, w),
            "F.rms_norm": lambda: F.rms_norm(x, (H,), w, 1e-6),
            "compiled_hf": lambda: hf_rms_c(x, w),
        })
        b.record(case="rms_norm", shape=shape, impl="mlops", seconds=t["mlops"], bytes=io,
                 peer="F.rms_norm", peer_seconds=t["F.rms_norm"])
        b.record(case="rms_norm", shape=shape, impl="F.rms_norm", seconds=t["F.rms_norm"], bytes=io)
        b.record(case="rms_norm", shape=shape, impl="compile(HF RMSNorm)", seconds=t["compiled_hf"], bytes=io)
        plain_us = round(t["mlops"] * 1e6, 2)  # the quantized rows' plain norm: this RMSNorm (not layer_norm's)
        t = b.time_interleaved({
            "mlops": lambda: mn.rms_norm(x, w, residual=r),
            "compiled_pair": lambda: hf_add_c(x, r, w),
        })
        io_add = 4 * T * H * e + H * e
        b.record(case="add_rms_norm", shape=shape, impl="mlops", seconds=t["mlops"], bytes=io_add,
                 peer="compile(add + HF RMSNorm)", peer_seconds=t["compiled_pair"])
        b.record(case="add_rms_norm", shape=shape, impl="compile(add + HF RMSNorm)", seconds=t["compiled_pair"],
                 bytes=io_add)
        t = b.time_interleaved({
            "mlops": lambda: mn.layer_norm(x, w, bias),
            "F.layer_norm": lambda: F.layer_norm(x, (H,), w, bias, 1e-5),
        })
        b.record(case="layer_norm", shape=shape, impl="mlops", seconds=t["mlops"], bytes=io + H * e,
                 peer="F.layer_norm", peer_seconds=t["F.layer_norm"])
        # quantized outputs (no y written): bytes read + codes + scales written
        for quant, qbytes in (("int8", T * H + T * H // 16 * 4), ("nvfp4", T * H // 2 + T * H // 16),
                              ("fp8", T * H + 4 * T)):
            t_q = b.time(lambda: mn.rms_norm(x, w, quant=quant))
            b.record(case=f"rms_norm+{quant}", shape=shape, impl="mlops", seconds=t_q,
                     bytes=T * H * e + H * e + qbytes, plain_norm_us=plain_us)
        t_s = b.time(lambda: mn.rms_norm(x, w, quant="fp8", scale=s))
        b.record(case="rms_norm+fp8_static", shape=shape, impl="mlops", seconds=t_s, bytes=io - T * H)
        if a.variants:
            props = torch.cuda.get_device_properties(0)
            sms, sm = props.multi_processor_count, props.major * 10 + props.minor
            names = [v["name"] for v in mn.norm_variants()]
            ops = mn._ops

            # the call planner's pick (plan_call: RMSNorm of x's dtype, on this GPU's arch and SM count) for each case;
            # the bench's "fp8" without a scale is the dynamic kind
            def planner(quant=None, residual=False):
                code = ops._QUANT["fp8_dynamic" if quant == "fp8" else quant]
                return names[ops.C.plan_call(T, H, ops._KIND["rms"], ops._DTYPE[dt], residual, code, sms, sm)]
            qbytes = {"int8": T * H + T * H // 16 * 4, "nvfp4": T * H // 2 + T * H // 16, "fp8": T * H + 4 * T}
            kt_names = set(filter(None, a.kernel_time.split(",")))

            def timed(name, fn):  # event time, and the CUPTI kernel time for the --kernel-time names
                extra = {}
                if name in kt_names:
                    kt = b.kernel_time(fn)
                    extra["kernel_us"] = round(kt * 1e6, 2) if kt else None
                return b.time(fn), extra

            only = set(filter(None, a.variant_names.split(",")))
            for v in mn.norm_variants():
                name = v["name"]
                if only and name not in only:
                    continue
                tv, ex = timed(name, lambda: mn.rms_norm(x, w, variant=name))
                b.record(case="rms_norm_variant", shape=shape, impl=name, seconds=tv, bytes=io, planner=planner(), **ex)
                tv = b.time(lambda: mn.rms_norm(x, w, residual=r, variant=name))
                b.record(case="add_rms_norm_variant", shape=shape, impl=name, seconds=tv, bytes=io_add,
                         planner=planner(residual=True))
                for quant in ("int8", "nvfp4", "fp8"):  # no y written, as the rms_norm+<quant> cases
                    tv, ex = timed(name, lambda: mn.rms_norm(x, w, quant=quant, variant=name))
                    b.record(case=f"rms_norm+{quant}_variant", shape=shape, impl=name, seconds=tv,
                             bytes=T * H * e + H * e + qbytes[quant], planner=planner(quant), **ex)
                tv, ex = timed(name, lambda: mn.rms_norm(x, w, quant="fp8", scale=s, variant=name))
                b.record(case="rms_norm+fp8_static_variant", shape=shape, impl=name, seconds=tv,
                         bytes=T * H * e + H * e + T * H, planner=planner("fp8_static"), **ex)
    overhead(b)


def wall_and_kernel(b, fn, n):
    """(wall seconds a call of n back-to-back calls, GPU seconds a call of 100 calls replayed from
    a CUDA graph) of one eager call."""
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(100):
            fn()
    return wall, b.time(lambda: g.replay(), flush=False, reps=50) / 100


def overhead(b):
    """Python call overhead of a 1x4096 call: wall time per call of back-to-back calls minus the
    kernel's own time (CUDA-graph replay of the same call)."""
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    n = 20000
    wall, kernel = wall_and_kernel(b, lambda: mn.rms_norm(x, w, out=out), n)
    t0 = time.perf_counter()
    for _ in range(n):
        torch.nn.functional.rms_norm(x, (4096,), w, 1e-6)
    torch.cuda.synchronize()
    wall_torch = (time.perf_counter() - t0) / n
    # the native call alone (what the Python layer adds is wall - native_wall)
    C, stream, xp, wp, yp = mn._ops.C, torch.cuda.current_stream().cuda_stream, x.data_ptr(), w.data_ptr(), out.data_ptr()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        C.run_rms(0, stream, 4096, 4096, 1e-6, 1, xp, 1, wp, yp)  # what rms_norm's fast path calls
    torch.cuda.synchronize()
    native = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        C.run_plain(0, stream, 1, 4096, 0, 1e-6, 0.0, 1, xp, 1, wp, 0, 0, yp)  # its 14-argument form
    torch.cuda.synchronize()
    native_plain = (time.perf_counter() - t0) / n
    # the host's own floor, measured the same way: torch's one-kernel ops from Python (what any op's
    # eager call costs there; session 5 saw the native call alone at 5.3 ... 12.3 us on a busy host)
    ref = {}
    for name, fn in (("torch_mul_", lambda: out.mul_(1.0)), ("torch_sleep0", lambda: torch.cuda._sleep(0))):
        w_, k = wall_and_kernel(b, fn, n)
        ref[f"{name}_wall_us"], ref[f"{name}_kernel_us"] = round(w_ * 1e6, 2), round(k * 1e6, 2)
        ref[f"{name}_overhead_us"] = round((w_ - k) * 1e6, 2)
    b.record(case="python_overhead", shape="1x4096", impl="mlops", seconds=wall, kernel_us=round(kernel * 1e6, 2),
             overhead_us=round((wall - kernel) * 1e6, 2), torch_F_rms_norm_wall_us=round(wall_torch * 1e6, 2),
             native_call_wall_us=round(native * 1e6, 2), python_us=round((wall - native) * 1e6, 2),
             native_run_plain_wall_us=round(native_plain * 1e6, 2), **ref)


if __name__ == "__main__":
    main()
