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

// ---- Session 13: fewer instructions in the INT8 and NVFP4 epilogues ------------------------

// prmt.b32 (generic form) on the device, its definition on the host: byte i of the result is
// byte (s >> 4i) & 7 of {b, a}, or, where bit 3 of that selector nibble is set, that byte's
// sign bit replicated over all 8 bits (PTX ISA, prmt; __byte_perm documents only the 3 low
// bits, so the device form is the instruction itself).
template <uint32_t S>
MLOPS_HD uint32_t prmt(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "n"(S));
  return r;
#else
  const uint64_t x = uint64_t(b) << 32 | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t c = (S >> (4 * i)) & 0xfu;
    uint32_t v = uint32_t(x >> (8 * (c & 7u))) & 0xffu;
    if (c & 8u) v = (v & 0x80u) ? 0xffu : 0u;
    r |= v << (8 * i);
  }
  return r;
#endif
}

// INT8 block inverse and scale of a bf16 block amax from a table, without a division.
// a = m * 2^(E - 127) with m = 1 + i / 128 (a bf16 value: 7 mantissa bits, i = bits 16-22), so
// 127 / a = (127 / m) * 2^(127 - E) and a / 127 = (m / 127) * 2^(E - 127): RN commutes with the
// power of two while the result stays normal, so RN(127 / m) and RN(m / 127) (the table, both as
// fp32 bits, computed by numpy's IEEE division and checked by tests/c/codes_fast_exhaustive.cpp)
// times the exact 2^(127 - E) (bits (254 - E) << 23) and 2^(E - 127) (bits E << 23: a's exponent
// field) are int8_inv(a) and int8_scale(a) bit for bit, for 8 <= E <= 253 (a in [2^-119, 2^127):
// the inverse finite and both factors and results normal). Returns whether a is in that range;
// elsewhere (a zero block, a tiny or huge amax, inf) inv and scale are garbage and the caller
// divides. Tested on every bf16 amax. Why: the pair division (pair_div2: div.rn's ~10
// instructions, its slow-path region, a SHFL and selects), int8_inv's select, the inf-inverse
// branch and the scale's FMA correction become a table load, two integer and two FMUL a block.
#define MLOPS_NORM_INT8_TAB \
    0x42fe0000u, 0x3c010204u, 0x42fc07f0u, 0x3c020408u, 0x42fa17a1u, 0x3c03060cu, 0x42f82ee7u, 0x3c040810u, \
    0x42f64d93u, 0x3c050a14u, 0x42f4737du, 0x3c060c18u, 0x42f2a07au, 0x3c070e1cu, 0x42f0d463u, 0x3c081020u, \
    0x42ef0f0fu, 0x3c091224u, 0x42ed505au, 0x3c0a1428u, 0x42eb981eu, 0x3c0b162cu, 0x42e9e637u, 0x3c0c1830u, \
    0x42e83a84u, 0x3c0d1a34u, 0x42e694e1u, 0x3c0e1c38u, 0x42e4f52fu, 0x3c0f1e3cu, 0x42e35b4du, 0x3c102041u, \
    0x42e1c71cu, 0x3c112245u, 0x42e0387fu, 0x3c122449u, 0x42deaf58u, 0x3c13264du, 0x42dd2b8au, 0x3c142851u, \
    0x42dbacf9u, 0x3c152a55u, 0x42da338bu, 0x3c162c59u, 0x42d8bf26u, 0x3c172e5du, 0x42d74fafu, 0x3c183061u, \
    0x42d5e50du, 0x3c193265u, 0x42d47f2au, 0x3c1a3469u, 0x42d31decu, 0x3c1b366du, 0x42d1c13du, 0x3c1c3871u, \
    0x42d06907u, 0x3c1d3a75u, 0x42cf1533u, 0x3c1e3c79u, 0x42cdc5acu, 0x3c1f3e7du, 0x42cc7a5du, 0x3c204081u, \
    0x42cb3333u, 0x3c214285u, 0x42c9f019u, 0x3c224489u, 0x42c8b0fdu, 0x3c23468du, 0x42c775cbu, 0x3c244891u, \
    0x42c63e70u, 0x3c254a95u, 0x42c50adcu, 0x3c264c99u, 0x42c3dafdu, 0x3c274e9du, 0x42c2aec1u, 0x3c2850a1u, \
    0x42c18618u, 0x3c2952a5u, 0x42c060f2u, 0x3c2a54a9u, 0x42bf3f3fu, 0x3c2b56adu, 0x42be20f0u, 0x3c2c58b1u, \
    0x42bd05f4u, 0x3c2d5ab5u, 0x42bbee3eu, 0x3c2e5cb9u, 0x42bad9bfu, 0x3c2f5ebdu, 0x42b9c869u, 0x3c3060c2u, \
    0x42b8ba2fu, 0x3c3162c6u, 0x42b7af01u, 0x3c3264cau, 0x42b6a6d5u, 0x3c3366ceu, 0x42b5a19cu, 0x3c3468d2u, \
    0x42b49f4au, 0x3c356ad6u, 0x42b39fd3u, 0x3c366cdau, 0x42b2a32au, 0x3c376edeu, 0x42b1a945u, 0x3c3870e2u, \
    0x42b0b216u, 0x3c3972e6u, 0x42afbd94u, 0x3c3a74eau, 0x42aecbb3u, 0x3c3b76eeu, 0x42addc68u, 0x3c3c78f2u, \
    0x42acefa9u, 0x3c3d7af6u, 0x42ac056bu, 0x3c3e7cfau, 0x42ab1da4u, 0x3c3f7efeu, 0x42aa384bu, 0x3c408102u, \
    0x42a95555u, 0x3c418306u, 0x42a874bau, 0x3c42850au, 0x42a7966fu, 0x3c43870eu, 0x42a6ba6cu, 0x3c448912u, \
    0x42a5e0a7u, 0x3c458b16u, 0x42a50919u, 0x3c468d1au, 0x42a433b8u, 0x3c478f1eu, 0x42a3607bu, 0x3c489122u, \
    0x42a28f5cu, 0x3c499326u, 0x42a1c052u, 0x3c4a952au, 0x42a0f354u, 0x3c4b972eu, 0x42a0285bu, 0x3c4c9932u, \
    0x429f5f5fu, 0x3c4d9b36u, 0x429e985au, 0x3c4e9d3au, 0x429dd343u, 0x3c4f9f3eu, 0x429d1014u, 0x3c50a143u, \
    0x429c4ec5u, 0x3c51a347u, 0x429b8f50u, 0x3c52a54bu, 0x429ad1adu, 0x3c53a74fu, 0x429a15d7u, 0x3c54a953u, \
    0x42995bc6u, 0x3c55ab57u, 0x4298a375u, 0x3c56ad5bu, 0x4297ecdcu, 0x3c57af5fu, 0x429737f6u, 0x3c58b163u, \
    0x429684beu, 0x3c59b367u, 0x4295d32cu, 0x3c5ab56bu, 0x4295233bu, 0x3c5bb76fu, 0x429474e5u, 0x3c5cb973u, \
    0x4293c825u, 0x3c5dbb77u, 0x42931cf6u, 0x3c5ebd7bu, 0x42927351u, 0x3c5fbf7fu, 0x4291cb31u, 0x3c60c183u, \
    0x42912492u, 0x3c61c387u, 0x42907f6eu, 0x3c62c58bu, 0x428fdbc1u, 0x3c63c78fu, 0x428f3984u, 0x3c64c993u, \
    0x428e98b4u, 0x3c65cb97u, 0x428df94bu, 0x3c66cd9bu, 0x428d5b45u, 0x3c67cf9fu, 0x428cbe9du, 0x3c68d1a3u, \
    0x428c234fu, 0x3c69d3a7u, 0x428b8957u, 0x3c6ad5abu, 0x428af0afu, 0x3c6bd7afu, 0x428a5954u, 0x3c6cd9b3u, \
    0x4289c341u, 0x3c6ddbb7u, 0x42892e72u, 0x3c6eddbbu, 0x42889ae4u, 0x3c6fdfbfu, 0x42880892u, 0x3c70e1c4u, \
    0x42877777u, 0x3c71e3c8u, 0x4286e792u, 0x3c72e5ccu, 0x428658dcu, 0x3c73e7d0u, 0x4285cb53u, 0x3c74e9d4u, \
    0x42853ef3u, 0x3c75ebd8u, 0x4284b3b9u, 0x3c76eddcu, 0x428429a0u, 0x3c77efe0u, 0x4283a0a6u, 0x3c78f1e4u, \
    0x428318c6u, 0x3c79f3e8u, 0x428291feu, 0x3c7af5ecu, 0x42820c4au, 0x3c7bf7f0u, 0x428187a6u, 0x3c7cf9f4u, \
    0x42810410u, 0x3c7dfbf8u, 0x42808185u, 0x3c7efdfcu, 0x42800000u, 0x3c800000u, 0x427efeffu, 0x3c808102u
