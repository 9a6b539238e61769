// What the embed kernels and their host emulation read of a call: a flat copy of
// mlops_embed_args with derived sizes, passed to the kernel by value.
#pragma once
#include <cuda_runtime_api.h>

#include "vocab_math.h"

namespace mlops::vocab {

struct EmbedParams {
  int64_t tokens, hidden, vocab;
  int units;  // ceil(hidden / 256)
  int id_dtype, table_dtype, w_dtype;
  const void* ids;
  const void* table; int64_t table_stride;
  float* out; int64_t out_stride;
  const void* norm_weight;
  uint16_t* xw; int64_t xw_stride;
  float* unit_sumsq; int64_t unit_sumsq_stride;
  float* rms_r; float eps;
  int32_t* oov_flag;
  bool vec_ok;  // 16-byte accesses are legal for every row tensor (checked on the host)
};

EmbedParams make_embed_params(const mlops_embed_args& a);

// The id of token t, or -1 when it is outside [0, vocab).
MLOPS_HD int64_t embed_row(const EmbedParams& p, int64_t t) {
  const int64_t id = p.id_dtype == MLOPS_DTYPE_INT32 ? int64_t(static_cast<const int32_t*>(p.ids)[t])
                                                     : static_cast<const int64_t*>(p.ids)[t];
  return (id >= 0 && id < p.vocab) ? id : -1;
}

MLOPS_HD float embed_weight(const EmbedParams& p, int64_t i) {
  if (p.w_dtype == MLOPS_DTYPE_BF16) return load_elem(static_cast<const bf16*>(p.norm_weight), i);
  if (p.w_dtype == MLOPS_DTYPE_FP16) return load_elem(static_cast<const f16*>(p.norm_weight), i);
  return load_elem(static_cast<const float*>(p.norm_weight), i);
}

// mlops-norm's r (norm_math.h rms_r): the same expression, so embed + norm == norm.
MLOPS_HD float embed_rms_r(float sumsq, int64_t hidden, float eps) {
  return 1.0f / sqrtf(sumsq / float(hidden) + eps);
}

void embed_host(const EmbedParams& p);
cudaError_t embed_launch(const EmbedParams& p, int warps, void* stream);

}  // namespace mlops::vocab
