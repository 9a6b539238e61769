"""The one bench harness every package's bench/ uses.

Times functions with CUDA events (median of many runs), flushing L2 before each timed run (a
read of 2x the L2 size, which leaves it clean) or rotating inputs, so DRAM is what is measured;
CUPTI kernel durations as a second figure (kernel_time); measures the device's copy bandwidth once
(a large device-to-device copy, bytes read + written) so every case can say what fraction of it it
reached; prints one JSON line per case and appends it to a results file.

    from mlops_bench import Bench
    b = Bench("norm")                      # results -> bench/results/<date>-<gpu>.jsonl
    t = b.time(lambda: f(x), flush=True)   # median seconds
    b.record(case="rms 2048x4096", impl="mlops", seconds=t, bytes=nbytes, peer_seconds=...)
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import statistics

import torch


def device_info() -> dict:
    p = torch.cuda.get_device_properties(0)
    try:
        import subprocess

        # one line a GPU on a multi-GPU host: the benches time GPU 0 of CUDA_VISIBLE_DEVICES, one driver anyway
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().splitlines()[0]
    except OSError:
        drv = "?"
    return {"gpu": p.name, "sm": f"{p.major}{p.minor}", "sms": p.multi_processor_count,
            "l2_bytes": p.L2_cache_size, "torch": torch.__version__, "cuda": torch.version.cuda, "driver": drv}


class Bench:
    def __init__(self, package: str, results_dir: str | os.PathLike | None = None, reps: int = 200,
                 lead_us: float | None = None):
        self.package = package
        self.reps = reps
        # GPU busy time queued before each timed call (_lead): 100k cycles (~50 us at the H200's
        # 1.98 GHz) unless a bench asks for more (norm: its variant= calls outran 50 us on a busy host)
        khz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 1_980_000)  # H200 boost, where torch has none
        self._lead_cycles = 100_000 if lead_us is None else int(lead_us * khz / 1e3)
        self.info = device_info()
        l2 = self.info["l2_bytes"] or (50 << 20)
        self._flush_buf = torch.ones(2 * l2 // 4 + 1, dtype=torch.float32, device="cuda")
        self._flush_sink = torch.empty((), dtype=torch.float32, device="cuda")
        self.copy_bw = self.measure_copy_bandwidth()
        date = datetime.date.today().isoformat()
        d = pathlib.Path(results_dir or os.environ.get("MLOPS_BENCH_OUT", "bench/results"))
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / f"{package}-{date}.jsonl"
        self.rows: list[dict] = []

    def flush_l2(self):
        """Evicts every line of the timed call's data from L2 and leaves L2 clean: a read of 2x its
        size. (Until session 4 this was a write, fill_: L2 then held ~L2-size of the flush's dirty
        lines, whose write-back the timed kernel paid: run 21 measured the 151936x4096 lm_head read
        at 316 us after the write flush and 291 us after a read one, cuBLAS 308 / 300. A read flush
        is what ncu's cache control does: write back, then start the kernel on a clean L2.)"""
        torch.sum(self._flush_buf, dim=0, out=self._flush_sink)

    def _lead(self):
        """Keeps the GPU busy ~50 us before a timed region, so the host has queued the timed
        call before the GPU reaches the start event: the events then measure the GPU's time,
        not the host's (without it, a small kernel reads as the Python call's latency)."""
        torch.cuda._sleep(self._lead_cycles)

    def time(self, fn, flush: bool = True, reps: int | None = None, warmup: int = 10) -> float:
        """Median seconds of fn() over reps runs, each timed alone by CUDA events."""
        reps = reps or self.reps
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            if flush:
                self.flush_l2()
            self._lead()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e-3

    def time_interleaved(self, fns: dict, flush: bool = True, reps: int | None = None) -> dict:
        """A/B/... timing: the functions alternate, order reversed every other round, medians each."""
        reps = reps or self.reps
        names = list(fns)
        for n in names:
            for _ in range(5):
                fns[n]()
        torch.cuda.synchronize()
        ev = {n: [] for n in names}
        for i in range(reps):
            order = names if i % 2 == 0 else names[::-1]
            for n in order:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                if flush:
                    self.flush_l2()
                self._lead()
                s.record()
                fns[n]()
                e.record()
                ev[n].append((s, e))
        torch.cuda.synchronize()
        return {n: statistics.median(s.elapsed_time(e) for s, e in ev[n]) * 1e-3 for n in names}

    def kernel_time(self, fn, flush: bool = True, reps: int = 30) -> float | None:
        """Median seconds of the GPU activity (kernels, memsets, copies) of one fn() call, as CUPTI
        records it through torch.profiler: the kernels' own start-to-end durations, summed, without
        the launch latency that CUDA events include (3-4 us a call on the H200, run 19). A second
        figure next to time()'s, never a replacement: docs state which one a target is read on.
        Calls are told apart by the harness's sleep kernels (torch.cuda._sleep, 'spin_kernel'):
        each fn() follows the lead spin; with flush, a short marker spin precedes the flush, so the
        groups between spins alternate flush, call. None if the trace is not of that shape."""
        from torch.profiler import ProfilerActivity, profile

        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                if flush:
                    torch.cuda._sleep(1)
                    self.flush_l2()
                self._lead()
                fn()
            torch.cuda.synchronize()
        groups = spin_groups(prof)
        if flush:
            if len(groups) != 2 * reps:
                return None
            groups = groups[1::2]
        if len(groups) != reps or not all(groups):
            return None  # not the expected shape of the trace: say nothing rather than guess
        return statistics.median(sum(e.time_range.elapsed_us() for e in g) for g in groups) * 1e-6

    def measure_copy_bandwidth(self, nbytes: int = 2 << 30) -> float:
        """Bytes/s of a large device-to-device copy (read + write counted)."""
        a = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        t = self.time(lambda: b.copy_(a), flush=False, reps=30)  # a, b freed on return
        return 2 * (nbytes // 2) / t

    def record(self, **row) -> dict:
        """One case: pass seconds and bytes (or flops); fractions and ratios are added here."""
        row = {"package": self.package, **row}
        if "bytes" in row and row.get("seconds"):
            row["GBps"] = round(row["bytes"] / row["seconds"] / 1e9, 1)
            row["frac_copy_bw"] = round(row["bytes"] / row["seconds"] / self.copy_bw, 3)
        if "flops" in row and row.get("seconds"):
            row["TFLOPs"] = round(row["flops"] / row["seconds"] / 1e12, 2)
        if row.get("peer_seconds") and row.get("seconds"):
            row["speedup_vs_peer"] = round(row["peer_seconds"] / row["seconds"], 3)
        for k in ("seconds", "peer_seconds"):
            if k in row and row[k] is not None:
                row[k.replace("seconds", "us")] = round(row.pop(k) * 1e6, 2)
        row.update({"gpu": self.info["gpu"], "copy_GBps": round(self.copy_bw / 1e9, 1)})
        line = json.dumps(row)
        print(line, flush=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")
        self.rows.append(row)
        return row

    def header(self) -> dict:
        h = {"package": self.package, "header": True, **self.info, "copy_GBps": round(self.copy_bw / 1e9, 1),
             "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        print(json.dumps(h), flush=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(h) + "\n")
        return h


def spin_groups(prof) -> list:
    """The CUDA activities of a torch.profiler trace, in start order, grouped by the harness's sleep kernels
    (torch.cuda._sleep, 'spin_kernel'): one list after each spin (what ran before the first spin is dropped)."""
    evs = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                 key=lambda e: e.time_range.start)
    groups, cur = [], None
    for e in evs:
        if "spin_kernel" in e.name:
            cur = []
            groups.append(cur)
        elif cur is not None:
            cur.append(e)
    return groups


def graphed(fn):
    """fn captured in a CUDA graph (after a warm-up on a side stream); returns the replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay
