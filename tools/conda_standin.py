#!/usr/bin/env python3
"""A local STAND-IN for conda-forge: the build/host/test dependencies that recipes/*/recipe.yaml ask
for, made from PyPI wheels and this machine's compilers, so `nox -s conda` builds offline here.

    python tools/conda_standin.py <channel dir> [--python 3.11 ...] [--cuda 13.0 ...] [--wheels DIR]

NOT conda-forge packages, and not for shipping: they are only good on this machine kind (Debian 12
x86_64, glibc 2.36, pyenv interpreters under ~/.pyenv, toolkits of tools/cuda_toolkit.py). Where
conda-forge is reachable, build with `-c conda-forge` instead and this channel is not used. The
recipes do not know about it: they ask for conda-forge's names (what `compiler()` / `stdlib()`
render to on linux-64 with recipes/variants.yaml) and get these (../shared/notes/conda-offline.md 2.4):

  * python X.Y.Z `0_shim_cpXY`: pyvenv.cfg + bin/python* symlinks, so the prefix becomes a venv of
    pyenv's X.Y interpreter; run_exports python >=X.Y,<X.(Y+1).0a0
  * pip, scikit-build-core, nanobind, packaging, pathspec, pytest, pluggy, iniconfig, pygments, and
    tomli, exceptiongroup, typing-extensions (what the first ones require on Python < 3.11):
    noarch: python, the files of the PyPI wheel (pip download --no-deps); a Requires-Dist with a
    marker is a dependency when the marker holds for one of the channel's --python versions
  * gcc_linux-64, gxx_linux-64 12.2.0, sysroot_linux-64 2.36, cmake 3.25.1, ninja 1.11.1: empty; the
    machine's gcc 12.2, cmake and ninja stay on PATH in the build; sysroot run-exports __glibc >=2.36
  * cuda-nvcc_linux-64 X.Y: bin/nvcc, a wrapper that execs tools/cuda_toolkit.py's nvcc X.Y;
    run_exports strong cuda-version >=X.Y,<X+1.0a0
  * cuda-version X.Y: empty, constrains __cuda >=X (as conda-forge's)
  * cuda-cudart-dev, cuda-cudart-static X.Y: empty (the toolkit of nvcc has libcudart_static.a); the
    recipes link cudart statically and ignore their run_exports
  * pytorch (one Python): a .pth file naming a folder of symlinks to the torch, its dependencies and
    numpy of an interpreter (--torch-python; default the running one), pinned to that interpreter's
    X.Y (as tools/tests/test_distribution.py does for venvs)
  * mlops-test-extras: the same for what the packages' CPU tests import besides torch and pytest

Run it with an interpreter that has conda-package-handling and py-rattler installed (the nox
session's venv); --torch-python names one of the Python of the recipes' variant with torch and the
test pins (`nox -s conda -- --python 3.12` makes that venv). Files are written with placeholder-free
absolute paths of this machine.
"""
from __future__ import annotations

import argparse
import asyncio
import glob
import hashlib
import importlib.metadata as md
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

# PyPI wheels that become noarch: python packages (pinned; the packages' build deps match noxfile PINS)
WHEELS = {
    "pip": "pip==26.3",
    "scikit-build-core": "scikit-build-core==1.1.2",
    "nanobind": "nanobind==3.1.0",
    "packaging": "packaging==26.4",
    "pathspec": "pathspec==1.1.1",
    "pytest": "pytest==9.2.0",
    "pluggy": "pluggy==1.7.0",
    "iniconfig": "iniconfig==2.3.1",
    "pygments": "pygments==2.21.0",
    # Requires-Dist of scikit-build-core / pytest / exceptiongroup with python_version < '3.11' (/ '3.13')
    "tomli": "tomli==2.5.0",
    "exceptiongroup": "exceptiongroup==1.3.2",
    "typing-extensions": "typing-extensions==4.16.0",
}
EMPTY = [
    # name, version, subdir, depends, run_exports, constrains
    ("gcc_linux-64", "12.2.0", "linux-64", [], {}, []),
    ("gxx_linux-64", "12.2.0", "linux-64", ["gcc_linux-64 12.2.0"], {}, []),
    ("sysroot_linux-64", "2.36", "noarch", [], {"strong": ["__glibc >=2.36,<3.0.a0"]}, []),
    ("cmake", "3.25.1", "linux-64", [], {}, []),
    ("ninja", "1.11.1", "linux-64", [], {}, []),
]
# test-only imports of packages/*/tests (noxfile PINS["test"]); linked from the running interpreter
TEST_EXTRAS = ["transformers", "torchao", "pkgconf", "nvidia-cuda-nvrtc"]
CUDA_FULL = {"13.0": "13.0.88", "12.4": "12.4.131"}
STAMP = int(time.time() * 1000)


