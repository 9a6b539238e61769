"""Every mlops workflow. `nox -l` lists them; README.md shows the two a new user needs.

Sessions provide their own CUDA toolkit (tools/cuda_toolkit.py: 13.x from PyPI, 12.4 from
Debian's nvidia-cuda-toolkit + PyPI cu12 wheels), so a machine with only Python can build.
Pins live in PINS below and in tools/cuda_toolkit.py (toolkits), nowhere else.
"""

from __future__ import annotations

import glob
import os
import pathlib
import shutil
import sys

import nox

ROOT = pathlib.Path(__file__).parent.resolve()
sys.path.insert(0, str(ROOT / "tools"))

nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True  # a skipped session must not look like a pass
# Interpreters pyenv keeps (this machine kind has 3.10 ... 3.13 there) are found without activation.
for _bin in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin"))):
    if _bin not in os.environ.get("PATH", ""):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _bin
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

PINS = {
    # torch 2.13.0 is the CPU build this machine kind keeps on disk for Python 3.11; CPU CI uses it.
    "torch": {"2.13": "torch==2.13.0", "2.11": "torch==2.11.0", "2.9": "torch==2.9.1"},
    "build": ["scikit-build-core==1.1.2", "nanobind==3.1.0", "cmake==4.4.5", "ninja==1.13.2"],
    "test": ["pytest==9.2.0", "numpy", "transformers==5.24.0", "torchao==0.18.0", "pkgconf==3.0.7.post0",
             # NVRTC compiles mlops-positional's rope.cuh in the CPU suite (no GPU needed to compile)
             "nvidia-cuda-nvrtc==13.0.88"],
    "lint": ["ruff==0.17.6", "clang-format==23.1.5"],
}
DEFAULT_TORCH = "2.13"
DEFAULT_CUDA = "13.0"
# What the CPU suite builds: one arch is enough to run the host emulation (2 cores: keep it short).
CI_ARCHS = "90-real"


def packages() -> list[str]:
    """Every package with a pyproject.toml under packages/ (common is headers only), dependency order.
    Not the meta package packages/mlops (no code, no CUDA): the build session makes its wheel."""
    order = ["norm", "positional", "vocab", "attention", "optimizers"]
    found = [p.parent.name for p in sorted((ROOT / "packages").glob("*/pyproject.toml")) if p.parent.name != "mlops"]
    return [p for p in order if p in found] + [p for p in found if p not in order]


def _opts(session, **defaults):
    """--key value options after `--`."""
    out = dict(defaults)
    args = list(session.posargs)
    while args:
        a = args.pop(0)
        if a.startswith("--") and args:
            out[a[2:].replace("-", "_")] = args.pop(0)
        else:
            session.error(f"unexpected argument {a!r}; options are {sorted(defaults)}")
    return out


def _toolkit(session, cuda: str) -> pathlib.Path:
    import cuda_toolkit

    nvcc = cuda_toolkit.provide(cuda)
    session.log(f"CUDA {cuda}: {nvcc}")
    return nvcc


def _build_wheels(session, names, cuda, archs, outdir: pathlib.Path):
    nvcc = _toolkit(session, cuda)
    outdir.mkdir(parents=True, exist_ok=True)
    for name in names:
        env = {
            "CUDACXX": str(nvcc),
            "MLOPS_CUDA_ARCHS": archs,
            # one build dir per toolkit and arch set: a reused CMakeCache keeps the old nvcc (toolchains.md 2.4)
            "SKBUILD_BUILD_DIR": str(ROOT / "build" / f"{name}-cu{cuda}-{archs.replace(';', '_')}-py{session.python or 'x'}"),
            "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
        }
        session.run("python", "-m", "pip", "wheel", str(ROOT / "packages" / name), "--no-build-isolation",
                    "--no-deps", "-w", str(outdir), env=env)


@nox.session(python="3.11")
def tests(session):
    """The CPU suite (what CI runs): builds every package for one arch, then pytest: host emulations
    against independent references, API validation, the C API and C/CMake consumers, arch.cmake."""
    o = _opts(session, cuda=DEFAULT_CUDA, torch=DEFAULT_TORCH)
    session.install(PINS["torch"][o["torch"]])
    session.install(*PINS["build"], *PINS["test"])
    dist = ROOT / "build" / "ci-dist"
    shutil.rmtree(dist, ignore_errors=True)
    _build_wheels(session, packages(), o["cuda"], CI_ARCHS, dist)
    session.install("--no-deps", "--force-reinstall", *glob.glob(str(dist / "*.whl")))
    # MLOPS_TEST_DIST: tools/tests/test_distribution.py installs the meta package from these wheels
    env = {"MLOPS_TEST_CUDA": o["cuda"], "MLOPS_TEST_DIST": str(dist)}
    session.run("python", "-m", "pytest", "-q", *[f"packages/{p}/tests" for p in packages()],
                "cmake/tests", "tools/tests", env=env)


@nox.session(python="3.11")
def demo(session):
    """Set up and run samples/demo.py: builds the packages (for this GPU if there is one, else one
    arch and the CPU path), installs them with torch, runs the demo."""
    o = _opts(session, cuda=DEFAULT_CUDA, torch=DEFAULT_TORCH)
    session.install(PINS["torch"][o["torch"]], "numpy", *PINS["build"])
    has_gpu = shutil.which("nvidia-smi") is not None
    dist = ROOT / "build" / "demo-dist"
    shutil.rmtree(dist, ignore_errors=True)
    _build_wheels(session, packages(), o["cuda"], "native" if has_gpu else CI_ARCHS, dist)
    session.install("--no-deps", "--force-reinstall", *glob.glob(str(dist / "*.whl")))
    session.run("python", str(ROOT / "samples" / "demo.py"))


