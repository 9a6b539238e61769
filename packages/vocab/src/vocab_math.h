// Arithmetic shared by the kernels and the host emulation of mlops-vocab (MLOPS_HD): the same
// code on both sides, so the GPU and the host give the same bits.
#pragma once
#include "mlops/common/exp.h"
#include "mlops/common/fixed_sum.h"
#include "mlops/common/round.h"
#include "mlops/vocab.h"

namespace mlops::vocab {

struct f16 { uint16_t bits; };
struct bf16 { uint16_t bits; };

MLOPS_HD float load_elem(const bf16* p, int64_t i) { return bf16_to_f32(p[i].bits); }
MLOPS_HD float load_elem(const f16* p, int64_t i) { return f16_to_f32(p[i].bits); }
MLOPS_HD float load_elem(const float* p, int64_t i) { return p[i]; }

// ---- keys ---------------------------------------------------------------------------------
// The same map as mlops_vocab_key in the C header (a plain C inline, host only: not callable here).
MLOPS_HD uint32_t key_of(float f) {
  const uint32_t b = f32_bits(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
MLOPS_HD bool is_nan(float f) { return (f32_bits(f) & 0x7fffffffu) > 0x7f800000u; }
constexpr uint32_t kKeyNegInf = 0x007fffffu;  // key_of(-inf)
constexpr uint32_t kKeyPosInf = 0xff800000u;  // key_of(+inf)
constexpr uint32_t kKeyPosZero = 0x80000000u;  // key_of(+0.0)
// The max and its lowest index in one integer: a larger value wins, then a lower index.
MLOPS_HD uint64_t pack_best(uint32_t key, uint32_t index) {
  return (uint64_t(key) << 32) | uint64_t(0xffffffffu - index);
}
MLOPS_HD uint32_t best_index(uint64_t b) { return 0xffffffffu - uint32_t(b & 0xffffffffu); }
MLOPS_HD uint32_t best_key(uint64_t b) { return uint32_t(b >> 32); }

// ---- lm_head: the fixed order -------------------------------------------------------------
constexpr int kSegments = 8;  // hidden is cut into 8 segments of whole units; warp s owns segment s
MLOPS_HD int segment_begin(int s, int units) { return int((int64_t(s) * units) / kSegments); }

MLOPS_HD float lm_head_epilogue(float dot, const float* row_scale, int m, float logit_scale) {
  float v = dot;
  if (row_scale) v = v * row_scale[m];
  return v * logit_scale;
}

// ---- sampling -----------------------------------------------------------------------------
constexpr float kWeightScale = 2147483648.0f;  // 2^31: the max token's weight

// A temperature t > 0 as the weights use it: its inverse (one IEEE division a row: per element it
// is a slow-path call in SASS that bloats the kernel), and the distance below the max past which
// every weight is 0 (exp(-24) * 2^31 = 0.08 rounds to 0; fl(-24 t) * fl(1/t) is -24 within 2 ulp).
struct Temperature {
  float inv, cutoff;
};
MLOPS_HD Temperature temperature_of(float t) { return Temperature{1.0f / t, -24.0f * t}; }

// The fixed-point weight of a logit relative to the row max m: rint(exp_det((z - m) * (1/t)) * 2^31).
MLOPS_HD uint32_t sample_weight(float z, float m, Temperature t) {
  if (is_nan(z)) return 0u;
  const float d = z - m;
  // Far below the max the weight is 0 whatever exp_det returns: skip the exp. The same result on
  // both sides, so the host and the GPU agree bit for bit; most of a real vocabulary exits here.
  if (d < t.cutoff) return 0u;
  const float e = exp_det(d * t.inv);  // in [0, 1]; exp_det(0) = 1 exactly
  return uint32_t(rint_even(e * kWeightScale));
}

MLOPS_HD float penalize(float z, int32_t count, const mlops_sample_config& c) {
  if (count <= 0) return z;
  if (c.repetition_penalty != 1.0f) z = z > 0.0f ? z / c.repetition_penalty : z * c.repetition_penalty;
  z = z - c.presence_penalty;
  z = z - c.frequency_penalty * float(count);
  return z;
}

MLOPS_HD bool config_has_penalty(const mlops_sample_config& c) {
  return c.repetition_penalty != 1.0f || c.presence_penalty != 0.0f || c.frequency_penalty != 0.0f;
}
MLOPS_HD bool config_greedy(const mlops_sample_config& c) { return !(c.temperature > 0.0f) || c.top_k == 1; }

// floor(r * s / 2^64), s < 2^63: the draw's position in [0, s).
MLOPS_HD uint64_t scale_draw(uint64_t r, uint64_t s) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(r, s);
#else
  return uint64_t((unsigned __int128)r * s >> 64);
#endif
}

// top_p * S, rounded once in double on both sides; a token stays while the mass above it is below.
MLOPS_HD double top_p_threshold(float p, uint64_t s) { return double(p) * double(s); }
MLOPS_HD double min_p_threshold(float p) { return double(p) * 2147483648.0; }

// ---- Philox4x32-10 (Salmon et al. 2011), the counter-based generator of cuRAND and torch ----
struct U32x4 { uint32_t x, y, z, w; };

MLOPS_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return uint32_t((uint64_t(a) * b) >> 32);
#endif
}

MLOPS_HD U32x4 philox4x32_10(U32x4 c, uint32_t k0, uint32_t k1) {
  for (int i = 0; i < 10; ++i) {
    const uint32_t hi0 = mulhi32(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const uint32_t hi1 = mulhi32(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = U32x4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// 64 random bits for (seed, step): the only randomness a token depends on.
MLOPS_HD uint64_t draw64(uint64_t seed, int64_t step) {
  const uint64_t s = uint64_t(step);
  U32x4 r = philox4x32_10(U32x4{uint32_t(s), uint32_t(s >> 32), 0u, 0u}, uint32_t(seed), uint32_t(seed >> 32));
  return uint64_t(r.x) | (uint64_t(r.y) << 32);
}

}  // namespace mlops::vocab