def _sha(p: pathlib.Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def make_package(channel: pathlib.Path, name, version, build, subdir, files=None, depends=(), constrains=(),
                 run_exports=None, noarch=None, symlinks=None):
    """Stage files ({rel path: bytes}) and symlinks ({rel path: target}), write info/, pack a .conda."""
    import conda_package_handling.api as cph

    with tempfile.TemporaryDirectory() as tmp:
        stage = pathlib.Path(tmp)
        paths = []
        for rel, data in (files or {}).items():
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            if rel.startswith("bin/") or rel.endswith(".sh"):
                p.chmod(0o755)
            paths.append({"_path": rel, "path_type": "hardlink", "sha256": _sha(p), "size_in_bytes": p.stat().st_size})
        for rel, target in (symlinks or {}).items():
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.symlink_to(target)
            paths.append({"_path": rel, "path_type": "softlink", "sha256": hashlib.sha256(b"").hexdigest(),
                          "size_in_bytes": 0})
        info = stage / "info"
        info.mkdir()
        index = {"name": name, "version": version, "build": build, "build_number": 0, "depends": list(depends),
                 "constrains": list(constrains), "license": "stand-in (see tools/conda_standin.py)",
                 "subdir": subdir, "timestamp": STAMP,
                 "arch": None if subdir == "noarch" else "x86_64", "platform": None if subdir == "noarch" else "linux"}
        noarch = noarch or ("generic" if subdir == "noarch" else None)
        if noarch:
            index["noarch"] = noarch
        (info / "index.json").write_text(json.dumps(index, indent=1))
        (info / "paths.json").write_text(json.dumps({"paths_version": 1, "paths": paths}, indent=1))
        (info / "files").write_text("".join(p["_path"] + "\n" for p in paths))
        (info / "about.json").write_text(json.dumps({"summary": f"LOCAL STAND-IN for conda-forge's {name} "
                                                     "(tools/conda_standin.py); only for this machine kind"}))
        if run_exports:
            (info / "run_exports.json").write_text(json.dumps(run_exports))
        if noarch == "python":
            (info / "link.json").write_text(json.dumps({"noarch": {"type": "python"}, "package_metadata_version": 1}))
        file_list = [str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file() or p.is_symlink()]
        out = (channel / subdir).resolve()
        out.mkdir(parents=True, exist_ok=True)
        fn = f"{name}-{version}-{build}.conda"
        (out / fn).unlink(missing_ok=True)
        cph.create(str(stage), file_list, fn, out_folder=str(out))
        return out / fn


def python_shim(channel, ver: str):
    exe = pathlib.Path(os.path.expanduser(f"~/.pyenv/versions/{ver}*/bin/python{ver}"))
    (exe,) = sorted(glob.glob(str(exe)))[-1:]
    full = pathlib.Path(exe).parents[1].name  # e.g. 3.11.7
    tag = ver.replace(".", "")
    cfg = f"home = {pathlib.Path(exe).parent}\ninclude-system-site-packages = false\nversion = {full}\n"
    make_package(channel, "python", full, f"0_shim_cp{tag}", "linux-64",
                 files={"pyvenv.cfg": cfg.encode(), f"lib/python{ver}/site-packages/.keep": b""},
                 symlinks={f"bin/python{ver}": exe, "bin/python3": f"python{ver}", "bin/python": f"python{ver}"},
                 run_exports={"weak": [python_pin(ver)]})


def wheel_requires(meta: str, pythons) -> list:
    """The conda depends of a wheel's METADATA: each Requires-Dist without a marker, and each one with a
    marker (python_version < '3.11', sys_platform == 'win32', extra == 'test', ...) that holds on linux
    for one of the Python X.Y in pythons (a noarch package serves every python shim of the channel)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:
        from pip._vendor.packaging.requirements import Requirement

    out = []
    for line in meta.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        if req.marker is not None and not any(
                req.marker.evaluate({"python_version": v, "python_full_version": f"{v}.0", "sys_platform": "linux",
                                     "platform_system": "Linux", "os_name": "posix", "extra": ""})
                for v in pythons):
            continue
        out.append(f"{req.name.lower().replace('_', '-')} {req.specifier}".strip())
    return out


def wheel_package(channel, whl: pathlib.Path, pythons=()):
    files, requires = {}, []
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if n.endswith("/"):
                continue
            if ".data/" in n.split("/")[0] + "/":
                continue  # scripts/headers of .data: none of these wheels needs them
            files["site-packages/" + n] = z.read(n)
            if n.endswith(".dist-info/METADATA"):
                meta = z.read(n).decode()
                name = next(line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Name:"))
                version = next(line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Version:"))
                requires = wheel_requires(meta, pythons)
    name = name.lower().replace("_", "-").replace(".", "-")
    make_package(channel, name, version, "pyh_standin_0", "noarch", files=files,
                 depends=["python >=3.9", *requires], noarch="python")


def closure(roots, exclude=()) -> list:
    """The distributions roots require, recursively (markers evaluated here), installed ones only."""
    try:
        from packaging.requirements import Requirement
    except ImportError:
        from pip._vendor.packaging.requirements import Requirement

    seen, todo, out = set(exclude), list(roots), []
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        out.append(dist)
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return out


def python_pin(ver: str) -> str:
    """python's run_exports for X.Y: python >=X.Y,<X.(Y+1).0a0"""
    major, minor = ver.split(".")[:2]
    return f"python >={major}.{minor},<{major}.{int(minor) + 1}.0a0"


def env_report(roots, exclude=()) -> dict:
    """This interpreter's X.Y and the distributions roots require (closure): name, version and the
    absolute paths of their top-level entries in site-packages. Run inside the interpreter whose
    packages the stand-in links (dists_of)."""
    dists = []
    for dist in closure(roots, exclude):
        tops = sorted({f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] not in ("..", "__pycache__")})
        dists.append({"name": dist.metadata["Name"], "version": dist.version,
                      "tops": [str(pathlib.Path(dist.locate_file(t))) for t in tops]})
    return {"python": f"{sys.version_info.major}.{sys.version_info.minor}", "dists": dists}


