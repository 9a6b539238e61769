"""What a user of a release gets, checked end to end on the CPU (docs/distribution.md).

One norm build serves three checks, to keep CI short (2 cores):
  * the sdist (tools/sdist.py) unpacked alone in a temp dir builds a wheel with
    `pip wheel --no-build-isolation --no-deps`: the shared cmake/ and common headers travel inside;
  * that wheel is built for MLOPS_CUDA_ARCHS="75-real;90-real;90-virtual" and tools/sass_list.py
    must find exactly SASS sm_75 + sm_90 and PTX compute_90 in its .so;
  * tools/manylinux.py (auditwheel) retags that wheel manylinux_2_34 and grafts nothing: the module
    needs only glibc / libstdc++ / libgcc_s;
  * `pip install --no-index -f <dist> mlops-norm` (and `mlops`, the meta package) into a fresh venv,
    then an import smoke test there (rms_norm on a CPU tensor against a torch formula).
Plus the C archive (tools/c_archive.py, `nox -s c_archive`) of norm for one arch, unpacked and
consumed by the CMake and pkg-config samples (the checks of tools/testing/mlops_capi.py).

torch for the fresh venv comes from the running interpreter without a download: its distribution
and its dependencies' files are symlinked into one directory that a .pth file adds to the venv
(`--system-site-packages` would expose the *base* interpreter's site-packages, which under nox's
venv holds no torch, and the running venv's own site-packages would bring its mlops-* along).
The meta package needs wheels of all four packages: the three besides norm come from
$MLOPS_TEST_DIST (`nox -s tests` points it at its build/ci-dist); without it that test skips.
"""
from __future__ import annotations

import importlib.metadata as md
import os
import pathlib
import shutil
import sys
import tarfile
import tomllib
import zipfile

import pytest
from mlops_capi import CApiTests, run

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import c_archive  # noqa: E402
import cuda_toolkit  # noqa: E402
import manylinux  # noqa: E402
import sass_list  # noqa: E402
import sdist  # noqa: E402

CUDA = os.environ.get("MLOPS_TEST_CUDA", "13.0")
SASS_ARCHS = "75-real;90-real;90-virtual"
META_PACKAGES = ["norm", "positional", "vocab", "optimizers"]


