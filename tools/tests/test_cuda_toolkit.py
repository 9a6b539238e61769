"""tools/cuda_toolkit.py's CUDA 11.8 tree: what the assembly must give and what a build with it gets.

12.4 and 13.0 are exercised by every test that builds (cmake/tests/test_arch.py, test_sass_list.py,
test_distribution.py); 11.8's assembly has parts of its own (the nvidia-cuda-dev .deb streamed for
two static libraries, gcc 11 unpacked as nvcc's host compiler), checked here. The first run
provisions 11.8 (~2 min here: 9 .debs, 919 MB of them nvidia-cuda-dev, and 3 cu11 wheels), cached
afterwards under ~/.cache/mlops/toolkits or $MLOPS_TOOLKIT_CACHE.
"""
import json
import pathlib
import re
import subprocess
import sys
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import cuda_toolkit  # noqa: E402
import sass_list  # noqa: E402

# host code that gcc 12 with 11.8's headers would refuse (host_config.h) and that needs libstdc++:
# the bf16 / fp16 headers, a std::function, and a kernel launch through the static runtime
PROGRAM = r"""
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <functional>
#include <vector>
__global__ void twice(float* y, const __nv_bfloat16* x) { y[threadIdx.x] = 2.f * __bfloat162float(x[threadIdx.x]); }
int main() {
  std::vector<int> v{20, 21};
  std::function<int(int)> inc = [](int a) { return a + 1; };
  float* y = nullptr;
  cudaError_t e = cudaMalloc(&y, 4);  // no GPU / driver here: an error code, not a crash
  std::printf("gnuc=%d host=%d cuda=%d malloc_ok=%d\n", __GNUC__, inc(v[1]), __CUDACC_VER_MAJOR__ * 10 + __CUDACC_VER_MINOR__,
              e == cudaSuccess);
  return 0;
}
"""


@pytest.fixture(scope="module")
def nvcc():
    return cuda_toolkit.provide("11.8")


def test_resolve_118():
    assert cuda_toolkit.resolve("11.8") == ("11.8", "11.8")
    assert cuda_toolkit.resolve("11.8.89") == ("11.8", "11.8")


def test_118_tree(nvcc):
    root = nvcc.parent.parent
    assert cuda_toolkit.nvcc_release(nvcc) == "11.8"
    assert cuda_toolkit.toolkit_root(nvcc) == root
    marker = json.loads((root / cuda_toolkit.MARKER).read_text())
    assert marker["version"] == "11.8" and marker["nvcc"] == "bin/nvcc"
    # the two static libraries from nvidia-cuda-dev are real archives, not placeholders (12.4's
    # libcudadevrt.a is an empty one)
    for lib in ("libcudart_static.a", "libcudadevrt.a"):
        data = (root / "lib64" / lib).read_bytes()
        assert data[:8] == b"!<arch>\n" and len(data) > 500_000, lib
    archs = subprocess.run([str(nvcc), "--list-gpu-arch"], check=True, capture_output=True, text=True).stdout.split()
    assert archs == [f"compute_{a}" for a in (35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90)]
    # a second call is the cached tree: same path, no network, well under a second here
    t0 = time.monotonic()
    assert cuda_toolkit.provide("11.8") == nvcc
    assert time.monotonic() - t0 < 5


def test_118_host_compiler_is_gcc11(nvcc):
    """gcc 11.3 for the host passes *and* for the version nvcc hands cudafe++ / cicc (--gnu_version):
    nvcc probes `gcc` with the caller's PATH (here gcc 12.2 first), so bin/nvcc must set it."""
    host = nvcc.parent.parent / "host-gcc/bin/gcc"
    ver = subprocess.run([str(host), "-dumpfullversion"], check=True, capture_output=True, text=True)
    assert ver.stdout.strip() == "11.3.0"
    dry = subprocess.run([str(nvcc), "-dryrun", "-arch=sm_90", "-c", "-x", "cu", "/dev/null", "-o", "/dev/null"],
                         capture_output=True, text=True).stderr
    assert set(re.findall(r"--gnu_version=(\d+)", dry)) == {"110300"}, dry
    assert re.search(r"^#\$ gcc .* -c -x c\+\+", dry, re.M), dry  # gcc from PATH, no -ccbin


def test_118_builds_links_and_runs(nvcc, tmp_path):
    src = tmp_path / "p.cu"
    src.write_text(PROGRAM)
    exe = tmp_path / "p"
    subprocess.run([str(nvcc), "-gencode=arch=compute_50,code=sm_50", "-gencode=arch=compute_90,code=sm_90",
                    "-gencode=arch=compute_90,code=compute_90", str(src), "-o", str(exe)],
                   check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "gnuc=11 host=22 cuda=118 malloc_ok=0", out
    # the static runtime: no libcudart.so needed at run time
    needed = subprocess.run(["readelf", "-d", str(exe)], check=True, capture_output=True, text=True).stdout
    assert "libcudart" not in needed, needed
    assert sass_list.list_archs(exe) == {"sass": ["sm_50", "sm_90"], "ptx": ["compute_90"]}
