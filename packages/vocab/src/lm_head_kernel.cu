// The launch of the CUDA-core LM head (lm_head_kernel.cuh). It stays in this file, the one that
// instantiates the template (nvcc >= 12.8: template launch stubs are local to their object).
#include "lm_head_kernel.cuh"

namespace mlops::vocab {
namespace {

template <int MT>
cudaError_t launch_mt(const LmHeadParams& p, int64_t grid, cudaStream_t s) {
  lm_head_cc_kernel<MT><<<unsigned(grid), kThreads, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t lm_head_launch_cuda_core(const LmHeadParams& p, int64_t grid, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (p.best) {
    cudaError_t e = cudaMemsetAsync(p.best, 0, sizeof(uint64_t) * p.tokens, s);
    if (e != cudaSuccess) return e;
  }
  if (p.key_hist) {
    cudaError_t e = cudaMemsetAsync(p.key_hist, 0, sizeof(uint32_t) * 256 * p.tokens, s);
    if (e != cudaSuccess) return e;
  }
  if (p.tokens <= 1) return launch_mt<1>(p, grid, s);
  if (p.tokens <= 2) return launch_mt<2>(p, grid, s);
  if (p.tokens <= 4) return launch_mt<4>(p, grid, s);
  return launch_mt<8>(p, grid, s);
}

}  // namespace mlops::vocab
