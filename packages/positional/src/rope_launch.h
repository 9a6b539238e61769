#pragma once
#include <cuda_runtime.h>
#include "mlops/common/status.h"
#include "rope_params.h"

namespace mlops::rope {
constexpr int kCtaThreads = 256;
// One object a dtype (rope_launch_<dtype>.cu), so the three compile in parallel.
cudaError_t launch_bf16(const Params& p, bool vec, int layout, cudaStream_t s);
cudaError_t launch_fp16(const Params& p, bool vec, int layout, cudaStream_t s);
cudaError_t launch_fp32(const Params& p, bool vec, int layout, cudaStream_t s);
cudaError_t launch_cache(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache,
                         cudaStream_t s);

inline cudaError_t launch(const Params& p, mlops_dtype t, bool vec, int layout, cudaStream_t s) {
  switch (t) {
    case MLOPS_DTYPE_BF16: return launch_bf16(p, vec, layout, s);
    case MLOPS_DTYPE_FP16: return launch_fp16(p, vec, layout, s);
    case MLOPS_DTYPE_FP32: return launch_fp32(p, vec, layout, s);
    default: return cudaErrorInvalidValue;
  }
}

// cos/sin of each token, then 4 base offsets (q in/out, k in/out) and a bad flag a token.
inline size_t smem_bytes(const Params& p) {
  return sizeof(float) * size_t(p.tpc) * p.rotary_dim + sizeof(long long) * 4 * p.tpc + sizeof(int) * p.tpc;
}

void run_host(const Params& p, mlops_dtype t, int layout);
void cache_host(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache);
}  // namespace mlops::rope
