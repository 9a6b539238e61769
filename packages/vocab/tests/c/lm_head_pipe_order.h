// What the kernel-on-host runners of the two tensor-core LM heads share (lm_head_pipe_kernel_on_host.cpp,
// lm_head_stream_kernel_on_host.cpp): the check counter and the mirror of the order both kernels must
// follow, and the test problem they run. One copy, so the two runners cannot check against different
// orders. Include after the kernel header (it names LmHeadParams, kSegments, segment_begin).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

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

// A test problem (random numbers: nd of gen, in the runners' order): M rows of x (V x H weight) with padded strides whose padding holds huge values (a read
// past H would show), row scales, the params (logits, best, key_hist left to the caller) and the logits
// the mirror order gives (-1 in the logits' padding columns).
struct Problem {
  int64_t xs, ws, ls;  // the strides of x, the weight, the logits
  std::vector<uint16_t> x, w;
  std::vector<float> rs, want;
  LmHeadParams p{};
  Problem(int64_t V, int64_t H, int M, std::mt19937& gen, std::normal_distribution<float>& nd)
      : xs(H + 8), ws(H + 16), ls(V + 3) {
    x.resize(size_t(M * xs));
    w.resize(size_t(V * ws));
    for (auto& v : x) v = bf16_of(nd(gen));
    for (auto& v : w) v = bf16_of(nd(gen) * 0.1f);
    for (int m = 0; m < M; ++m)
      for (int64_t k = H; k < xs; ++k) x[size_t(m * xs + k)] = bf16_of(1e30f);
    for (int64_t v = 0; v < V; ++v)
      for (int64_t k = H; k < ws; ++k) w[size_t(v * ws + k)] = bf16_of(-1e30f);
    rs.resize(static_cast<size_t>(M));
    for (auto& v : rs) v = 0.5f + std::fabs(nd(gen));
    p.tokens = M; p.hidden = H; p.vocab = V; p.units = int((H + 255) / 256);
    p.x = x.data(); p.x_stride = xs; p.weight = w.data(); p.weight_stride = ws;
    p.logits_stride = ls; p.row_scale = rs.data(); p.logit_scale = 0.75f;
    want.assign(size_t(M * ls), -1.0f);
    for (int m = 0; m < M; ++m)
      for (int64_t v = 0; v < V; ++v)
        want[size_t(m * ls + v)] = lm_head_epilogue(mirror_dot(p, m, v), p.row_scale, m, p.logit_scale);
  }
  Problem(const Problem&) = delete;  // p points into this object's vectors
};
