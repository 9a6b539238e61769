#pragma once
#include <cuda_runtime.h>

#include "mlops/optimizers.h"

namespace mlops::optim {
// One object a parameter dtype (optim_launch_<dtype>.cu), each holding the three algorithms.
// variant: an index into the variant table (0: occ3, 1: occ2)
cudaError_t launch_step_fp32(const mlops_optim_args& a, int variant, cudaStream_t s);
cudaError_t launch_step_bf16(const mlops_optim_args& a, int variant, cudaStream_t s);
cudaError_t launch_step_fp16(const mlops_optim_args& a, int variant, cudaStream_t s);
// optim_norm.cu
cudaError_t launch_increment_steps(const mlops_optim_args& a, cudaStream_t s);
cudaError_t launch_norm_partials(const void* table, int64_t num_tensors, int64_t num_chunks, float* partials,
                                 cudaStream_t s);
cudaError_t launch_norm_finalize(const float* partials, int64_t total, float max_norm, const float* grad_scale,
                                 float* norm, float* coef, cudaStream_t s);

inline cudaError_t launch_step(const mlops_optim_args& a, int variant, cudaStream_t s) {
  switch (a.dtype) {
    case MLOPS_DTYPE_FP32: return launch_step_fp32(a, variant, s);
    case MLOPS_DTYPE_BF16: return launch_step_bf16(a, variant, s);
    case MLOPS_DTYPE_FP16: return launch_step_fp16(a, variant, s);
    default: return cudaErrorInvalidValue;
  }
}
}  // namespace mlops::optim
