#!/usr/bin/env python3
"""Check that a wheel built with MLOPS_CUDA_ARCHS=all carries the package's whole arch list.

    python tools/wheel_archs.py dist/mlops_norm-0.1.0+cu124-cp311-cp311-manylinux_2_34_x86_64.whl --nvcc NVCC
        -> exit 1 and what is missing / extra, unless every .so holds exactly the expected SASS + PTX

    from wheel_archs import expected_all, check_all

What `all` must give (cmake/arch.cmake, mlops_resolve_archs): SASS for every arch of the mlops list
(MLOPS_CUDA_ARCH_LIST in cmake/arch.cmake) that the nvcc supports (`nvcc --list-gpu-arch`) and that
is >= the package's MIN_ARCH (its CMakeLists.txt), plus PTX of the highest of them. E.g. CUDA 12.4:
sm_50 ... sm_90 (14) + compute_90; CUDA 13.x: sm_75, 80, 86, 87, 89, 90 + compute_90; attention
(MIN_ARCH 61) with 12.4: sm_61 ... sm_90 (10) + compute_90. The expectation is computed here from
the same three sources independently of CMake, and the .so is read by tools/sass_list.py, so a
wheel that lost an arch (a CMake change, a wrong MLOPS_CUDA_ARCHS, a stale build dir of another
toolkit) fails `nox -s build` / `nox -s release` instead of shipping.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import sass_list  # noqa: E402


def mlops_arch_list(repo: pathlib.Path = ROOT) -> list[int]:
    text = (repo / "cmake" / "arch.cmake").read_text()
    m = re.search(r"MLOPS_CUDA_ARCH_LIST\s+([0-9 ]+)\)", text)
    if not m:
        raise ValueError("cmake/arch.cmake: no MLOPS_CUDA_ARCH_LIST")
    return [int(x) for x in m.group(1).split()]


def min_arch(name: str, repo: pathlib.Path = ROOT) -> int:
    text = (repo / "packages" / name / "CMakeLists.txt").read_text()
    found = {int(x) for x in re.findall(r"^\s*MIN_ARCH\s+(\d+)", text, re.M)}
    if len(found) != 1:
        raise ValueError(f"packages/{name}/CMakeLists.txt: want one MIN_ARCH, found {sorted(found)}")
    return found.pop()


def nvcc_archs(nvcc) -> list[int]:
    """The compute_NN numbers `nvcc --list-gpu-arch` prints (90a folds into 90), as arch.cmake reads them."""
    out = subprocess.run([str(nvcc), "--list-gpu-arch"], check=True, capture_output=True, text=True).stdout
    return sorted({int(n) for n in re.findall(r"compute_(\d+)", out)})


def expected_all(name: str, nvcc, repo: pathlib.Path = ROOT) -> dict:
    supported, low = set(nvcc_archs(nvcc)), min_arch(name, repo)
    archs = [a for a in mlops_arch_list(repo) if a in supported and a >= low]
    if not archs:
        raise ValueError(f"{name}: no arch of the mlops list is >= {low} and supported by {nvcc}")
    return {"sass": [f"sm_{a}" for a in archs], "ptx": [f"compute_{archs[-1]}"]}


def wheel_archs(whl) -> dict:
    """{member: {"sass": [...], "ptx": [...]}} for every .so in the wheel."""
    out = {}
    with zipfile.ZipFile(whl) as z, tempfile.TemporaryDirectory() as tmp:
        for n in z.namelist():
            if n.endswith(".so"):
                out[n] = sass_list.list_archs(z.extract(n, tmp))
    return out


def package_of(whl) -> str:
    """mlops_norm-0.1.0+cu130-... -> norm."""
    dist = pathlib.Path(whl).name.split("-")[0]
    if not dist.startswith("mlops_"):
        raise ValueError(f"{pathlib.Path(whl).name}: not an mlops package wheel")
    return dist[len("mlops_"):]


def check_all(whl, nvcc, repo: pathlib.Path = ROOT, name: str | None = None) -> dict:
    """Raise ValueError unless each GPU module of the wheel holds exactly expected_all(); return it."""
    name = name or package_of(whl)
    want = expected_all(name, nvcc, repo)
    got = {m: a for m, a in wheel_archs(whl).items() if a["sass"] or a["ptx"]}
    if not got:
        raise ValueError(f"{pathlib.Path(whl).name}: no .so with GPU code")
    bad = [f"{m}: missing {sorted(set(want['sass'] + want['ptx']) - set(a['sass'] + a['ptx']))}, "
           f"extra {sorted(set(a['sass'] + a['ptx']) - set(want['sass'] + want['ptx']))}"
           for m, a in got.items() if a != want]
    if bad:
        raise ValueError(f"{pathlib.Path(whl).name} (MLOPS_CUDA_ARCHS=all, {name}): " + "; ".join(bad))
    return want


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wheels", nargs="+", type=pathlib.Path)
    ap.add_argument("--nvcc", required=True, help="the nvcc the wheels were built with")
    a = ap.parse_args(argv)
    rc = 0
    for whl in a.wheels:
        try:
            want = check_all(whl, a.nvcc)
            print(f"{whl.name}: sass={','.join(want['sass'])} ptx={','.join(want['ptx'])} (the full list)")
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
