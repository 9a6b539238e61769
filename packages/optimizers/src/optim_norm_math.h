// The fixed order of the global gradient norm, shared by the kernels and the host emulation:
// units of 256 as mlops/common/fixed_sum.h (lane l folds elements 8l..8l+7 with fmaf, a
// butterfly adds the 32 lanes), the units of a chunk folded left to right into the chunk's
// value, the chunk values of all tables folded by a fixed two-level tree (256 contiguous
// segments left to right, then the segments left to right).
#pragma once
#include "mlops/common/fixed_sum.h"
#include "optim_layout.h"
#include "optim_math.h"

namespace mlops::optim {

constexpr int kFinalizeThreads = 256;

MLOPS_HD int64_t finalize_segment(int64_t total) { return (total + kFinalizeThreads - 1) / kFinalizeThreads; }

MLOPS_HD float grad_to_f32(const void* g, int32_t dtype, int64_t i) {
  switch (dtype) {
    case MLOPS_DTYPE_BF16: return bf16_to_f32(static_cast<const uint16_t*>(g)[i]);
    case MLOPS_DTYPE_FP16: return f16_to_f32(static_cast<const uint16_t*>(g)[i]);
    default: return static_cast<const float*>(g)[i];
  }
}

MLOPS_HD void finish_norm(float sum, float max_norm, const float* grad_scale, float* norm, float* coef) {
  float nrm = sqrtf(sum);
  if (grad_scale) nrm = nrm / *grad_scale;
  *norm = nrm;
  if (coef) {
    const float c = max_norm / (nrm + 1e-6f);  // torch.nn.utils.clip_grad_norm_'s coefficient
    *coef = c > 1.0f ? 1.0f : c;
  }
}

}  // namespace mlops::optim
