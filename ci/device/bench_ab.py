"""The sampling bench rows of a before / new device call side by side (ci/device/s14v*.sh, s15v.sh, s16v*.sh).

Usage: python3 ci/device/bench_ab.py R [--skip-batch 8] > R/ab.txt, where R holds bench-before-*/ and bench-new-*/
(the jsonl of bench_vocab.py --only sampling). One line a (case, impl): each wheel's calls, their mean and the CUPTI
kernel µs where the bench took them, then new - before (a form only one wheel has shows "-": compare it with its
twin's rows). Session 16 made this the one copy (s16v.sh had grown its own; duplicates D1 / D5).
"""
import argparse
import glob
import json
import os

ap = argparse.ArgumentParser()
ap.add_argument("R")
ap.add_argument("--skip-batch", action="append", default=[], help="leave out the rows of this batch size (B=...)")
a = ap.parse_args()
rows = {}
for side in ("before", "new"):
    for f in sorted(glob.glob(os.path.join(a.R, f"bench-{side}-*", "*.jsonl"))):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not str(r.get("impl", "")).startswith("mlops") or "us" not in r:
                continue
            if any(f" B={b} " in r["case"] + " " for b in a.skip_batch):
                continue
            k = (r["case"].replace("sample V=151936 ", ""), r["impl"] + (f" [{r.get('ran_as')}]" if r["impl"] == "mlops" else ""))
            kt = r.get("kernel_seconds")
            rows.setdefault(k, {}).setdefault(side, []).append((r["us"], kt * 1e6 if kt else None))
print("case | impl | before us (calls) [CUPTI] | new us (calls) [CUPTI] | new - before")
fmt = lambda xs: "-" if not xs else (f"{sum(x for x, _ in xs) / len(xs):.2f} ({' '.join(f'{x:.2f}' for x, _ in xs)})"
                                     f" [{' '.join(f'{k:.2f}' for _, k in xs if k) or '-'}]")
for (case, impl), v in sorted(rows.items()):
    b, n = v.get("before", []), v.get("new", [])
    d = f"{sum(x for x, _ in n) / len(n) - sum(x for x, _ in b) / len(b):+.2f}" if b and n else "-"
    print(f"{case} | {impl} | {fmt(b)} | {fmt(n)} | {d}")