#if defined(__CUDACC__)
// the device's copy twice over: indexed by bits 16-23 of a (one PRMT), its exponent's low bit included
__device__ alignas(8) const uint32_t kInt8TabDev[512] = {MLOPS_NORM_INT8_TAB, MLOPS_NORM_INT8_TAB};
#endif
alignas(8) inline constexpr uint32_t kInt8TabHost[256] = {MLOPS_NORM_INT8_TAB};
#undef MLOPS_NORM_INT8_TAB

MLOPS_HD bool int8_tab(float a, float& inv, float& scale) {
  const uint32_t b = f32_bits(a);
#if defined(__CUDA_ARCH__)
  const uint2 t = __ldg(reinterpret_cast<const uint2*>(kInt8TabDev) + prmt<0x4442u>(b, 0u));  // bits 16-23
  const uint32_t tinv = t.x, tsc = t.y;
#else
  const uint32_t i = (b >> 16) & 0x7fu;
  const uint32_t tinv = kInt8TabHost[2 * i], tsc = kInt8TabHost[2 * i + 1];
#endif
  const uint32_t q = b & 0x7f800000u;  // E << 23: 2^(E - 127)
  inv = bits_f32(tinv) * bits_f32((254u << 23) - q);
  scale = bits_f32(tsc) * bits_f32(q);
  return b - (8u << 23) < (246u << 23);
}

