#!/usr/bin/env python3
"""Every package's bench/bench_<name>.py in turn (on a GPU machine), JSON lines to bench/results
(or $MLOPS_BENCH_OUT). python ci/bench.py [--packages norm,vocab] [-- extra args for each]."""

import argparse
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packages", default="")
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    pkgs = a.packages.split(",") if a.packages else sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
    rc = 0
    for p in pkgs:
        script = ROOT / "packages" / p / "bench" / f"bench_{p}.py"
        if script.exists():
            rc |= subprocess.call([sys.executable, str(script), *[x for x in a.rest if x != "--"]],
                                  env=dict(os.environ, PYTHONUNBUFFERED="1"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
