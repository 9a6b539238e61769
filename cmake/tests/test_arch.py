"""cmake/arch.cmake against the real nvcc 11.8, 12.4 and 13.0, provided by tools/cuda_toolkit.py.

On a fresh machine the first run provisions the toolkits (~15 s for 12.4 and 13.0 here with a fast
network, ~2 min for 11.8, whose 774 MB nvidia-cuda-dev .deb is read for its static cudart; cached
under ~/.cache/mlops/toolkits or $MLOPS_TOOLKIT_CACHE afterwards).
Runs cmake/tests/arch_test.cmake (script tests) and configures + builds a tiny project per nvcc.
Uses the cmake/ninja next to the running Python (the dev venv), else PATH.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import cuda_toolkit  # noqa: E402

ARCH_CMAKE = REPO / "cmake/arch.cmake"
ARCH_TEST = REPO / "cmake/tests/arch_test.cmake"
SEARCH = os.pathsep.join([str(pathlib.Path(sys.executable).parent), os.environ.get("PATH", "")])
CMAKE = shutil.which("cmake", path=SEARCH)
NINJA = shutil.which("ninja", path=SEARCH)
VERSIONS = ["11.8", "12.4", "13.0"]


@pytest.fixture(scope="session")
def toolkits():
    return {v: cuda_toolkit.provide(v) for v in VERSIONS}


@pytest.fixture(scope="session")
def cuobjdump(toolkits):
    return toolkits["12.4"].parent / "cuobjdump"  # 12.4's lists sm_50 … and 13.x cubins (notes §1.7)


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p.stdout + p.stderr


def test_cmake_version():
    out = run([CMAKE, "--version"])
    assert tuple(map(int, re.search(r"version (\d+)\.(\d+)", out).groups())) >= (3, 25), out


def test_arch_script_synthetic():
    out = run([CMAKE, "-P", ARCH_TEST])
    assert "checks passed" in out


@pytest.mark.parametrize("version", VERSIONS)
def test_arch_script_real_nvcc(toolkits, version):
    out = run([CMAKE, f"-DNVCC={toolkits[version]}", f"-DEXPECT_VERSION={version}", "-P", ARCH_TEST])
    assert "checks passed" in out


def test_arch_script_detects_wrong_expectation(toolkits):
    # the script really checks: the 13.0 nvcc does not pass as 12.4
    p = subprocess.run([CMAKE, f"-DNVCC={toolkits['13.0']}", "-DEXPECT_VERSION=12.4", "-P", ARCH_TEST],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "FAIL" in p.stderr


PROJECT = """\
cmake_minimum_required(VERSION 3.25)
include("${ARCH_CMAKE}")
mlops_cuda_preproject()
project(x LANGUAGES CUDA)
mlops_cuda_archs_for(archs MIN 50)
mlops_cuda_archs_for(archs61 MIN 61)
mlops_cuda_quirk_flags(quirks)
file(WRITE "${CMAKE_BINARY_DIR}/archs.txt" "${archs}\\n${archs61}\\n")
add_library(k OBJECT k.cu)
set_target_properties(k PROPERTIES CUDA_ARCHITECTURES "${archs}")
target_compile_options(k PRIVATE ${quirks})
if(NB_INCLUDES)  # nanobind headers: the quirk flags must silence #186 (and g++ -Wattributes on 12.4)
  add_library(nb OBJECT nb.cu)
  set_target_properties(nb PROPERTIES CUDA_ARCHITECTURES 75-real)
  target_include_directories(nb PRIVATE ${NB_INCLUDES})
  target_compile_options(nb PRIVATE ${quirks})
endif()
"""
KERNEL = "__global__ void k(float* x, unsigned n) { unsigned i = threadIdx.x; if (i >= 0 && i < n) x[i] = 1.f; }\n"
NB_CU = """\
#include <nanobind/nanobind.h>
__global__ void k(float* x) { x[threadIdx.x] = 1.f; }
NB_MODULE(nbx, m) { m.def("f", []() { return 1; }); }
"""
WISH = "50-real;61-real;75-real;90-real;90-virtual"
EXPECT = {  # version -> (archs MIN 50, archs MIN 61, SASS in the object)
    "11.8": ("50-real;61-real;75-real;90-real;90-virtual", "61-real;75-real;90-real;90-virtual",
             ["sm_50", "sm_61", "sm_75", "sm_90"]),
    "12.4": ("50-real;61-real;75-real;90-real;90-virtual", "61-real;75-real;90-real;90-virtual",
             ["sm_50", "sm_61", "sm_75", "sm_90"]),
    "13.0": ("75-real;90-real;90-virtual", "75-real;90-real;90-virtual", ["sm_75", "sm_90"]),
}


def nanobind_includes():
    try:
        import nanobind
    except ImportError:
        return None
    import sysconfig
    nb = pathlib.Path(nanobind.include_dir()).parent
    return ";".join([nanobind.include_dir(), str(nb / "ext/robin_map/include"), sysconfig.get_paths()["include"]])


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDACXX", "CUDAARCHS", "MLOPS_CUDA_ARCHS")}
    env.update(extra)
    return env


@pytest.mark.parametrize("version", VERSIONS)
def test_real_configure_and_build(tmp_path, toolkits, cuobjdump, version):
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROJECT)
    (src / "k.cu").write_text(KERNEL)
    (src / "nb.cu").write_text(NB_CU)
    nb = nanobind_includes()
    # CUDAARCHS=50 would break the 13.0 compiler check; mlops_cuda_preproject() must override it.
    env = clean_env(CUDAARCHS="50")
    run([CMAKE, "-S", src, "-B", build, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={NINJA}",
         f"-DCMAKE_CUDA_COMPILER={toolkits[version]}", f"-DARCH_CMAKE={ARCH_CMAKE}",
         f"-DMLOPS_CUDA_ARCHS={WISH}", *([f"-DNB_INCLUDES={nb}"] if nb else [])], env=env)
    want50, want61, want_sass = EXPECT[version]
    assert (build / "archs.txt").read_text().split("\n")[:2] == [want50, want61]

    out = run([NINJA, "-C", build], env=env)
    assert "warning" not in out.lower(), out  # quirk flags: no #186, no -Wattributes

    obj = build / "CMakeFiles/k.dir/k.cu.o"
    listing = run([cuobjdump, "--list-elf", "--list-ptx", obj])
    sass = sorted(set(re.findall(r"\.(sm_\d+)\.cubin", listing)), key=lambda s: int(s[3:]))
    ptx = sorted(set(re.findall(r"\.sm_(\d+)\.ptx", listing)))
    assert sass == want_sass, listing
    assert ptx == ["90"], listing


def test_env_spec_when_cache_var_unset(tmp_path, toolkits):
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROJECT.split("add_library")[0])
    run([CMAKE, "-S", src, "-B", build, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={NINJA}",
         f"-DCMAKE_CUDA_COMPILER={toolkits['13.0']}", f"-DARCH_CMAKE={ARCH_CMAKE}"],
        env=clean_env(MLOPS_CUDA_ARCHS="sm_61,sm_80,compute_90"))
    assert (build / "archs.txt").read_text().split("\n")[:2] == ["80-real;90-virtual"] * 2
