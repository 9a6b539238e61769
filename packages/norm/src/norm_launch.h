#pragma once
#include <cuda_runtime.h>
#include "norm_math.h"

namespace mlops::norm {
// One object a dtype (norm_launch_<dtype>.cu), so the three compile in parallel.
cudaError_t launch_bf16(const Params& p, int variant, cudaStream_t s);
cudaError_t launch_fp16(const Params& p, int variant, cudaStream_t s);
cudaError_t launch_fp32(const Params& p, int variant, cudaStream_t s);

inline cudaError_t launch(const Params& p, mlops_dtype xt, int variant, cudaStream_t s) {
  switch (xt) {
    case MLOPS_DTYPE_BF16: return launch_bf16(p, variant, s);
    case MLOPS_DTYPE_FP16: return launch_fp16(p, variant, s);
    case MLOPS_DTYPE_FP32: return launch_fp32(p, variant, s);
    default: return cudaErrorInvalidValue;
  }
}
}  // namespace mlops::norm