def dists_of(python: str, roots, exclude=()) -> dict:
    """env_report(roots, exclude) of another interpreter (this file run there with --report)."""
    p = subprocess.run([python, __file__, "--report", json.dumps({"roots": list(roots), "exclude": list(exclude)})],
                       check=True, capture_output=True, text=True)
    return json.loads(p.stdout)


def _link_dists(dists, site_dir: pathlib.Path):
    shutil.rmtree(site_dir, ignore_errors=True)
    site_dir.mkdir(parents=True)
    for dist in dists:
        for top in dist["tops"]:
            src = pathlib.Path(top)
            if src.exists() and not (site_dir / src.name).exists():
                (site_dir / src.name).symlink_to(src)


def pytorch_standin(channel, site_dir: pathlib.Path, python: str | None = None) -> str:
    """pytorch (+ numpy) of the interpreter `python` (default: the running one), pinned to its X.Y;
    and mlops-test-extras: what the packages' CPU tests import besides torch and pytest (transformers,
    torchao, pkgconf, nvrtc), if installed there. Returns that X.Y."""
    rep = dists_of(python or sys.executable, ["torch", "numpy"])
    ver, torch_dists = rep["python"], rep["dists"]
    pin = python_pin(ver)
    _link_dists(torch_dists, site_dir)
    full = next(d["version"] for d in torch_dists if d["name"].lower() == "torch")
    tv = full.split("+")[0]
    kind = "cpu_" if full.endswith("+cpu") else ""
    make_package(channel, "pytorch", tv, f"{kind}standin_py{ver.replace('.', '')}_0", "linux-64",
                 files={f"lib/python{ver}/site-packages/pytorch-standin.pth": f"{site_dir}\n".encode()},
                 depends=[pin])
    extras_dir = site_dir.with_name(site_dir.name + "-test-extras")
    names = {d["name"].lower() for d in torch_dists} | {"pytest", "pluggy", "iniconfig", "pygments", "packaging"}
    _link_dists(dists_of(python or sys.executable, TEST_EXTRAS, exclude=names)["dists"], extras_dir)
    make_package(channel, "mlops-test-extras", "0", f"standin_py{ver.replace('.', '')}_0", "linux-64",
                 files={f"lib/python{ver}/site-packages/mlops-test-extras.pth": f"{extras_dir}\n".encode()},
                 depends=[pin, "pytorch", "pytest"])
    return ver


