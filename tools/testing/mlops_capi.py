"""The C API test every package runs in the CPU suite (one pattern, one place):

the package's C library built with CMake on its own (nvcc from tools/cuda_toolkit.py, the
toolkit named by MLOPS_TEST_CUDA, default 13.0; one arch), its C test through ctest (the GPU part
runs where there is a GPU), then the installed prefix consumed by the plain C program in
samples/c_consumer through find_package(mlops COMPONENTS <name>) and through pkg-config:
compiled, linked and run.

    from mlops_capi import CApiTests
    class TestNormCApi(CApiTests):
        package = "norm"; headers = ("include/mlops/norm.h",)
        demo = "norm_demo"; demo_output = "y[0..3] = "
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))


def run(cmd, **kw) -> str:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}"
    return r.stdout


class CApiTests:
    package: str = ""
    headers: tuple = ()
    demo: str = ""          # the executable samples/c_consumer/CMakeLists.txt makes
    demo_output: str = ""   # how its output starts

    @pytest.fixture(scope="class")
    def installed(self, tmp_path_factory):
        import cuda_toolkit

        cmake = shutil.which("cmake")
        assert cmake, "cmake (>= 3.25) on PATH: the nox session installs it"
        nvcc = cuda_toolkit.provide(os.environ.get("MLOPS_TEST_CUDA", "13.0"))
        tmp = tmp_path_factory.mktemp(f"{self.package}_c")
        build, prefix = tmp / "build", tmp / "prefix"
        run([cmake, "-S", self.pkg_dir(), "-B", build, "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={nvcc}",
             "-DMLOPS_CUDA_ARCHS=" + os.environ.get("MLOPS_TEST_ARCHS", "90-real"), "-DMLOPS_BUILD_TESTS=ON",
             "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_INSTALL_PREFIX={prefix}"])
        run([cmake, "--build", build, "-j", str(os.cpu_count() or 2)])
        run([cmake, "--install", build, "--component", "c"])
        return build, prefix, cuda_toolkit.toolkit_root(nvcc)

    def pkg_dir(self) -> pathlib.Path:
        return ROOT / "packages" / self.package

    def test_ctest_c_api(self, installed):
        build, _, _ = installed
        out = run(["ctest", "--test-dir", build, "--output-on-failure"])
        assert "100% tests passed" in out
        log = run([build / f"test_{self.package}_c"])
        assert " 0 failed" in log and "passed" in log

    def test_installed_layout(self, installed):
        _, prefix, _ = installed
        n = self.package
        for rel in (f"lib/libmlops_{n}.a", *self.headers, "include/mlops/common/status.h",
                    "lib/cmake/mlops/mlopsConfig.cmake", f"lib/cmake/mlops/mlops-{n}-targets.cmake",
                    f"lib/pkgconfig/mlops-{n}.pc"):
            assert (prefix / rel).is_file(), rel

    def test_find_package_consumer(self, installed, tmp_path):
        _, prefix, cuda_root = installed
        b = tmp_path / "b"
        run(["cmake", "-S", self.pkg_dir() / "samples" / "c_consumer", "-B", b, "-G", "Ninja",
             f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCUDAToolkit_ROOT={cuda_root}"])
        run(["cmake", "--build", b])
        assert run([b / self.demo]).startswith(self.demo_output)

    def test_pkg_config_consumer(self, installed, tmp_path):
        _, prefix, _ = installed
        pkgconf = shutil.which("pkgconf") or shutil.which("pkg-config")
        assert pkgconf, "pkgconf on PATH: the nox session installs it"
        env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
        flags = run([pkgconf, "--cflags", "--libs", f"mlops-{self.package}"], env=env).split()
        exe = tmp_path / self.demo
        run(["cc", self.pkg_dir() / "samples" / "c_consumer" / "main.c", "-o", exe, *flags])
        assert run([exe]).startswith(self.demo_output)
