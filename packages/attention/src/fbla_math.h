// The arithmetic of FBLA that runs both in the kernels and in the host emulation (MLOPS_HD):
// one piece of code, the same bits. Device code is built with -fmad=false and host code with
// -ffp-contract=off (cmake/mlops.cmake), so a*b+c is fused only where written as fmaf; division
// is IEEE on both sides (nvcc's default -prec-div=true).
#pragma once
#include "mlops/common/exp.h"
#include "mlops/common/hd.h"
#include "mlops/common/round.h"
#include "mlops/fbla.h"

namespace mlops::fbla {

constexpr int kGroup = MLOPS_FBLA_GROUP;           // tokens a group
constexpr int kBlock = MLOPS_FBLA_BLOCK;           // tokens a refine block
constexpr int kBlocksPerGroup = kGroup / kBlock;   // 8
constexpr int kChunkGroups = MLOPS_FBLA_CHUNK_GROUPS;
constexpr int kChunkTokens = kChunkGroups * kGroup;  // 256
constexpr int kLevels = 63;                        // 6-bit codes 0 .. 63
constexpr int kHeadBatch = 8;                      // q heads a decode pass holds at once (no effect on results)

struct Layout {
  int D, cb, fb;
  int64_t kmin, kscale, vmin, vscale, kc, kf, v, bytes;  // byte offsets in a record, its size
  int64_t row;                                           // bytes of one bit plane of one token: D / 8
};

MLOPS_HD Layout layout(int D, int mode) {
  Layout l;
  l.D = D;
  l.cb = mode == MLOPS_FBLA_4_2 ? 4 : 3;
  l.fb = 6 - l.cb;
  l.row = D / 8;
  l.kmin = 0;
  l.kscale = 4 * int64_t(D);
  l.vmin = 8 * int64_t(D);
  l.vscale = l.vmin + 4 * kGroup;
  l.kc = l.vscale + 4 * kGroup;
  l.kf = l.kc + int64_t(kGroup) * l.cb * l.row;
  l.v = l.kf + int64_t(kGroup) * l.fb * l.row;
  l.bytes = l.v + int64_t(kGroup) * 6 * l.row;
  return l;
}

// ---- quantization (the encoder) -------------------------------------------------------------
// min / max in a fixed order (the caller's loop order): comparisons, exact.
MLOPS_HD void minmax_step(float x, float& mn, float& mx) {
  mn = x < mn ? x : mn;
  mx = x > mx ? x : mx;
}

// scale = (max - min) / 63 (stored); inv = 63 / (max - min) (used to pick codes); 0 for a flat range.
MLOPS_HD void quant_range(float mn, float mx, float& scale, float& inv) {
  const float range = mx - mn;
  scale = range / float(kLevels);
  inv = range > 0.0f ? float(kLevels) / range : 0.0f;
}

MLOPS_HD int quant_code(float x, float mn, float inv) {
  float r = rint_even((x - mn) * inv);
  r = r < 0.0f ? 0.0f : (r > float(kLevels) ? float(kLevels) : r);
  return int(r);
}

MLOPS_HD float dequant(float mn, float scale, int code) { return mn + scale * float(code); }

// ---- the V codes' order in a record: fragment-ordered (FO, since session 21) -------------------
// V codes are whole 6-bit codes in the bytes of the refine's P V MMA A fragments (mma.m16n8k32 s8: lane
// L = 4 gid + tig; register j, byte i holds row gid + 8 (j & 1), k 16 (j >> 1) + 4 tig + i), with row = channel
// and k = token: slice sl (tokens 32 sl ..), tile T (channels 16 T ..), register j, byte i of lane L is
//   V code of token 32 sl + 16 (j >> 1) + 4 tig + i, channel 16 T + gid + 8 (j & 1).
// A tile's 4 registers (16 codes, 96 bits) are 3 words: word v (0, 1, 2) byte i = register v's byte-i code in
// bits 0 - 5 and bits 2v, 2v + 1 of register 3's byte-i code in bits 6 - 7. Lane L's 3 D / 16 words of a slice
// (word 3 T + v) are 3 D / 64 uint4s laid out [slice][uint4 q][lane]: a warp's load of one q is 512 contiguous
// bytes, and 4 consecutive tokens of one channel share a word. Why: a tile is then 3 loads' worth and 6 ALU
// instructions (fo_v_tile), where the bit planes took ~45 a tile (docs/attention.md "The V codes").
MLOPS_HD constexpr int fo_v_slice_words(int D) { return 6 * D; }  // 32 tokens x D codes x 6 bits / 32

// The uint32 index, in the V region, of word v of tile T of lane L in slice sl.
MLOPS_HD int fo_v_word(int D, int sl, int T, int v, int L) {
  const int w = 3 * T + v;
  return sl * fo_v_slice_words(D) + (w >> 2) * 128 + 4 * L + (w & 3);
}

// Word `idx` of a group's V region from the group's codes (codes[t * ld + d], 0 .. 63): the encoder's packing.
MLOPS_HD uint32_t fo_v_pack_word(const uint8_t* codes, int ld, int D, int idx) {
  const int sl = idx / fo_v_slice_words(D), rem = idx % fo_v_slice_words(D);
  const int L = (rem & 127) >> 2, w = 4 * (rem >> 7) + (rem & 3);
  const int T = w / 3, v = w % 3, gid = L >> 2, tig = L & 3;
  const uint8_t* rv = codes + (32 * sl + 16 * (v >> 1) + 4 * tig) * ld + 16 * T + gid + 8 * (v & 1);
  const uint8_t* r3 = codes + (32 * sl + 16 + 4 * tig) * ld + 16 * T + gid + 8;
  uint32_t word = 0;
  for (int i = 0; i < 4; ++i)
    word |= static_cast<uint32_t>(rv[i * ld] | (((r3[i * ld] >> (2 * v)) & 3) << 6)) << (8 * i);
  return word;
}

// A tile's 4 A registers from its 3 words (6 instructions: 4 LOP3, 2 shifts merged by the compiler).
MLOPS_HD void fo_v_tile(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t (&a)[4]) {
  constexpr uint32_t kTop = 0xC0C0C0C0u;
  a[0] = w0 & 0x3F3F3F3Fu;
  a[1] = w1 & 0x3F3F3F3Fu;
  a[2] = w2 & 0x3F3F3F3Fu;
  a[3] = ((((w0 & kTop) >> 2) | (w1 & kTop)) >> 2 | (w2 & kTop)) >> 2;  // bits 6, 7 of word v -> code bits 2v, 2v + 1
}

// The codes of channel d, tokens u0 .. u0 + 3 (u0 % 4 == 0: four consecutive tokens share their words): byte q =
// the code of token u0 + q (1 load, or 3 for a tile's register 3). The kernels' per-channel reader and the host's.
MLOPS_HD uint32_t fo_v_codes_of_channel(const uint32_t* words, int D, int u0, int d) {
  const int sl = u0 >> 5, tt = u0 & 31, L = 4 * (d & 7) + ((tt & 15) >> 2), T = d >> 4;
  const int j = 2 * (tt >> 4) + ((d >> 3) & 1);
  if (j < 3) return words[fo_v_word(D, sl, T, j, L)] & 0x3F3F3F3Fu;
  uint32_t a[4];
  fo_v_tile(words[fo_v_word(D, sl, T, 0, L)], words[fo_v_word(D, sl, T, 1, L)], words[fo_v_word(D, sl, T, 2, L)], a);
  return a[3];
}

// The V code of (token t, channel d) from a group's V region (words: uint32, little-endian).
MLOPS_HD int fo_v_code(const uint32_t* words, int D, int t, int d) {
  return (fo_v_codes_of_channel(words, D, t & ~3, d) >> (8 * (t & 3))) & 63;
}

// ---- the query against a closed group ------------------------------------------------------
// K of a group is k[t][d] = k_min[d] + k_scale[d] * code[t][d], so
//   q . k[t] = sum_d q_d k_min[d] + sum_d (q_d k_scale[d]) code[t][d].
// w_d = q_d * k_scale[d] is quantized per (head, group) to two int8 digits: with x = w_d * 127 / amax,
// hi = rint(x), lo = rint((x - hi) * 256) (both clamped to +-127), so w_d ~ s_w * (256 hi + lo),
// s_w = amax / (127 * 256): a 15-bit q against the codes, the relative error about 2^-16 instead of
// one int8's 2^-8. Both digit dots are DP4A (exact integers); the combined what . code =
// 256 (hi . code) + lo . code < 2^31, and
//   score[t] = (bias + s_w * float(what . code[t])) * scale.
// A group whose largest |q_d k_scale_d| is at most 2^-96 gets inv 0: all digits 0, its score the bias term
// alone (off by < 2^-96 * 63 * D * scale). Why: 127 / amax overflows to inf below ~3.7e-37 (bf16 q ~ 1e-38),
// and then a zero w_d gives inf * 0 = NaN, whose int conversion is undefined in C++ (x86 gives INT_MIN, the
// GPU 0) and 256 * INT_MIN overflows. The outputs did not show it (s_w is subnormal there, the scores ~0),
// but the host emulation had undefined behaviour; test_tiny_q_digits / test_tiny_q_gpu_equals_host run it.
constexpr float kTinyWeight = 1.2621774483536189e-29f;  // 2^-96
MLOPS_HD float qhat_inv(float amax) { return amax > kTinyWeight ? 127.0f / amax : 0.0f; }

MLOPS_HD float qhat_sw(float amax) { return amax / 32512.0f; }

MLOPS_HD float qhat_w(float qf, float kscale) { return qf * kscale; }

MLOPS_HD int clamp127(float r) { return int(r < -127.0f ? -127.0f : (r > 127.0f ? 127.0f : r)); }

MLOPS_HD void qhat_digits(float w, float inv, int& hi, int& lo) {
  const float x = w * inv;
  hi = clamp127(rint_even(x));
  lo = clamp127(rint_even((x - float(hi)) * 256.0f));
}

MLOPS_HD float score_of(float bias, float s_w, int32_t idot, float scale) {
  return (bias + s_w * float(idot)) * scale;
}

// With an integer 2x dot (the coarse centre and its bounds are half-integers), same rounding path:
// for i2 >= 2 * idot, score_half(i2) >= score_of(idot) (every step is monotone: s_w >= 0, scale > 0).
MLOPS_HD float score_half(float bias, float s_w, int32_t idot2, float scale) {
  return (bias + s_w * (0.5f * float(idot2))) * scale;
}

// The coarse code of channel d is cc = code >> fb; its centre (cc << fb) + (2^fb - 1) / 2. Twice the
// centre dot: (what . cc) << (fb + 1) + (2^fb - 1) * sum(what). The full code lies within
// (2^fb - 1) / 2 of the centre, so |2 what.code - centre2| <= (2^fb - 1) * sum|what| = err2.
MLOPS_HD int32_t coarse_dot2(int32_t cdot, int32_t wsum, int fb) {
  return cdot * (1 << (fb + 1)) + ((1 << fb) - 1) * wsum;
}

MLOPS_HD int32_t coarse_err2(int32_t wabs, int fb) { return ((1 << fb) - 1) * wabs; }

// ---- P V in the digits form (MLOPS_FBLA_PV_DIGITS) ------------------------------------------
// A chunk's tokens split into slices of 32 (4 a group). In a closed slice, the weight of token t for a head
// is w_t = p_t * v_scale[t] (>= 0); with wmax the slice's largest, w_t ~ s * (256 hi_t + lo_t) by the q-digit
// rule (qhat_digits with inv = 127 / wmax, s = wmax / 32512), so sum_t w_t code[t][d] ~ s * I[d] with
// I[d] = sum_t (256 hi_t + lo_t) code[t][d] an exact integer (|.| < 32512 * 63 * 32 < 2^26; the tensor
// core's s8 MMA gives it in any order), and the slice's P V is fmaf(s, float(I[d]), sum_t p_t v_min[t]).
// A slice whose wmax is below 2^-96 weighs nothing (inv 0, all digits 0): 127 / wmax stays finite.
constexpr int kSlice = 32;
constexpr int kSlicesPerGroup = kGroup / kSlice;  // 4
constexpr int kSlicesPerChunk = kChunkGroups * kSlicesPerGroup;  // 8

MLOPS_HD float pv_inv(float wmax) { return wmax > kTinyWeight ? 127.0f / wmax : 0.0f; }

// qhat_digits for a weight within the bound its inv came from: |w| <= wmax and inv = pv_inv(wmax) = qhat_inv(wmax) (a
// slice's P V weights, p >= 0 and v_scale >= 0 as the encoder writes them; since session 25 also the q digits, w = q
// k_scale with wmax the warp's largest |w|). Then x = w * inv is in (-127.5, 127.5) or NaN (inv = RN(127 / wmax) <= 127
// / wmax (1 + 2^-24), so |x| <= 127 (1 + 2^-24)^2; inv 0: x = 0 or NaN), so hi's clamp to +-127 changes nothing and
// float(hi) is rint(x) itself: the same hi / lo as qhat_digits (on the device int(NaN) is 0 either way), four
// instructions fewer a weight (the clamp's compare / min / select and the int -> float of hi). lo keeps its clamp:
// (x - hi) * 256 may round to +-128. tests/c/exp_le_check.cpp checks it against qhat_digits for both signs.
MLOPS_HD int clamp127_nan(float r);
MLOPS_HD void bounded_digits(float w, float inv, int& hi, int& lo) {
  const float x = w * inv;
  const float hf = rint_even(x);
  hi = int(hf);
  lo = clamp127_nan(rint_even((x - hf) * 256.0f));
}

// clamp127 as two NaN-propagating min / max on sm_80+ (min.NaN / max.NaN: r > 127 ? 127 : r and r < -127 ? -127 : r,
// NaN kept as clamp127 keeps it, and int(NaN) is 0 on the device either way): 2 instructions instead of 3.
MLOPS_HD int clamp127_nan(float r) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float y;
  asm("min.NaN.f32 %0, %1, 0f42FE0000;" : "=f"(y) : "f"(r));
  asm("max.NaN.f32 %0, %0, 0fC2FE0000;" : "+f"(y));
  return int(y);
#else
  return clamp127(r);
#endif
}