def cuda_packages(channel, cuda: str):
    import cuda_toolkit

    nvcc = cuda_toolkit.provide(cuda)
    major = int(cuda.split(".")[0])
    full = CUDA_FULL.get(cuda, cuda)
    pin = f"cuda-version >={cuda},<{major + 1}.0a0"
    wrapper = (f"#!/bin/sh\n# stand-in for conda-forge cuda-nvcc: the toolkit of tools/cuda_toolkit.py {cuda}\n"
               f'exec "{nvcc}" "$@"\n')
    make_package(channel, "cuda-version", cuda, "standin_0", "noarch", constrains=[f"__cuda >={major}"])
    make_package(channel, "cuda-nvcc_linux-64", full, f"standin_cuda{cuda.replace('.', '')}_0", "noarch",
                 files={"bin/nvcc": wrapper.encode()}, depends=[f"cuda-version {cuda}.*"],
                 run_exports={"strong": [pin]})
    for n in ("cuda-cudart-static", "cuda-cudart-dev"):
        make_package(channel, n, full, f"standin_cuda{cuda.replace('.', '')}_0", "linux-64",
                     depends=[f"cuda-version {cuda}.*"],
                     run_exports={"weak": [f"cuda-cudart >={full},<{major + 1}.0a0"]} if n == "cuda-cudart-dev" else {})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("channel", type=pathlib.Path)
    ap.add_argument("--python", action="append", help="X.Y of the python shims (default: the running one)")
    ap.add_argument("--cuda", action="append", help="toolkits of cuda-nvcc stand-ins (default 13.0)")
    ap.add_argument("--torch-python", help="an interpreter with torch (and the test pins) of one of the --python "
                    "versions: the pytorch stand-in links its packages (default: the running interpreter)")
    ap.add_argument("--wheels", type=pathlib.Path, default=pathlib.Path.home() / ".cache/mlops/conda-standin/wheels")
    a = ap.parse_args(argv)
    channel = a.channel.resolve()
    shutil.rmtree(channel, ignore_errors=True)
    t0 = time.time()
    shims = a.python or [f"{sys.version_info.major}.{sys.version_info.minor}"]
    for ver in shims:
        python_shim(channel, ver)
    a.wheels.mkdir(parents=True, exist_ok=True)
    missing = [spec for spec in WHEELS.values() if not list(a.wheels.glob(spec.split("==")[0].replace("-", "_") + "-"
                                                                           + spec.split("==")[1] + "-*.whl"))]
    if missing:  # the one step that needs PyPI; later runs are offline
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(a.wheels), *missing], check=True)
    for spec in WHEELS.values():
        n, v = spec.split("==")
        (whl,) = a.wheels.glob(f"{n.replace('-', '_')}-{v}-*.whl")
        wheel_package(channel, whl, shims)
    for args in EMPTY:
        name, version, subdir, depends, run_exports, constrains = args
        make_package(channel, name, version, "standin_0", subdir, depends=depends, run_exports=run_exports,
                     constrains=constrains, noarch="generic" if subdir == "noarch" else None)
    for cuda in a.cuda or ["13.0"]:
        cuda_packages(channel, cuda)
    ver = pytorch_standin(channel, channel.parent / (channel.name + "-torch-site"), a.torch_python)
    if ver not in shims:
        sys.exit(f"--torch-python is a Python {ver}, the python shims are {shims}: no pytorch for them")
    from rattler.index import index_fs

    asyncio.run(index_fs(channel, write_zst=False, write_shards=False, force=True))
    n = len(list(channel.glob("*/*.conda")))
    print(f"stand-in channel {channel}: {n} packages in {time.time() - t0:.1f} s", flush=True)
    os._exit(0)  # py-rattler 0.28 may crash at interpreter teardown (conda-offline.md 3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--report"]:  # dists_of: run in the interpreter whose packages are linked
        print(json.dumps(env_report(**json.loads(sys.argv[2]))))
    else:
        main()
