#!/usr/bin/env python3
"""Turns bench JSON lines (mlops_bench.Bench) into the markdown tables of docs/performance.md.

    python tools/bench_report.py packages/norm/bench/results/*.jsonl > docs/perf/norm.md

Each table: one row per (case, shape) with mlops's time, the peer's time, the ratio, and the
fraction of the device's measured copy bandwidth reached. Nothing here is typed by hand."""

from __future__ import annotations

import collections
import json
import sys


def load(paths):
    header, rows = None, []
    for p in paths:
        for line in open(p):
            r = json.loads(line)
            if r.get("header"):
                header = r
            else:
                rows.append(r)
    return header, rows


def render(header, rows) -> str:
    out = []
    if header:
        out.append(f"Measured {header['date']} on {header['gpu']} (sm_{header['sm']}, {header['sms']} SMs), "
                   f"driver {header['driver'].splitlines()[0]}, torch {header['torch']} (CUDA {header['cuda']}); measured device "
                   f"copy bandwidth {header['copy_GBps']} GB/s (read + write of a 2 GiB copy). L2 flushed before "
                   f"every timed call; medians of 200 interleaved runs (CUDA events).\n")
    by_case = collections.OrderedDict()
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    for case, rs in by_case.items():
        if case == "python_overhead":
            for r in rs:
                out.append(f"**Python call overhead** ({r['shape']}): {r['us']} µs a call, of which the kernel "
                           f"{r['kernel_us']} µs: overhead {r['overhead_us']} µs (torch F.rms_norm call: "
                           f"{r['torch_F_rms_norm_wall_us']} µs wall).\n")
            continue
        if case.endswith("_variant"):
            out.append(f"### {case}\n\n| shape | " + " | ".join(sorted({r['impl'] for r in rs})) + " | planner |")
            names = sorted({r["impl"] for r in rs})
            out.append("|---" * (len(names) + 2) + "|")
            for shape in dict.fromkeys(r["shape"] for r in rs):
                cells = {r["impl"]: r for r in rs if r["shape"] == shape}
                pl = next(iter(cells.values())).get("planner", "")
                out.append(f"| {shape} | " + " | ".join(f"{cells[n]['us']}" if n in cells else "" for n in names)
                           + f" | {pl} |")
            out.append("")
            continue
        out.append(f"### {case}\n")
        out.append("| shape | implementation | µs | % of copy BW | speedup vs peer (peer) |")
        out.append("|---|---|---|---|---|")
        for r in rs:
            if "us" not in r:
                continue
            extra = f" (plain norm {r['plain_norm_us']} µs)" if "plain_norm_us" in r else ""
            frac = f"{100 * r['frac_copy_bw']:.0f}" if "frac_copy_bw" in r else ""
            sp = f"{r['speedup_vs_peer']}× ({r.get('peer', '')})" if r.get("speedup_vs_peer") else ""
            out.append(f"| {r.get('shape', '')} | {r['impl']} | {r['us']}{extra} | {frac} | {sp} |")
        out.append("")
    return "\n".join(out)


def main(argv):
    header, rows = load(argv[1:])
    print(render(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
