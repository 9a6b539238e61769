// Host emulation of the CUDA-core LM head (lm_head_kernel.cu): per (token, row) the same lane
// chains of fmaf over each segment, the butterfly over the 32 lanes, segments added in order,
// the same epilogue; the statistics are order-free (a max and counts).
#include "lm_head_params.h"

namespace mlops::vocab {

void lm_head_host(const LmHeadParams& p) {
  if (p.best)
    for (int m = 0; m < p.tokens; ++m) p.best[m] = 0;
  if (p.key_hist)
    for (int i = 0; i < p.tokens * 256; ++i) p.key_hist[i] = 0;
  for (int m = 0; m < p.tokens; ++m) {
    const uint16_t* x = p.x + m * p.x_stride;
    for (int64_t v = 0; v < p.vocab; ++v) {
      const uint16_t* w = p.weight + v * p.weight_stride;
      float total = 0.0f;
      for (int s = 0; s < kSegments; ++s) {
        float lanes[32];
        for (int l = 0; l < 32; ++l) {
          float a = 0.0f;
          for (int u = segment_begin(s, p.units); u < segment_begin(s + 1, p.units); ++u) {
            const int64_t col0 = int64_t(u) * kUnit + 8 * l;
            if (col0 >= p.hidden) break;
            for (int i = 0; i < 8; ++i) a = fmaf(bf16_to_f32(x[col0 + i]), bf16_to_f32(w[col0 + i]), a);
          }
          lanes[l] = a;
        }
        const float seg = host_butterfly32(lanes);
        total = s == 0 ? seg : total + seg;
      }
      const float logit = lm_head_epilogue(total, p.row_scale, m, p.logit_scale);
      p.logits[m * p.logits_stride + v] = logit;
      const uint32_t k = key_of(logit);
      if (p.best) {
        const uint64_t b = pack_best(k, uint32_t(v));
        if (b > p.best[m]) p.best[m] = b;
      }
      if (p.key_hist) ++p.key_hist[m * 256 + (k >> 24)];
    }
  }
}

}  // namespace mlops::vocab
