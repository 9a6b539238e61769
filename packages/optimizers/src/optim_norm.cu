// Step counters and the global gradient norm (optim_norm_math.h gives the order).
#include "optim_launch.h"
#include "optim_norm_kernel.cuh"

namespace mlops::optim {

cudaError_t launch_increment_steps(const mlops_optim_args& a, cudaStream_t s) {
  const int64_t blocks = (a.num_tensors + 255) / 256;
  increment_steps_kernel<<<unsigned(blocks < 1024 ? blocks : 1024), 256, 0, s>>>(
      static_cast<const mlops_optim_tensor*>(a.table), a.num_tensors, a.found_inf);
  return cudaGetLastError();
}

cudaError_t launch_norm_partials(const void* table, int64_t num_tensors, int64_t num_chunks, float* partials,
                                 cudaStream_t s) {
  norm_partials_kernel<<<unsigned(num_chunks), kThreads, 0, s>>>(static_cast<const mlops_optim_tensor*>(table),
                                                                 num_tensors, partials);
  return cudaGetLastError();
}

cudaError_t launch_norm_finalize(const float* partials, int64_t total, float max_norm, const float* grad_scale,
                                 float* norm, float* coef, cudaStream_t s) {
  norm_finalize_kernel<<<1, kFinalizeThreads, 0, s>>>(partials, total, max_norm, grad_scale, norm, coef);
  return cudaGetLastError();
}

}  // namespace mlops::optim
