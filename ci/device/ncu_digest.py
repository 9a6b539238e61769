#!/usr/bin/env python3
"""Digest of `ncu -i X.ncu-rep --page source --csv --print-source sass` (session 16, GPU run 90): for each kernel block
of the CSV, the warp-stall samples by reason, then the instructions with the most samples (address, SASS, samples,
the top reasons), and the samples summed over windows of consecutive instructions (where a warp's time goes).

    python3 ci/device/ncu_digest.py attn-b1-l4096-source.csv [--top 40] [--window 64] > digest.txt
"""
import argparse
import csv
import io


def blocks(path):
    """Yields (kernel name, header, rows) for each "Kernel Name" block of the CSV."""
    name, lines = None, []
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith('"Kernel Name"'):
            if name is not None:
                yield name, lines
            name, lines = line.split(",", 1)[1].strip().strip(",").strip('"'), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        yield name, lines


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--window", type=int, default=64)
    a = ap.parse_args()
    for k, (name, lines) in enumerate(blocks(a.csv)):
        rows = list(csv.reader(io.StringIO("".join(lines))))
        head, rows = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
        col = {h: i for i, h in enumerate(head)}
        reasons = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
        samp = col["Warp Stall Sampling (All Samples)"]
        total = sum(num(r[samp]) for r in rows)
        execd = sum(num(r[col["Instructions Executed"]]) for r in rows)
        print(f"=== block {k}: {name}\n{len(rows)} SASS instructions, {total:.0f} stall samples, "
              f"{execd:.0f} warp instructions executed")
        by = {h: sum(num(r[col[h]]) for r in rows) for h in reasons}
        print("by reason: " + ", ".join(f"{h[6:]} {v / max(total, 1):.1%}" for h, v in
                                        sorted(by.items(), key=lambda x: -x[1]) if v > 0.005 * total))
        print(f"-- top {a.top} instructions by samples (addr | samples | executed | top reasons | SASS)")
        for r in sorted(rows, key=lambda r: -num(r[samp]))[:a.top]:
            rs = sorted(((num(r[col[h]]), h[6:]) for h in reasons), reverse=True)[:3]
            print(f"{r[col['Address']]} | {num(r[samp]):.0f} | {num(r[col['Instructions Executed']]):.0f} | "
                  + " ".join(f"{h}:{v:.0f}" for v, h in rs if v) + f" | {r[col['Source']][:90]}")
        print(f"-- samples by windows of {a.window} instructions (first addr | samples | executed | first SASS)")
        for i in range(0, len(rows), a.window):
            w = rows[i:i + a.window]
            s = sum(num(r[samp]) for r in w)
            if s >= 0.01 * total:
                print(f"{w[0][col['Address']]} | {s:.0f} ({s / total:.1%}) | "
                      f"{sum(num(r[col['Instructions Executed']]) for r in w):.0f} | {w[0][col['Source']][:70]}")


if __name__ == "__main__":
    main()
