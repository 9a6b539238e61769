#!/usr/bin/env python3
"""Where a kernel's issue slots go, from `ncu -i X.ncu-rep --page source --csv --print-source sass` (session 20, GPU run
108): the instructions executed by opcode, by the stretches between CTA barriers / mbarrier instructions, and (with
--disasm) by source line.

    python3 ci/device/ncu_lines.py b8l16k-source.csv [--kernel refine_mma4] [--disasm li.sass --function MANGLED]
        [--per ITEMS] [--line N ...]

--disasm takes `nvdisasm -gi -c X.cubin` of a build made with -lineinfo (same sources and flags otherwise: -lineinfo does
not change the SASS; the count of unmatched offsets is printed) and --function the mangled name of the kernel in it
(the `.text.<name>:` label). Each SASS line of the ncu page is matched by its offset from the kernel's first address and
counted at its innermost source line and at the line of the outermost function it is inlined into; the listing's
opcode at each offset must be the profiled one (the count that differ is printed: anything but 0 means another build).
--per divides the counts by a number of work items (the figures a column beside the percentages); --line N breaks the
outermost line N down by innermost line and opcode (session 25: the kEarly refine's K unpack, docs/attention.md).
"""
import argparse
import collections
import csv
import io
import re

from ncu_digest import blocks, num


def op_of(sass):
    """The opcode of a SASS line without its predicate and modifiers (@!P0 IMAD.WIDE.U32 ... -> IMAD)."""
    return re.sub(r"^@!?U?P\w+\s+", "", sass).split()[0].split(".")[0]


def rows_of(lines):
    """(offset, SASS, instructions executed, samples) for each row of a kernel block."""
    table = list(csv.reader(io.StringIO("".join(lines))))
    hdr, data = table[0], table[1:]
    ia, isrc = hdr.index("Instructions Executed"), hdr.index("Source")
    iad, ism = hdr.index("Address"), hdr.index("Warp Stall Sampling (All Samples)")
    out = []
    for r in data:
        if len(r) <= max(ia, isrc, iad, ism) or not r[iad].startswith("0x"):
            continue
        out.append((int(r[iad], 16), r[isrc].strip(), num(r[ia]), num(r[ism])))
    base = out[0][0] if out else 0
    return [(a - base, s, n, sm) for a, s, n, sm in out]


def lines_of(disasm, function):
    """offset -> (innermost (file, line), outermost (file, line), opcode) from nvdisasm -gi's listing of one function."""
    text = open(disasm).read().split("\n")
    start = next(i for i, x in enumerate(text) if x.startswith(".text." + function + ":"))
    out, pending, cur = {}, [], None
    for x in text[start + 1:]:
        if x.startswith(".text."):
            break
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', x)
        if m:
            pending.append((m.group(1).split("/")[-1], int(m.group(2))))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", x)
        if m:
            if pending:
                cur, pending = (pending[0], pending[-1]), []
            out[int(m.group(1), 16)] = (*cur, op_of(m.group(2).strip().lstrip("{ "))) if cur else None
    return out


def report(name, rows, where, top, per=None, lines=()):
    tot = sum(n for _, _, n, _ in rows) or 1.0
    ops, ops_s = collections.Counter(), collections.Counter()
    for _, s, n, sm in rows:
        ops[op_of(s)] += n
        ops_s[op_of(s)] += sm
    print(f"== {name}: {tot:.0f} warp instructions executed, {len(rows)} SASS lines")
    for op, n in ops.most_common(top):
        print(f"  {op:8s} {n / tot * 100:5.1f} %  samples {ops_s[op]:.0f}")
    print("  stretches ending at a CTA barrier or an mbarrier instruction (>= 0.5 %): share, samples, top opcodes")
    cur = [0.0, 0.0, None, collections.Counter()]
    for off, s, n, sm in rows:
        cur[2] = off if cur[2] is None else cur[2]
        cur[0] += n
        cur[1] += sm
        cur[3][op_of(s)] += n
        if op_of(s) in ("BAR", "SYNCS") or off == rows[-1][0]:
            if cur[0] / tot >= 0.005:
                tops = ", ".join(f"{k}:{v / cur[0] * 100:.0f}%" for k, v in cur[3].most_common(5))
                print(f"  {cur[2]:#07x}-{off:#07x} {cur[0] / tot * 100:5.1f} %  samples {cur[1]:5.0f}  {tops}")
            cur = [0.0, 0.0, None, collections.Counter()]
    if where is None:
        return
    inner, outer, inner_s, outer_s = (collections.Counter() for _ in range(4))
    sub = {n: (collections.Counter(), collections.Counter()) for n in lines}
    miss = differ = 0
    for off, s, n, sm in rows:
        if off not in where or where[off] is None:
            miss += 1
            continue
        i, o, op = where[off]
        differ += op != op_of(s)
        inner[i] += n
        outer[o] += n
        inner_s[i] += sm
        outer_s[o] += sm
        if o[1] in sub:
            sub[o[1]][0][i] += n
            sub[o[1]][1][op_of(s)] += n
    each = f", per {per:g}" if per else ""
    fig = (lambda v: f" {v / per:9.0f}") if per else (lambda v: "")
    print(f"  by source line ({miss} of {len(rows)} offsets not in the listing, {differ} with another opcode); the "
          f"outermost function's line (%{each}):")
    for k, v in outer.most_common(top):
        print(f"    {k[0]}:{k[1]:<5d} {v / tot * 100:5.1f} %{fig(v)}  samples {outer_s[k]:.0f}")
    print(f"  the innermost line (%{each}):")
    for k, v in inner.most_common(top):
        print(f"    {k[0]}:{k[1]:<5d} {v / tot * 100:5.1f} %{fig(v)}  samples {inner_s[k]:.0f}")
    for n, (by_line, by_op) in sub.items():
        print(f"  outermost line {n}, by innermost line (%{each}):")
        for k, v in by_line.most_common(top):
            print(f"    {k[0]}:{k[1]:<5d} {v / tot * 100:5.1f} %{fig(v)}")
        print("    opcodes: " + ", ".join(f"{k} {v / tot * 100:.1f} %" + (f" ({v / per:.0f})" if per else "")
                                       for k, v in by_op.most_common(15)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--kernel", default="", help="only kernel blocks whose name contains this")
    ap.add_argument("--disasm", help="nvdisasm -gi listing of a -lineinfo build")
    ap.add_argument("--function", help="the kernel's mangled name in the listing")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--per", type=float, help="counts divided by this too (the kernel's work items)")
    ap.add_argument("--line", type=int, action="append", default=[], help="break this outermost line down")
    a = ap.parse_args()
    where = lines_of(a.disasm, a.function) if a.disasm else None
    for name, lines in blocks(a.csv):
        if a.kernel in name:
            report(name, rows_of(lines), where, a.top, a.per, a.line)


if __name__ == "__main__":
    main()
