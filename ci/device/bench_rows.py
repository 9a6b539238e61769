"""Every bench row with a time ("us") under a device call's results folder, one line a (case, shape, impl, planner):
the µs of each run folder (bench-<label>/ or any folder holding *.jsonl) side by side. Session 19 (s19.sh); s18.sh
had it inline.

Usage: python3 ci/device/bench_rows.py R > R/bench.txt
"""
import glob
import json
import os
import sys

tab = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.jsonl"))):
    run = os.path.basename(os.path.dirname(f))
    for line in open(f):
        r = json.loads(line) if line.startswith("{") else {}
        if "us" in r:
            key = (r.get("case", ""), str(r.get("shape", "")), r.get("impl", ""), str(r.get("planner", "")))
            tab.setdefault(key, {})[run] = r["us"]
for k in sorted(tab):
    print(" | ".join(k), "|", " ".join(f"{run}={us}" for run, us in sorted(tab[k].items())))
