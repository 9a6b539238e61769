// Conversions between float and the narrow formats, round-to-nearest-even everywhere.
// The device uses the hardware conversion where it exists (cvt.rn.bf16x2.f32 from sm_80,
// cvt.rn.f16.f32 everywhere); below sm_80 and on the host the integer code gives the same
// bits (tests/test_round.py checks the integer code against torch for every bf16/fp16
// pattern; the GPU suite checks the two device paths against each other through the
// compute_61 / compute_75 / compute_80 builds).
#pragma once
#include "hd.h"

namespace mlops {

// ---- bf16 ------------------------------------------------------------------------------
MLOPS_HD float bf16_to_f32(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

// Integer RNE: add 0x7fff plus the lowest kept bit, then truncate. NaN keeps its sign and
// becomes the canonical quiet NaN 0x7fc0 (what torch and cvt.rn produce).
MLOPS_HD uint16_t f32_to_bf16_int(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t(((u >> 16) & 0x8000u) | 0x7fc0u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ uint32_t f32x2_to_bf16x2_cvt(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#endif

// Two floats to a packed bf16 pair (lo in the low half), the path chosen by arch.
MLOPS_HD uint32_t f32x2_to_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return f32x2_to_bf16x2_cvt(lo, hi);
#else
  return uint32_t(f32_to_bf16_int(lo)) | (uint32_t(f32_to_bf16_int(hi)) << 16);
#endif
}

MLOPS_HD uint16_t f32_to_bf16(float f) { return uint16_t(f32x2_to_bf16x2(f, 0.0f)); }

// ---- fp16 ------------------------------------------------------------------------------
MLOPS_HD float f16_to_f32_int(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13));  // inf / nan
  if (e == 0) {
    if (m == 0) return bits_f32(sign);
    // subnormal: m * 2^-24, exact in float
    float v = float(m) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

MLOPS_HD uint16_t f32_to_f16_int(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // quiet NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520: rounds to inf
  if (a >= 0x38800000u) {                                 // normal half (>= 2^-14)
    uint32_t r = a - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return uint16_t(sign | (r >> 13));
  }
  // subnormal half: value / 2^-24, rounded to an integer (exact scaling by a power of two)
  float v = bits_f32(a) * 16777216.0f;
  return uint16_t(sign | uint16_t(rint_even(v)));
}

MLOPS_HD float f16_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return f16_to_f32_int(h);
#endif
}

MLOPS_HD uint16_t f32_to_f16(float f) {
#if defined(__CUDA_ARCH__)
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  return f32_to_f16_int(f);
#endif
}

// ---- FP8 E4M3 (float8_e4m3fn: no inf, max 448, NaN = 0x7f) --------------------------------
// Same bits as torch's float->float8_e4m3fn for |x| <= 448 and NaN. Callers clamp first
// (torch turns |x| >= 464 into NaN rather than saturating).
MLOPS_HD uint8_t f32_to_e4m3(float f) {
  uint32_t u = f32_bits(f);
  uint8_t sign = uint8_t((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint8_t(sign | 0x7fu);
  if (a >= 0x43e80000u) return uint8_t(sign | 0x7fu);  // >= 464: torch gives NaN
  if (a >= 0x3c800000u) {                              // >= 2^-6: normal e4m3
    uint32_t r = a - (120u << 23);
    r += 0x7ffffu + ((r >> 20) & 1u);
    return uint8_t(sign | (r >> 20));
  }
  // subnormal e4m3: multiples of 2^-9
  float v = bits_f32(a) * 512.0f;
  return uint8_t(sign | uint8_t(rint_even(v)));
}

MLOPS_HD float e4m3_to_f32(uint8_t q) {
  uint32_t sign = uint32_t(q & 0x80u) << 24;
  uint32_t e = (q >> 3) & 0xfu, m = q & 7u;
  if (e == 0xf && m == 7) return bits_f32(sign | 0x7fc00000u);
  if (e == 0) {
    float v = float(m) * 0.001953125f;  // 2^-9
    return sign ? -v : v;
  }
  return bits_f32(sign | ((e + 120u) << 23) | (m << 20));
}

// ---- FP4 E2M1 (values 0, .5, 1, 1.5, 2, 3, 4, 6), the input already clamped to [-6, 6] -----
// Round to nearest, ties to the even code, sign kept (so -0.0 -> 0x8), as torchao's
// f32_to_f4_unpacked does.
MLOPS_HD uint8_t f32_to_e2m1(float f) {
  uint32_t u = f32_bits(f);
  uint8_t sign = uint8_t((u >> 28) & 0x8u);
  float a = bits_f32(u & 0x7fffffffu);
  uint8_t c;
  if (a <= 0.25f) c = 0;
  else if (a < 0.75f) c = 1;
  else if (a <= 1.25f) c = 2;
  else if (a < 1.75f) c = 3;
  else if (a <= 2.5f) c = 4;
  else if (a < 3.5f) c = 5;
  else if (a <= 5.0f) c = 6;
  else c = 7;
  return uint8_t(sign | c);
}

}  // namespace mlops
