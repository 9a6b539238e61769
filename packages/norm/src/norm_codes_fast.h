// Cheaper forms of the quantizers of norm_math.h for the "lx" lean kernels
// (norm_row_leanq.cuh). Each one returns the bits of its norm_math.h counterpart for every
// input it is given there, so the host emulation keeps calling the originals:
// tests/c/codes_fast_exhaustive.cpp (run by test_norm_codes_fast.py, CPU) compares them on
// every bf16 and fp16 amax and on every float near each rounding boundary.
//
// Why (ncu run 19, H200, r16lq INT8 16384x4096): 23.6 thread instructions an element, issue
// slots 63 % busy and the ALU pipe the busiest (50 %): the quantizer's clamp + cvt.rni
// (F2I, a conversion-pipe instruction) per element, and two IEEE divisions a lane a block
// (div.rn: ~10 instructions and a slow-path branch each) are what these cut.
#pragma once
#include "norm_math.h"

namespace mlops::norm {

// ---- INT8 --------------------------------------------------------------------------------
// The code of int8_code(y, inv) in the low byte of the result, for |y| <= amax and a finite
// inv = int8_inv(amax) (so |y * inv| < 127.5: amax * int8_inv(amax) < 127.5 for every bf16
// and fp16 amax whose inverse is finite, tested; below ~3.7e-37 it is inf and callers take
// int8_code). fmaxf(v, -127) keeps a NaN product at -127, as the clamp does;
// adding 1.5 * 2^23 rounds v to the nearest integer, ties to even (ulp 1 there, and the
// constant is even), leaving rint(v) + 0xC00000 in the bits: the low byte is rint(v) as a
// two's-complement byte. One FMNMX and one FADD instead of two FMNMX and an F2I.
MLOPS_HD uint32_t int8_code_bits(float y, float inv) {
  return f32_bits(fmaxf(y * inv, -127.0f) + 12582912.0f);
}

// amax / 127 (int8_scale) without a division, for amax a bf16 / fp16 value (finite or inf):
// q = amax * RN(1/127), then one FMA correction with the exact remainder. Equal to the
// correctly rounded quotient for every such amax (tested exhaustively: all 2^15 positive bf16
// and fp16 values, subnormals included); inf / 127 = inf is selected (the remainder is NaN).
MLOPS_HD float div127_bf16(float amax) {
  constexpr float c = 1.0f / 127.0f;
  const float q = amax * c;
  const float r = fmaf(-q, 127.0f, amax);
  const float s = fmaf(r, c, q);
  return amax == INFINITY ? amax : s;
}

// amax / 6 (nvfp4_block's bs), the same construction (tested the same way).
MLOPS_HD float div6_bf16(float amax) {
  constexpr float c = 1.0f / 6.0f;
  const float q = amax * c;
  const float r = fmaf(-q, 6.0f, amax);
  const float s = fmaf(r, c, q);
  return amax == INFINITY ? amax : s;
}

// ---- E2M1 --------------------------------------------------------------------------------
// f32_to_e2m1(v) for v in [-6, 6] (not NaN: callers clamp), without the compare chain.
// The E2M1 grid has step 0.5 below 2, 1 in [2, 4] and 2 in [4, 6]: adding M = 2^22 (ulp 0.5),
// 2^23 (ulp 1) or 2^24 (ulp 2), picked by |v|'s binade (at least 1.0's), rounds |v| to that
// grid with ties to the even step, which is the even code (f32_to_e2m1's <= / < pattern);
// the step count (bits of the sum less M's) plus 0, 2 or 4 is the code, sign in bit 3.
MLOPS_HD uint32_t e2m1_code_fast(float v) {
  const uint32_t u = f32_bits(v);
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t e = (a >> 23) > 127u ? (a >> 23) : 127u;
  const uint32_t m = (e + 22u) << 23;
  const uint32_t s = f32_bits(bits_f32(a) + bits_f32(m));
  return (s - m + 2u * (e - 127u)) | ((u >> 28) & 8u);
}

// nvfp4_code(p, 1)'s nibble (the clamp to [-6, 6] included: a NaN product gives -6's code,
// 0xF) in about 9 instructions instead of e2m1_code_fast's ~13 with its clamp: the binade's
// magic M = 2^(22+e') (e' = 0, 1, 2 for |v| < 2, [2, 4), [4, 6]) is taken with 2e' ulps added,
// so the grid step count that the FADD leaves in the low bits is already the code (count +
// 2e' <= 7: bit 3 stays clear, and M's low bits are 2e', even, so ties still go to the even
// count, as in e2m1_code_fast); m = 2^e' comes from max(|v|, 1)'s exponent field, and
// 2e' + 254 from m >> 22. The sign joins in the LOP3 that masks the code (v >> 28 is at most
// 15, so its bits above 2 are the sign alone).
// Proven on every float p (all 2^32 patterns) by tests/c/codes_fast_exhaustive.cpp.
// Why (ncu run 25, H200, 2048x4096 NVFP4 r16lx2): 8.70 M warp instructions against INT8's
// 5.91 M and the plain norm's 3.29 M: ~10.7 more thread instructions an element than INT8,
// the E2M1 codes (FMUL, 2 clamps, ~10 integer operations, the shift and OR into the word).
MLOPS_HD uint32_t e2m1_nibble(float p) {
  const float v = fmaxf(p, -6.0f);
  const float a = fminf(fabsf(v), 6.0f);
  const uint32_t m = f32_bits(fmaxf(a, 1.0f)) & 0x7f800000u;
  const uint32_t s = f32_bits(a + bits_f32(m + ((22u << 23) - 254u) + (m >> 22)));
  const uint32_t sh = f32_bits(v) >> 28;  // sign at bit 3, and bits 0-2 that the select drops
#if defined(__CUDA_ARCH__)
  // (s & 7) | (sh & ~7) as one LOP3: written in C, nvcc 13.0 knows sh < 16, turns ~7 into 8
  // and emits two LOP3 (two constants)
  uint32_t r;
  asm("lop3.b32 %0, %1, 7, %2, 0xe2;" : "=r"(r) : "r"(s), "r"(sh));
  return r;
#else
  return (s & 7u) | (sh & ~7u);
#endif
}

// e2m1_nibble with the binade's magic from one IMAD (the "f" variants): m = 2^e' comes from
// max(|v|, 1) >= 1, whose bits >> 23 are its biased exponent E = 127 + e' alone (sign 0, the
// mantissa shifted out), and the magic's bits (E + 22) << 23 plus 2e' are E * (2^23 + 2) +
// (22 << 23) - 254: SHF + IMAD instead of LOP3 (mask) + LEA.HI + VIADD. The same integer as
// e2m1_nibble's m + ((22 << 23) - 254) + (m >> 22) for m = E << 23, so the same nibble for
// every p (tests/c/codes_fast_exhaustive.cpp: every float against e2m1_nibble).
MLOPS_HD uint32_t e2m1_magic(float b) { return (f32_bits(b) >> 23) * ((1u << 23) + 2u) + ((22u << 23) - 254u); }

MLOPS_HD uint32_t e2m1_merge_sign(uint32_t s, uint32_t sh) {
#if defined(__CUDA_ARCH__)
  uint32_t r;  // (s & 7) | (sh & ~7) as one LOP3 (see e2m1_nibble)
  asm("lop3.b32 %0, %1, 7, %2, 0xe2;" : "=r"(r) : "r"(s), "r"(sh));
  return r;
#else
  return (s & 7u) | (sh & ~7u);
#endif
}

MLOPS_HD uint32_t e2m1_nibble_f(float p) {
  const float v = fmaxf(p, -6.0f);
  const float a = fminf(fabsf(v), 6.0f);
  const uint32_t s = f32_bits(a + bits_f32(e2m1_magic(fmaxf(a, 1.0f))));
  return e2m1_merge_sign(s, f32_bits(v) >> 28);
}

// e2m1_nibble_f without the clamp to +6, for p NaN or |p| < 7: e2m1_nibble(p) there. A
// magnitude a in (6, 7) is in [4, 8)'s binade (step 2): a + 2^24 rounds to 6's count (a / 2 <
// 3.5), which is the clamp's code 7; -6's lower clamp stays (it turns a NaN into -6, 0xF).
// Why: NVFP4 blocks whose scale is not clamped at 448 (amax / 6 <= 448, and no global
// factor) have |y * mul| <= 6 / ((1 - 2^-4)(1 - 2^-24)) (1 + 2^-24)^2 < 6.41: the E4M3 scale
// is amax / 6 rounded to 3 mantissa bits (relative error <= 2^-4), mul its rounded inverse,
// so one FMNMX an element less on every such block (tested for every float with |p| < 7 and
// every NaN pattern sampled).
MLOPS_HD uint32_t e2m1_nibble_near(float p) {
  const float v = fmaxf(p, -6.0f);
  const uint32_t s = f32_bits(fabsf(v) + bits_f32(e2m1_magic(fmaxf(fabsf(v), 1.0f))));
  return e2m1_merge_sign(s, f32_bits(v) >> 28);
}

// e2m1_nibble_near without the clamp at -6, for finite p with |p| < 7: e2m1_nibble(p) there
// (p in (-7, -6) rounds to 6's code 7 with the sign, as the clamp's -6). The NaN that the clamp
// handles is the caller's to exclude (the "f" kernel's NaN-propagating block amax and its vote).
// Tested for every float with |p| < 7.
MLOPS_HD uint32_t e2m1_nibble_finite(float p) {
  const uint32_t s = f32_bits(fabsf(p) + bits_f32(e2m1_magic(fmaxf(fabsf(p), 1.0f))));
  return e2m1_merge_sign(s, f32_bits(p) >> 28);
}

// e4m3_to_f32 for a code of a positive normal E4M3 value (nvfp4 block scales are clamped to
// [2^-6, 448]: always normal): exponent rebias and shift, no branch.
MLOPS_HD float e4m3_normal_to_f32(uint32_t code) { return bits_f32(((code & 0x7fu) << 20) + (120u << 23)); }

}  // namespace mlops::norm