// The sign bits of the NVFP4 word of 8 values y_i, at bit 4i + 3: the high byte of each value's
// fp32 bits with its sign replicated (prmt's msb selector bit), the even elements' (one a byte,
// j = 0..3) masked to bit 3 of byte j, the odd ones' to bit 7. 6 PRMT and 2 LOP3 for 8 values,
// instead of a SHF and a LOP3 (merge) a value. From y's fp32 values, not its packed words: those
// kept alive to the codes cost r16lx4wf's 48-register instance a spill (ptxas 13.0, sm_90).
MLOPS_HD uint32_t e2m1_signs8(const float y[8]) {
  const uint32_t e = prmt<0x7610u>(prmt<0x00FBu>(f32_bits(y[0]), f32_bits(y[2])),
                                   prmt<0xFB00u>(f32_bits(y[4]), f32_bits(y[6])));  // e0 e2 e4 e6
  const uint32_t o = prmt<0x7610u>(prmt<0x00FBu>(f32_bits(y[1]), f32_bits(y[3])),
                                   prmt<0xFB00u>(f32_bits(y[5]), f32_bits(y[7])));  // e1 e3 e5 e7
  return (e & 0x08080808u) | (o & 0x80808080u);
}

// nvfp4_codes8<4>'s word (e2m1_nibble_finite of p_i = y_i * mul, two a byte, even index low)
// for finite y_i with |p_i| < 7 and mul > 0 (the "f" near path: no NaN in the block, no global
// factor, mul = 1 / scale > 0), signs = e2m1_signs8 of y as stored. Same bits: |p_i| = |y_i| *
// mul (RN is symmetric), sign(p_i) = sign(y_i) (mul > 0; -0 included), and the magic sum s_i =
// |p_i| + M_i carries the code (<= 7) in its low 3 bits with bits 3-22 zero (M_i's mantissa is
// 2e', the sum's is 2e' + the grid count <= 7), so s_0 + s_1 << 4 + s_2 << 8 + s_3 << 12 has the
// four codes in its low 16 bits (the exponent bits land at bit 23 and above). Tested against
// e2m1_nibble_finite value by value (tests/c/codes_fast_exhaustive.cpp). Why: the sign SHF, the
// merging LOP3 and the joining LEA a value (23 instructions for 8) become 6 LEA, 1 PRMT, 1 LOP3
// and e2m1_signs8's 6.
MLOPS_HD uint32_t e2m1_word_finite(const float y[8], float mul, uint32_t signs) {
  uint32_t s[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float a = fabsf(y[i]) * mul;
    s[i] = f32_bits(a + bits_f32(e2m1_magic(fmaxf(a, 1.0f))));
  }
  const uint32_t lo = s[0] + (s[1] << 4) + (s[2] << 8) + (s[3] << 12);
  const uint32_t hi = s[4] + (s[5] << 4) + (s[6] << 8) + (s[7] << 12);
  return prmt<0x5410u>(lo, hi) | signs;
}

}  // namespace mlops::norm
