#!/usr/bin/env python3
"""An sdist of one package that builds on its own, outside the monorepo.

    python tools/sdist.py norm [--out dist]        # -> dist/mlops_norm-0.1.0.tar.gz (prints its path)

    from sdist import make_sdist; make_sdist("norm", out_dir) -> pathlib.Path

In the tree a package finds the shared CMake code at ../../cmake and the common headers at
../../packages/common/include. An sdist carries both inside it: the package is staged in a temp dir
as <stage>/ (its files, without build outputs), <stage>/cmake/ (the repo's cmake/) and
<stage>/common/include/ (packages/common/include); each package's CMakeLists.txt falls back to
./cmake when ../../cmake is absent, and cmake/mlops.cmake to ../common/include. The sdist itself
is written by scikit-build-core's build_sdist (the package's own build backend) run in the stage, so
the file list and PKG-INFO are what the backend would make.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import shutil
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
# build outputs and caches that never go into an sdist (the repo's .gitignore plus tool caches)
IGNORE = shutil.ignore_patterns("build", "dist", "__pycache__", ".pytest_cache", "*.so", "*.egg-info",
                                ".nox", "*.pyc")


@contextlib.contextmanager
def _cwd(path: pathlib.Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def stage(name: str, dest: pathlib.Path) -> pathlib.Path:
    """Copy packages/<name> plus cmake/ and packages/common/include into dest (a new dir)."""
    pkg = ROOT / "packages" / name
    if not (pkg / "pyproject.toml").is_file():
        raise SystemExit(f"no package {name!r}: {pkg}/pyproject.toml is missing")
    shutil.copytree(pkg, dest, ignore=IGNORE)
    if not (pkg / "CMakeLists.txt").is_file():
        return dest  # the meta package: no CMake, nothing shared to carry
    for extra in ("cmake", "common"):
        if (dest / extra).exists():
            raise SystemExit(f"packages/{name}/{extra} exists: it would shadow the shared {extra}/ in the sdist")
    shutil.copytree(ROOT / "cmake", dest / "cmake", ignore=shutil.ignore_patterns("tests", "__pycache__"))
    shutil.copytree(ROOT / "packages" / "common" / "include", dest / "common" / "include", ignore=IGNORE)
    return dest


def make_sdist(name: str, out_dir) -> pathlib.Path:
    """Build the sdist of packages/<name> into out_dir; return the .tar.gz path."""
    from scikit_build_core.build import build_sdist

    out_dir = pathlib.Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"mlops-sdist-{name}-") as tmp:
        src = stage(name, pathlib.Path(tmp) / name)
        with _cwd(src):
            fname = build_sdist(str(out_dir))
    path = out_dir / fname
    # the point of this tool: check that the shared files made it in
    with tarfile.open(path) as t:
        names = t.getnames()
    top = names[0].split("/")[0]
    needs = ["pyproject.toml", "PKG-INFO"]
    if (ROOT / "packages" / name / "CMakeLists.txt").is_file():
        needs += ["CMakeLists.txt", "cmake/prelude.cmake", "cmake/mlops.cmake", "cmake/arch.cmake",
                  "common/include/mlops/common/status.h"]
    for need in needs:
        if f"{top}/{need}" not in names:
            raise RuntimeError(f"{path.name}: {need} is missing from the sdist")
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("package", help="a directory name under packages/ (norm, positional, ...)")
    ap.add_argument("--out", default=str(ROOT / "dist"), help="output directory (default dist/)")
    a = ap.parse_args(argv)
    print(make_sdist(a.package, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
