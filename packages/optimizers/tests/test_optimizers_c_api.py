"""CPU (CI): the mlops-optimizers C library built with CMake on its own, its C test (ctest), then an installed
prefix consumed by a plain C program through find_package(mlops COMPONENTS optimizers) and through
pkg-config: compiled, linked and run (the host emulation; the GPU part runs where there is a GPU)."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PKG = ROOT / "packages" / "optimizers"
sys.path.insert(0, str(ROOT / "tools"))


def _run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    import cuda_toolkit

    cmake = shutil.which("cmake")
    assert cmake, "cmake (>= 3.25) on PATH: the nox session installs it"
    nvcc = cuda_toolkit.provide(os.environ.get("MLOPS_TEST_CUDA", "13.0"))
    tmp = tmp_path_factory.mktemp("optimizers_c")
    build, prefix = tmp / "build", tmp / "prefix"
    _run([cmake, "-S", PKG, "-B", build, "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
          "-DMLOPS_CUDA_ARCHS=" + os.environ.get("MLOPS_TEST_ARCHS", "90-real"), "-DMLOPS_BUILD_TESTS=ON",
          "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_INSTALL_PREFIX={prefix}"])
    _run([cmake, "--build", build, "-j", str(os.cpu_count() or 2)])
    _run([cmake, "--install", build, "--component", "c"])
    return build, prefix, cuda_toolkit.toolkit_root(nvcc)


def test_ctest_c_api(installed):
    build, _, _ = installed
    out = _run(["ctest", "--test-dir", build, "--output-on-failure"])
    assert "100% tests passed" in out
    log = _run([build / "test_optimizers_c"])
    assert " 0 failed" in log and "passed" in log


def test_installed_layout(installed):
    _, prefix, _ = installed
    for rel in ("lib/libmlops_optimizers.a", "include/mlops/optimizers.h", "include/mlops/common/status.h",
                "lib/cmake/mlops/mlopsConfig.cmake", "lib/cmake/mlops/mlops-optimizers-targets.cmake",
                "lib/pkgconfig/mlops-optimizers.pc"):
        assert (prefix / rel).is_file(), rel


def test_find_package_consumer(installed, tmp_path):
    _, prefix, cuda_root = installed
    b = tmp_path / "b"
    _run(["cmake", "-S", PKG / "samples" / "c_consumer", "-B", b, "-G", "Ninja",
          f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCUDAToolkit_ROOT={cuda_root}"])
    _run(["cmake", "--build", b])
    out = _run([b / "optimizers_demo"])
    assert out.startswith("p[0..3] = ")


def test_pkg_config_consumer(installed, tmp_path):
    _, prefix, _ = installed
    pkgconf = shutil.which("pkgconf") or shutil.which("pkg-config")
    assert pkgconf, "pkgconf on PATH: the nox session installs it"
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = _run([pkgconf, "--cflags", "--libs", "mlops-optimizers"], env=env).split()
    exe = tmp_path / "optimizers_demo"
    _run(["cc", PKG / "samples" / "c_consumer" / "main.c", "-o", exe, *flags])
    out = _run([exe])
    assert out.startswith("p[0..3] = ")
