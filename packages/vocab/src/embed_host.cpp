// Host emulation of embed_kernel.cu: the same element arithmetic (embed_params.h) and the same
// order of the sums (lanes of 8, the warp butterfly, units folded left to right).
#include <vector>

#include "embed_params.h"

namespace mlops::vocab {

void embed_host(const EmbedParams& p) {
  std::vector<float> v(size_t(p.units) * kUnit);
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t id = embed_row(p, t);
    if (id < 0 && p.oov_flag) *p.oov_flag = 1;
    for (int64_t i = 0; i < int64_t(v.size()); ++i) {
      float x = 0.0f;
      if (id >= 0 && i < p.hidden) {
        const int64_t off = id * p.table_stride + i;
        if (p.table_dtype == MLOPS_DTYPE_BF16) x = load_elem(static_cast<const bf16*>(p.table), off);
        else if (p.table_dtype == MLOPS_DTYPE_FP16) x = load_elem(static_cast<const f16*>(p.table), off);
        else x = load_elem(static_cast<const float*>(p.table), off);
      }
      v[i] = x;
    }
    for (int64_t i = 0; i < p.hidden; ++i) {
      if (p.out) p.out[t * p.out_stride + i] = v[i];
      if (p.xw) p.xw[t * p.xw_stride + i] = f32_to_bf16(v[i] * embed_weight(p, i));
    }
    if (!p.unit_sumsq && !p.rms_r) continue;
    float total = 0.0f;
    for (int u = 0; u < p.units; ++u) {
      float lanes[32];
      for (int l = 0; l < 32; ++l) lanes[l] = lane_sumsq8(&v[size_t(u) * kUnit + 8 * l]);
      const float s = host_butterfly32(lanes);
      if (p.unit_sumsq) p.unit_sumsq[t * p.unit_sumsq_stride + u] = s;
      total = total + s;
    }
    if (p.rms_r) p.rms_r[t] = embed_rms_r(total, p.hidden, p.eps);
  }
}

}  // namespace mlops::vocab