def version_of(name: str) -> str:
    with open(REPO / "packages" / name / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


@pytest.fixture(scope="module")
def nvcc():
    return cuda_toolkit.provide(CUDA)


# --- sdist -> wheel (one build, SASS for two archs + PTX) ----------------------------------------
@pytest.fixture(scope="module")
def norm_sdist(tmp_path_factory):
    return sdist.make_sdist("norm", tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def norm_wheel(norm_sdist, nvcc, tmp_path_factory):
    """The norm sdist, unpacked away from the repo, built into a wheel."""
    work = tmp_path_factory.mktemp("sdist_build")
    with tarfile.open(norm_sdist) as t:
        t.extractall(work, filter="data")
    (src,) = [p for p in work.iterdir() if p.is_dir()]
    assert not (src.parent / "cmake").exists() and not (src / ".." / ".." / "cmake" / "mlops.cmake").exists()
    out = work / "wheels"
    env = dict(os.environ, CUDACXX=str(nvcc), MLOPS_CUDA_ARCHS=SASS_ARCHS,
               CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    env.pop("SKBUILD_BUILD_DIR", None)
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
         "-w", out, src], env=env, cwd=work)
    (whl,) = out.glob("mlops_norm-*.whl")
    return whl


def test_sdist_is_self_contained(norm_sdist):
    assert norm_sdist.name == f"mlops_norm-{version_of('norm')}.tar.gz"
    with tarfile.open(norm_sdist) as t:
        names = set(t.getnames())
    top = f"mlops_norm-{version_of('norm')}"
    for rel in ("cmake/mlops.cmake", "cmake/arch.cmake", "cmake/mlops.pc.in", "cmake/mlopsConfig.cmake.in",
                "common/include/mlops/common/status.h", "include/mlops/norm.h", "CMakeLists.txt",
                "pyproject.toml", "PKG-INFO", "python/mlops/norm/__init__.py"):
        assert f"{top}/{rel}" in names, rel
    # the shared files are byte copies of the repo's
    with tarfile.open(norm_sdist) as t:
        assert t.extractfile(f"{top}/cmake/mlops.cmake").read() == (REPO / "cmake/mlops.cmake").read_bytes()
    assert not [n for n in names if "/build/" in n or n.endswith(".so") or "__pycache__" in n]


def test_sdist_builds_wheel_with_module(norm_wheel):
    assert norm_wheel.name.startswith(f"mlops_norm-{version_of('norm')}-cp3")
    with zipfile.ZipFile(norm_wheel) as z:
        names = z.namelist()
    mods = [n for n in names if n.startswith("mlops/norm/_C") and n.endswith(".so")]
    assert len(mods) == 1, names
    assert "mlops/norm/__init__.py" in names


def test_wheel_sass(norm_wheel, tmp_path):
    with zipfile.ZipFile(norm_wheel) as z:
        (mod,) = [n for n in z.namelist() if n.startswith("mlops/norm/_C") and n.endswith(".so")]
        so = pathlib.Path(z.extract(mod, tmp_path))
    assert sass_list.list_archs(so) == {"sass": ["sm_75", "sm_90"], "ptx": ["compute_90"]}


# the NEEDED a self-contained module may have: glibc, libstdc++, libgcc_s (cudart static, driver dlopen'ed)
SYSTEM_LIBS = {"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2"}


def test_wheel_manylinux(norm_wheel, tmp_path):
    """What `nox -s build` does to each wheel: auditwheel retags it manylinux_2_34, grafts nothing."""
    pytest.importorskip("auditwheel")  # PINS["manylinux"], installed by `nox -s tests`
    out = manylinux.repair(norm_wheel, tmp_path)
    assert out.name == norm_wheel.name.replace("-linux_x86_64.whl", f"-{manylinux.PLAT}.whl")
    (libs,) = manylinux.wheel_needed(out).values()
    assert set(libs) <= SYSTEM_LIBS, libs
    with zipfile.ZipFile(norm_wheel) as a, zipfile.ZipFile(out) as b:
        (mod,) = [n for n in a.namelist() if n.startswith("mlops/norm/_C") and n.endswith(".so")]
        assert a.read(mod) == b.read(mod), "nothing to patch: the module must come through unchanged"
        # the same files (auditwheel adds directory entries such as "mlops/", which hold nothing)
        assert sorted(n for n in a.namelist() if not n.endswith("/")) == sorted(n for n in b.namelist() if not n.endswith("/"))


# --- fresh venv, install from a directory, never an index ------------------------------------------
def _torch_closure() -> list:
    """torch and every distribution it requires (markers evaluated here), installed ones only."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover
        from pip._vendor.packaging.requirements import Requirement
    seen, todo, out = set(), ["torch"], []
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # an optional dependency this environment lacks: torch imports without it
        out.append(dist)
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return out


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A new venv (pip, no mlops) that sees this interpreter's torch and its dependencies only."""
    tmp = tmp_path_factory.mktemp("venv")
    venv, torch_site = tmp / "venv", tmp / "torch-site"
    run([sys.executable, "-m", "venv", venv])
    torch_site.mkdir()
    closure = _torch_closure()
    closure_names = {d.metadata["Name"].lower() for d in closure}
    for dist in closure:
        for top in {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".."}:
            src = pathlib.Path(dist.locate_file(top))
            if src.exists() and not (torch_site / top).exists():
                (torch_site / top).symlink_to(src)
    py = venv / "bin" / "python"
    # the venv's own copies (ensurepip's setuptools) would shadow the .pth dir's: drop them
    own = {d.metadata["Name"].lower() for d in md.distributions(path=[str(p) for p in venv.glob("lib/python*/site-packages")])}
    shadowed = sorted(own & set(closure_names) - {"pip"})
    if shadowed:
        run([py, "-m", "pip", "uninstall", "-y", "-q", *shadowed])
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    pathlib.Path(site, "torch-from-test-interpreter.pth").write_text(f"{torch_site}\n")
    out = run([py, "-c", "import importlib.util as u, torch; print(u.find_spec('mlops') is None, torch.__version__)"])
    assert out.split()[0] == "True", "the fresh venv must not see an mlops already"
    return py


SMOKE = r"""
import sys, torch, mlops.norm
assert mlops.norm.__file__.startswith(sys.prefix), mlops.norm.__file__
x = torch.randn(3, 256, generator=torch.Generator().manual_seed(0))
w = torch.rand(256, generator=torch.Generator().manual_seed(1)) + 0.5
y = mlops.norm.rms_norm(x, w)
ref = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()).float()
assert y.shape == x.shape and y.dtype == torch.float32
err = (y - ref).abs().max().item()
assert err < 1e-5, err
print("smoke ok", err)
"""


def _pip_install(py, dist, *names):
    # --no-index: only the directory; the venv's pip sees torch through the .pth
    return run([py, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "-f", dist, *names])


def test_fresh_venv_install_norm(fresh_venv, norm_wheel, tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    shutil.copy(norm_wheel, dist)
    out = _pip_install(fresh_venv, dist, "mlops-norm")
    assert f"Successfully installed mlops-norm-{version_of('norm')}" in out
    assert run([fresh_venv, "-c", SMOKE]).startswith("smoke ok")


def test_meta_pins_match_packages():
    with open(REPO / "packages" / "mlops" / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    assert deps == [f"mlops-{n}~={version_of(n)}" for n in META_PACKAGES]
    assert (REPO / "packages" / "mlops" / "CHANGELOG.md").is_file()


def test_fresh_venv_install_meta(fresh_venv, norm_wheel, tmp_path):
    others = os.environ.get("MLOPS_TEST_DIST")
    if not others:
        pytest.skip("MLOPS_TEST_DIST (a directory with the positional/vocab/optimizers wheels) is unset; "
                    "nox -s tests sets it")
    dist = tmp_path / "dist"
    dist.mkdir()
    shutil.copy(norm_wheel, dist)
    for n in META_PACKAGES[1:]:
        (whl,) = pathlib.Path(others).glob(f"mlops_{n}-{version_of(n)}-*.whl")
        shutil.copy(whl, dist)
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", dist,
         REPO / "packages" / "mlops"], cwd=tmp_path)
    (meta,) = dist.glob("mlops-*.whl")
    assert meta.name == f"mlops-{version_of('mlops')}-py3-none-any.whl"
    out = _pip_install(fresh_venv, dist, "mlops")
    assert "Successfully installed" in out
    got = run([fresh_venv, "-c", "import importlib.metadata as m; "
               f"print(' '.join(m.version(d) for d in ['mlops', *['mlops-' + n for n in {META_PACKAGES!r}]]))"])
    assert got.split() == [version_of("mlops"), *[version_of(n) for n in META_PACKAGES]]
    run([fresh_venv, "-c", "import mlops.norm, mlops.positional, mlops.vocab, mlops.optimizers"])
    assert run([fresh_venv, "-c", SMOKE]).startswith("smoke ok")


# --- the C archive ----------------------------------------------------------------------------
class TestNormCArchive(CApiTests):
    """tools/c_archive.py's norm archive (one arch), unpacked in a temp dir, consumed through
    find_package and pkg-config (CApiTests' layout and consumer tests, on the unpacked tree)."""

    package = "norm"
    headers = ("include/mlops/norm.h",)
    demo = "norm_demo"
    demo_output = "y[0..3] = "
    test_ctest_c_api = None  # the archive has no build tree to run ctest in

    @pytest.fixture(scope="class")
    def installed(self, tmp_path_factory):
        nvcc = cuda_toolkit.provide(CUDA)
        tmp = tmp_path_factory.mktemp("c_archive")
        path = c_archive.make_c_archive("norm", nvcc, "90-real", tmp / "dist", build_dir=tmp / "build")
        major = cuda_toolkit.nvcc_release(nvcc).split(".")[0]
        top = f"mlops-norm-{version_of('norm')}-linux-x86_64-cuda{major}"
        assert path.name == f"{top}.tar.xz"
        with tarfile.open(path) as t:
            assert {n.split("/")[0] for n in t.getnames()} == {top}
            t.extractall(tmp / "unpacked", filter="data")
        prefix = tmp / "unpacked" / top
        return None, prefix, cuda_toolkit.toolkit_root(nvcc)

    def test_archive_readme_and_sass(self, installed):
        _, prefix, _ = installed
        readme = (prefix / "README.md").read_text()
        for s in ("find_package(mlops REQUIRED COMPONENTS norm)", "pkg-config", "libcudart_static",
                  "--define-variable=cudalibdir", "SASS sm_90"):
            assert s in readme, s
        assert c_archive.static_lib_archs(prefix / "lib" / "libmlops_norm.a") == {"sass": ["sm_90"], "ptx": []}
        assert not list(prefix.rglob("*.so")), "the C archive holds no Python module"
