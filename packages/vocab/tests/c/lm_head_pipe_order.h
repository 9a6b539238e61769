// What the kernel-on-host runners of the two tensor-core LM heads share (lm_head_pipe_kernel_on_host.cpp,
// lm_head_stream_kernel_on_host.cpp): the check counter and the mirror of the order both kernels must
// follow. One copy, so the two runners cannot check against different orders. Include after the
// kernel header (it names LmHeadParams, kSegments, segment_begin).
#pragma once
#include <algorithm>
#include <cstdio>

using namespace mlops::vocab;
using mlops::kUnit;

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

static uint16_t bf16_of(float f) { return mlops::f32_to_bf16_int(f); }
static double bf(uint16_t h) { return double(mlops::bf16_to_f32(h)); }

// The order of the kernel (with the host MMA's double sums), written from its description.
static float mirror_dot(const LmHeadParams& p, int m, int64_t v) {
  const uint16_t* x = p.x + m * p.x_stride;
  const uint16_t* w = p.weight + v * p.weight_stride;
  float total = 0.0f;
  for (int s = 0; s < kSegments; ++s) {
    const int64_t kb = int64_t(segment_begin(s, p.units)) * kUnit;
    const int64_t ke = std::min<int64_t>(int64_t(segment_begin(s + 1, p.units)) * kUnit, p.hidden);
    float acc = 0.0f;
    for (int64_t k0 = kb; k0 < ke; k0 += 32)
      for (int half = 0; half < 2; ++half) {
        double d = acc;
        for (int t = 0; t < 4; ++t)
          for (int i = 0; i < 4; ++i) {
            const int64_t k = k0 + 8 * t + 4 * half + i;
            if (k < ke) d += bf(x[k]) * bf(w[k]);
          }
        acc = float(d);
      }
    total = s == 0 ? acc : total + acc;
  }
  return total;
}