@nox.session(python="3.11")
def build(session):
    """Wheels into dist/: nox -s build -- --cuda 13.0 --torch 2.13 --package norm|mlops|all [--archs all].
    `all` includes the meta package mlops (a pure-Python wheel; --package mlops builds only it)."""
    o = _opts(session, cuda=DEFAULT_CUDA, torch=DEFAULT_TORCH, package="all", archs="all", python="")
    names = packages() if o["package"] == "all" else [] if o["package"] == "mlops" else [o["package"]]
    session.install(PINS["torch"][o["torch"]], *PINS["build"])
    if names:
        _build_wheels(session, names, o["cuda"], o["archs"], ROOT / "dist")
    if o["package"] in ("all", "mlops"):
        session.run("python", "-m", "pip", "wheel", str(ROOT / "packages" / "mlops"), "--no-build-isolation",
                    "--no-deps", "-w", str(ROOT / "dist"))


@nox.session(python="3.11")
def sdist(session):
    """Self-contained sdists into dist/ (tools/sdist.py): nox -s sdist -- --package norm|mlops|all [--out DIR].
    Each carries the shared cmake/ and packages/common/include inside it."""
    o = _opts(session, package="all", out=str(ROOT / "dist"))
    names = [*packages(), "mlops"] if o["package"] == "all" else [o["package"]]
    session.install(PINS["build"][0])  # scikit-build-core: the packages' own build backend
    for name in names:
        session.run("python", str(ROOT / "tools" / "sdist.py"), name, "--out", o["out"])


@nox.session(python="3.11")
def c_archive(session):
    """C archives (tools/c_archive.py): nox -s c_archive -- --package norm|all [--cuda 13.0] [--archs all]
    [--out dist] -> dist/mlops-<name>-<version>-linux-x86_64-cuda<major>.tar.xz (static library,
    headers, CMake package, pkg-config file, README.md)."""
    o = _opts(session, package="all", cuda=DEFAULT_CUDA, archs="all", out=str(ROOT / "dist"))
    names = packages() if o["package"] == "all" else [o["package"]]
    session.install(*[p for p in PINS["build"] if p.startswith(("cmake", "ninja"))])
    nvcc = _toolkit(session, o["cuda"])
    for name in names:
        session.run("python", str(ROOT / "tools" / "c_archive.py"), name, "--nvcc", str(nvcc),
                    "--archs", o["archs"], "--out", o["out"])


# The GPU suite runs every GPU test once per build: the local GPU's SASS, and PTX-only builds for
# compute_61 / 70 / 75 / 80 that the driver JIT-compiles, so each arch path (DP4A, mma shapes,
# cvt.rn.bf16x2 vs the integer rounding) runs on the one GPU at hand. 61 and 70 need nvcc 12.x.
GPU_BUILDS = {
    "sm90": ("13.0", "90-real"),
    "c80": ("13.0", "80-virtual"),
    "c75": ("13.0", "75-virtual"),
    "c70": ("12.4", "70-virtual"),
    "c61": ("12.4", "61-virtual"),
}


@nox.session(python="3.12")
def gpu_build(session):
    """Wheels of every GPU_BUILDS entry for Python 3.12 (the GPU machine's), into .carry/gpu/<tag>/:
    nox -s gpu_build [-- --tags sm90,c61]. Build here, run there with ci/gpu_tests.py."""
    o = _opts(session, tags=",".join(GPU_BUILDS), package="all")
    names = packages() if o["package"] == "all" else o["package"].split(",")
    session.install(*PINS["build"])
    for tag in o["tags"].split(","):
        cuda, archs = GPU_BUILDS[tag]
        out = ROOT / ".carry" / "gpu" / tag
        shutil.rmtree(out, ignore_errors=True)
        _build_wheels(session, names, cuda, archs, out)


@nox.session(venv_backend="none")
def gpu_tests(session):
    """On a GPU machine, with the Python that has torch: every GPU test under each build of .carry/gpu
    (nox -s gpu_build), or under a local build for this GPU when there is none."""
    session.run(sys.executable, str(ROOT / "ci" / "gpu_tests.py"), *session.posargs)


@nox.session(venv_backend="none")
def bench(session):
    """On a GPU machine: every package's bench/ side by side with its peers; JSON lines to bench/results/."""
    session.run(sys.executable, str(ROOT / "ci" / "bench.py"), *session.posargs)


@nox.session(python="3.11")
def lint(session):
    """ruff on Python (ruff.toml; fails on findings), clang-format on C/C++/CUDA (.clang-format;
    reports only, until the pending reformat of the first packages lands)."""
    session.install(*PINS["lint"])
    session.run("ruff", "check", "noxfile.py", "tools", "ci", "packages")
    files = [str(p) for ext in ("*.h", "*.cuh", "*.cu", "*.cpp", "*.c") for p in ROOT.glob(f"packages/**/{ext}")]
    session.run("clang-format", "--dry-run", *files, silent=True, success_codes=[0, 1])
