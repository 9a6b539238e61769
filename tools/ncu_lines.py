#!/usr/bin/env python3
"""Executed instructions and stall samples of a kernel by source line, from an ncu profile taken without source.

    # on the GPU machine: ncu --set full -o rep ...; ncu -i rep.ncu-rep --page source --csv --print-source sass > k.csv
    # here: the same kernel compiled with the same nvcc and flags plus -lineinfo, then
    nvcc ... -lineinfo -cubin x.cu -o x.cubin && nvdisasm -gi x.cubin > x.sass
    python tools/ncu_lines.py k.csv x.sass --function 0 --per 32842 [--line 431]

Why: the wheels the device runs are built without -lineinfo, so ncu's source page has SASS only. -lineinfo does not
change the code nvcc 13.0 emits, so a local compile of the same source gives the same instruction sequence with
`//## File ..., line N` markers (nvdisasm -gi); the script checks the opcodes match one for one (else it stops) and
sums ncu's "Instructions Executed" (warp instructions) and "Warp Stall Sampling (All Samples)" of each SASS
instruction onto its source lines: the innermost (the line the instruction comes from) and the outermost (the call
site in the kernel body that inlined it). --per divides by a count (a kernel's work items) to give per-item figures;
--line N lists what line N of the kernel body inlines. First used in session 25 (docs/attention.md "Session 25, the
refine's item by source line").
"""
from __future__ import annotations

import argparse
import collections
import csv
import re
import sys


def ncu_rows(path: str) -> list[tuple[str, int, int]]:
    """(SASS text, instructions executed, stall samples) of each instruction of the csv's kernel, in address order."""
    rows = list(csv.reader(open(path)))
    hdr = next(r for r in rows if "Source" in r and "Instructions Executed" in r)
    at = rows.index(hdr)
    i_src, i_exe = hdr.index("Source"), hdr.index("Instructions Executed")
    i_smp = hdr.index("Warp Stall Sampling (All Samples)")
    out = []
    for r in rows[at + 1:]:
        if len(r) <= max(i_src, i_exe, i_smp) or not r[i_src].strip():
            continue
        out.append((r[i_src].strip(), int(r[i_exe] or 0), int(r[i_smp] or 0)))
    return out


def sass_lines(path: str, function: int) -> list[tuple[str, tuple | None]]:
    """(SASS text, ((file, innermost line), (file, outermost line))) of each instruction of the function-th
    function of an `nvdisasm -gi` listing."""
    text = open(path).read().split("\n")
    starts = [i for i, x in enumerate(text) if x.startswith(".text.")]
    out, pending, cur = [], [], None
    for x in text[starts[function] + 1:]:
        if x.startswith(".text."):
            break
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', x)
        if m:
            pending.append((m.group(1).split("/")[-1], int(m.group(2))))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", x)
        if m:
            if pending:  # innermost first, then the inlined-at chain out to the kernel body
                cur, pending = (pending[0], pending[-1]), []
            out.append((m.group(2).strip(), cur))
    return out


def opcode(s: str) -> str:
    s = re.sub(r"^\{?\s*@!?U?P\w+\s+", "", s.lstrip("{ "))
    return s.split()[0] if s else "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("sass")
    ap.add_argument("--function", type=int, default=0, help="which .text. function of the listing (0: the first)")
    ap.add_argument("--per", type=float, default=1.0, help="divide the counts by this (work items a launch)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--line", type=int, action="append", default=[], help="break this kernel-body line down")
    a = ap.parse_args(argv)
    gpu, loc = ncu_rows(a.csv), sass_lines(a.sass, a.function)
    if len(gpu) != len(loc) or any(opcode(g[0]) != opcode(s[0]) for g, s in zip(gpu, loc)):
        print(f"the SASS differs: {len(gpu)} instructions profiled, {len(loc)} in the listing", file=sys.stderr)
        return 1
    total, samples = sum(g[1] for g in gpu), sum(g[2] for g in gpu) or 1
    inner, outer, stall = collections.Counter(), collections.Counter(), collections.Counter()
    for (_, exe, smp), (_, where) in zip(gpu, loc):
        if where:
            inner[where[0]] += exe
            outer[where[1]] += exe
            stall[where[1]] += smp
    print(f"{total} warp instructions ({total / a.per:.0f} per {a.per:g}), {samples} stall samples")
    print("kernel-body line: instructions (per), % of instructions, % of stall samples")
    for k, v in outer.most_common(a.top):
        print(f"  {k[0]}:{k[1]:<6} {v / a.per:9.0f} {100 * v / total:6.1f} % {100 * stall[k] / samples:6.1f} %")
    print("innermost line: instructions (per), % of instructions")
    for k, v in inner.most_common(a.top):
        print(f"  {k[0]}:{k[1]:<6} {v / a.per:9.0f} {100 * v / total:6.1f} %")
    for want in a.line:
        sub, ops = collections.Counter(), collections.Counter()
        for (s, exe, _), (_, where) in zip(gpu, loc):
            if where and where[1][1] == want:
                sub[where[0]] += exe
                ops[opcode(s).split(".")[0]] += exe
        print(f"kernel-body line {want}, by innermost line (per):")
        for k, v in sub.most_common(a.top):
            print(f"  {k[0]}:{k[1]:<6} {v / a.per:9.0f}")
        print("  opcodes:", ", ".join(f"{k} {v / a.per:.0f}" for k, v in ops.most_common(15)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
