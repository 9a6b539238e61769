// The launch of the CUDA-core LM head (lm_head_kernel.cuh). It stays in this file, the one that
// instantiates the template (nvcc >= 12.8: template launch stubs are local to their object).
#include "lm_head_kernel.cuh"
#include "mlops/common/pdl_launch.h"

namespace mlops::vocab {
namespace {

// max[m] = the float whose key is best[m]'s, argmax[m] = its index (what decode_best does in torch:
// one launch instead of a dozen element-wise kernels, ~20 us of graph nodes at M = 1 on the H200).
// Launched as a programmatic dependent on sm_90 (lm_head_decode_best): it may be resident before the
// LM head that writes best has finished (the stream kernels let it launch at their start), and waits
// here for that grid's completion and memory flush; a no-op after any other launch.
__global__ void decode_best_kernel(const uint64_t* best, int64_t rows, float* mx, int64_t* am) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const uint64_t b = best[i];
  const uint32_t k = best_key(b);
  mx[i] = __uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
  am[i] = int64_t(best_index(b));
}

template <int MT>
cudaError_t launch_mt(const LmHeadParams& p, int64_t grid, cudaStream_t s) {
  lm_head_cc_kernel<MT><<<unsigned(grid), kThreads, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace

// The statistics are cleared before the kernel's atomics: one memset when key_hist follows best in
// memory (mlops.vocab.lm_head allocates them so), else one each. A graph node each: ~2 us apiece.
cudaError_t lm_head_clear_stats(const LmHeadParams& p, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const size_t nb = sizeof(uint64_t) * size_t(p.tokens), nh = sizeof(uint32_t) * 256 * size_t(p.tokens);
  if (p.best && p.key_hist && static_cast<void*>(p.key_hist) == static_cast<void*>(p.best + p.tokens))
    return cudaMemsetAsync(p.best, 0, nb + nh, s);
  if (p.best)
    if (cudaError_t e = cudaMemsetAsync(p.best, 0, nb, s); e != cudaSuccess) return e;
  if (p.key_hist) return cudaMemsetAsync(p.key_hist, 0, nh, s);
  return cudaSuccess;
}

// On sm_90 as a programmatic dependent of the kernel before it (PDL): its launch overlaps that
// kernel's run instead of following its end (a graph node's ~1-2 us on the H200). Below sm_90 the
// attribute is not asked for.
cudaError_t lm_head_decode_best(const uint64_t* best, int64_t rows, float* mx, int64_t* am, void* stream) {
  const int64_t blocks = (rows + 127) / 128;
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
    return cudaGetLastError();
  return launch_pdl(major >= 9, decode_best_kernel, dim3(unsigned(blocks)), dim3(128), 0,
                    static_cast<cudaStream_t>(stream), best, rows, mx, am);
}

cudaError_t lm_head_launch_cuda_core(const LmHeadParams& p, int64_t grid, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = lm_head_clear_stats(p, s); e != cudaSuccess) return e;
  if (p.tokens <= 1) return launch_mt<1>(p, grid, s);
  if (p.tokens <= 2) return launch_mt<2>(p, grid, s);
  if (p.tokens <= 4) return launch_mt<4>(p, grid, s);
  return launch_mt<8>(p, grid, s);
}

}  // namespace mlops::vocab
