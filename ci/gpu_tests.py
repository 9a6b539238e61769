#!/usr/bin/env python3
"""The GPU suite, on a machine with a GPU and the Python that has torch (no network needed).

    python ci/gpu_tests.py [--wheels .carry/gpu] [--tags sm90,c80,c75,c70,c61] [--sanitizer] [--out DIR]

With --wheels, each <tag>/ folder there (made by `nox -s gpu_build` on any machine) holds the
packages built for one target: sm90 (SASS) or c80/c75/c70/c61 (PTX only, JIT-compiled by the
driver, so the arch paths below sm_90 run on this GPU). Each is installed into its own folder
and every GPU test file runs against it; the sm90 build also runs the whole suite (the C API
tests build the C library with this machine's nvcc) and, with --sanitizer, each package's
test_*_gpu.py -k sanitizer_subset under compute-sanitizer memcheck and racecheck.
Without --wheels the packages are built here for this GPU (MLOPS_CUDA_ARCHS=native).
Exit status: non-zero if any run failed. A summary table is printed last.
"""

from __future__ import annotations

import argparse
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def sh(cmd, env=None, log=None) -> int:
    print("+", " ".join(map(str, cmd)), flush=True)
    t0 = time.time()
    with open(log, "a", buffering=1) if log else open(os.devnull, "w") as lf:  # line-buffered: a killed run keeps its log
        p = subprocess.Popen([str(c) for c in cmd], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        tail = []
        for line in p.stdout:
            lf.write(line)
            lf.flush()
            tail.append(line)
            tail = tail[-15:]
        rc = p.wait()
    print("".join(tail[-6:]), f"(rc={rc}, {time.time() - t0:.0f} s)", flush=True)
    return rc


def install(wheels: list[str], target: pathlib.Path):
    shutil.rmtree(target, ignore_errors=True)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                           "--target", str(target), *wheels])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheels", default="")
    ap.add_argument("--tags", default="sm90,c80,c75,c70,c61")
    ap.add_argument("--sanitizer", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "build" / "gpu-logs")))
    ap.add_argument("--only", default="", help="pytest -k expression for every run")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    pkgs = sorted(p.parent.name for p in (ROOT / "packages").glob("*/pyproject.toml"))
    gpu_files = [str(f) for p in pkgs for f in sorted((ROOT / "packages" / p / "tests").glob(f"test_{p}_gpu*.py"))]
    results = []
    base_env = dict(os.environ, PYTHONUNBUFFERED="1", MLOPS_TEST_CUDA="system")
    kexpr = ["-k", a.only] if a.only else []

    if not a.wheels:
        tmp = ROOT / "build" / "gpu-native"
        wheels = []
        for p in pkgs:
            subprocess.check_call([sys.executable, "-m", "pip", "wheel", str(ROOT / "packages" / p), "--no-build-isolation",
                                   "--no-deps", "-w", str(tmp / "dist")],
                                  env=dict(base_env, MLOPS_CUDA_ARCHS="native", SKBUILD_BUILD_DIR=str(tmp / p)))
        builds = {"native": sorted(glob.glob(str(tmp / "dist" / "*.whl")))}
    else:
        builds = {t: sorted(glob.glob(os.path.join(a.wheels, t, "*.whl"))) for t in a.tags.split(",")}

    for tag, wheels in builds.items():
        if not wheels:
            results.append((tag, "no wheels", 1))
            continue
        # the packages this build holds (a partial gpu_build tests only what it built)
        built = [p for p in pkgs if any(os.path.basename(w).startswith(f"mlops_{p}-") for w in wheels)]
        gpu_files = [str(f) for p in built for f in sorted((ROOT / "packages" / p / "tests").glob(f"test_{p}_gpu*.py"))]
        target = pathlib.Path("/tmp") / f"mlops-{tag}"
        install(wheels, target)
        env = dict(base_env, PYTHONPATH=f"{target}:{ROOT / 'tools' / 'testing'}", MLOPS_ARCH_TAG=tag)
        full = tag in ("sm90", "native")
        # one pytest run a package, one line a test (-v): a run cut short by a time limit still
        # leaves every finished test in its log
        for p in built:
            files = [f"packages/{p}/tests"] if full else [f for f in gpu_files if f"/packages/{p}/" in f]
            if not files:
                continue
            rc = sh([sys.executable, "-m", "pytest", "-v", "--tb=short", "-p", "no:cacheprovider", *kexpr, *files],
                    env=env, log=out / f"pytest-{tag}-{p}.log")
            results.append((tag, f"pytest {p} " + ("all" if full else "gpu files"), rc))
        if full and a.sanitizer:
            for tool in ("memcheck", "racecheck"):
                rc = sh(["compute-sanitizer", "--tool", tool, "--error-exitcode", "9", sys.executable, "-m", "pytest",
                         "-q", "-p", "no:cacheprovider", "-k", "sanitizer_subset", *gpu_files],
                        env=env, log=out / f"sanitizer-{tool}.log")
                results.append((tag, f"compute-sanitizer {tool}", rc))
    print("\n== GPU suite ==")
    for tag, what, rc in results:
        print(f"{tag:8s} {what:32s} {'ok' if rc == 0 else f'FAILED (rc={rc})'}")
    return 0 if all(rc == 0 for _, _, rc in results) else 1


if __name__ == "__main__":
    sys.exit(main())
