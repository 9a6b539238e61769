"""The sampling bench rows of a before / new device call side by side (ci/device/s14v.sh, s14v2.sh).

Usage: python3 ci/device/bench_ab.py R > R/ab.txt, where R holds bench-before-*/ and bench-new-*/ (the jsonl of
bench_vocab.py --only sampling). One line a (case, impl) at B = 1 / 64: the mean of each wheel's calls, the calls,
the difference, and the new calls' CUPTI kernel times where the bench took them.
"""
import glob
import json
import os
import sys
R = sys.argv[1]
rows = {}
for side in ("before", "new"):
    for f in glob.glob(os.path.join(R, f"bench-{side}-*", "*.jsonl")):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not str(r.get("impl", "")).startswith("mlops") or "us" not in r:
                continue
            if " B=8 " in r["case"] + " ":
                continue
            k = (r["case"].replace("sample V=151936 ", ""), r["impl"] + (f" [{r.get('ran_as')}]" if r["impl"] == "mlops" else ""))
            kt = r.get("kernel_seconds")
            rows.setdefault(k, {}).setdefault(side, []).append((r["us"], kt * 1e6 if kt else None))
print("case | impl | before µs (calls) | new µs (calls) | new - before | new kernel µs (CUPTI)")
for (case, impl), v in sorted(rows.items()):
    b, n = [x for x, _ in v.get("before", [])], [x for x, _ in v.get("new", [])]
    ks = [k for _, k in v.get("new", []) if k]
    mb = sum(b) / len(b) if b else None
    mn = sum(n) / len(n) if n else None
    d = f"{mn - mb:+.1f}" if mb is not None and mn is not None else "-"
    f = lambda m, xs: "-" if m is None else f"{m:.1f} ({' '.join(f'{x:.1f}' for x in xs)})"
    k = " ".join(f"{x:.1f}" for x in ks) or "-"
    print(f"{case} | {impl} | {f(mb, b)} | {f(mn, n)} | {d} | {k}")
