"""NVRTC through ctypes (no GPU needed to compile), and the test kernel that includes
mlops/rope.cuh the way a fused attention kernel would."""

from __future__ import annotations

import ctypes
import glob
import os
import pathlib
import sys

INCLUDE = pathlib.Path(__file__).resolve().parents[1] / "include"

# One CTA a token: its cos/sin on the fly into shared memory, then one thread a head through
# rope_head, all from the header. tokens [T, heads, head_dim] contiguous.
KERNEL_SOURCE = r"""
#include "mlops/rope.cuh"
using namespace mlops::rope;

template <class T>
__device__ void rope_tokens(const T* x, T* y, const long long* pos, const float* inv_freq, float scaling,
                            int heads, int head_dim, int rotary_dim, int layout) {
  __shared__ float cs[256];
  const int t = blockIdx.x, half = rotary_dim / 2;
  for (int i = threadIdx.x; i < half; i += blockDim.x) cos_sin(pos[t], inv_freq[i], scaling, &cs[i], &cs[half + i]);
  __syncthreads();
  for (int h = threadIdx.x; h < heads; h += blockDim.x) {
    const long long off = ((long long)t * heads + h) * head_dim;
    rotate_head<T>(x + off, y + off, head_dim, rotary_dim, layout, cs);
  }
}

extern "C" __global__ void rope_bf16(const bf16* x, bf16* y, const long long* pos, const float* inv_freq,
                                     float scaling, int heads, int head_dim, int rotary_dim, int layout) {
  rope_tokens<bf16>(x, y, pos, inv_freq, scaling, heads, head_dim, rotary_dim, layout);
}
extern "C" __global__ void rope_f16(const f16* x, f16* y, const long long* pos, const float* inv_freq,
                                    float scaling, int heads, int head_dim, int rotary_dim, int layout) {
  rope_tokens<f16>(x, y, pos, inv_freq, scaling, heads, head_dim, rotary_dim, layout);
}
extern "C" __global__ void rope_f32(const float* x, float* y, const long long* pos, const float* inv_freq,
                                    float scaling, int heads, int head_dim, int rotary_dim, int layout) {
  rope_tokens<float>(x, y, pos, inv_freq, scaling, heads, head_dim, rotary_dim, layout);
}
"""
KERNELS = ("rope_bf16", "rope_f16", "rope_f32")


def find_nvrtc() -> str | None:
    """libnvrtc.so of the nvidia-cuda-nvrtc wheel (CUDA 13: nvidia/cu13/lib), a CUDA toolkit, or the loader path."""
    cands = []
    for sp in sys.path:
        cands += glob.glob(os.path.join(sp, "nvidia", "cu13", "lib", "libnvrtc.so*"))
        cands += glob.glob(os.path.join(sp, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*"))
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda", "/usr/local/cuda-13.0"):
        if root:
            cands += glob.glob(os.path.join(root, "lib64", "libnvrtc.so*"))
    cands = [c for c in cands if "builtins" not in c and "alt" not in c]
    return sorted(cands)[0] if cands else None


def compile_ptx(source: str, arch: str, extra=()) -> tuple[int, str, bytes]:
    """(nvrtcResult, log, ptx) of one compilation with mlops/rope.cuh on the include path."""
    path = find_nvrtc()
    if path is None:
        raise FileNotFoundError("libnvrtc")
    d = os.path.dirname(path)
    for b in glob.glob(os.path.join(d, "libnvrtc-builtins.so*")):  # dlopen'ed by libnvrtc by name
        if "alt" not in b:
            ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
            break
    lib = ctypes.CDLL(path)
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"rope_test.cu", 0, None, None)
    assert r == 0, f"nvrtcCreateProgram: {r}"
    opts = [f"--gpu-architecture={arch}", f"-I{INCLUDE}", "--std=c++17", *extra]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    res = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    ptx = b""
    if res == 0:
        lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetPTX(prog, buf)
        ptx = buf.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return res, log.value.decode(errors="replace"), ptx
