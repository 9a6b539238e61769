#pragma once
#include "mlops/optimizers.h"

namespace mlops::optim {
void step_host(const mlops_optim_args& a);
void norm_partials_host(const void* table, int64_t num_tensors, int64_t num_chunks, float* partials);
void norm_finalize_host(const float* partials, int64_t total, float max_norm, const float* grad_scale, float* norm,
                        float* coef);
}  // namespace mlops::optim