// fmax_step(m, s) where m is not NaN and neither is -0 (a slice's largest P V weight: m starts at +0, the weights are
// p * v_scale >= +0, inf or NaN): one max instruction instead of a compare and a select. fmax_step keeps m for a NaN s,
// and so does fmaxf; for equal m and s both give the one value (no -0 to tell apart).
MLOPS_HD float fmax_nonneg(float m, float s) { return fmaxf(m, s); }

// exp_det(x) for x <= 88.5 or NaN (p = exp(s - m) with m the max of the s: x <= 0 or NaN), without branches: the
// same operations on exp_det's polynomial path; x < -103.5 (and -inf) gives 0, NaN gives x, as exp_det. The input of
// that path is x where x >= -103.5, else 0 (no int(NaN) / int(-inf) on the host); the result is selected after. The
// scaling splits ni as h = floor(ni / 2) (a shift) where exp_det takes trunc(ni / 2): for ni in [-150, 128] both
// p * 2^h are exact (normal) and the second product rounds p * 2^ni once, so the same bits (checked for every float
// x <= 88.5 and NaN against exp_det: tests/c/exp_le_check.cpp).
MLOPS_HD float exp_det_le(float x) {
  const bool in = x >= -103.5f;  // false: x < -103.5 or NaN
  const float xc = in ? x : 0.0f;
  float n;
  const float p = exp_det_reduced(xc, n);
  const int ni = int(n);
  const int h = ni >> 1;
  const float s1 = bits_f32(uint32_t(h + 127) << 23);
  const float s2 = bits_f32(uint32_t(ni - h + 127) << 23);
  const float e = (p * s1) * s2;
  return in ? e : (x == x ? 0.0f : x);
}

// ---- softmax pieces -----------------------------------------------------------------------
MLOPS_HD float neg_inf() { return bits_f32(0xff800000u); }

MLOPS_HD float fmax_step(float m, float s) { return s > m ? s : m; }

}  // namespace mlops::fbla
