// The "lx" lean variants: the lean row kernel (norm_row_lean.cuh) with every quantized output
// (INT8, FP8 static / dynamic, NVFP4) as a compile-time instance, and cheaper quantizers.
//
// Why (ncu run 19, H200, 16384x4096 bf16): r16lq's INT8 kernel issues 23.6 thread
// instructions an element (plain r16l4: ~11), issue slots 63 % busy, ALU pipe 50 %, DRAM 53 %;
// FP8 / NVFP4 had no lean instance at all (r16 / w2c2: 329-420 us, 5x the plain norm).
// What changes against r16lq, per lane and 8 values:
//   * INT8 codes: fmaxf + one FADD of 1.5 * 2^23 (int8_code_bits) instead of fmaxf, fminf and
//     cvt.rni (F2I, a conversion-pipe instruction);
//   * divisions: amax / 127 and amax / 6 by an FMA correction (div127_bf16 / div6_bf16, exact
//     for every bf16 / fp16 amax); the divisions by a block's amax or scale are shared by the
//     two lanes of a block over two units (pair_div2): one div.rn a lane per two blocks
//     (r16lq: one a block, r16l: two);
//   * FP8: cvt.rn.satfinite.e4m3x2.f32 (sm_89+) after the same clamp: RNE of a value already
//     in [-448, 448], the integer code's bits (GPU suite); integer code below sm_89;
//   * NVFP4: e2m1_code_fast (an FADD onto the E2M1 grid) instead of the compare chain, the
//     block scale decoded by a shift (always a normal E4M3 value).
// The arithmetic of y and its order are the lean kernel's; every code and scale is the bits
// of norm_math.h's quantizers (tests/c/codes_fast_exhaustive.cpp on the CPU, the GPU suite
// against the host emulation), so the host emulation is unchanged.
#pragma once
#include "norm_codes_fast.h"
#include "norm_row_lean.cuh"
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#include <cuda_fp8.h>
#endif

namespace mlops::norm {

// Whether the "lx" kernel takes the call: lean_call's, any quantized output. kResidual: the call may have a residual
// (the "u" kernels' add + norm, session 33).
template <class XT, bool kResidual = false>
inline bool leanq_call(const Params& p) {
  const bool out_ok = p.quant != MLOPS_QUANT_NONE || p.y != nullptr;
  return p.lean_rows && out_ok && p.kind == MLOPS_NORM_RMS && p.order == MLOPS_ORDER_HF && p.weight != nullptr &&
         p.bias == nullptr && (kResidual || p.residual == nullptr) && p.w_dtype == dtype_code<XT>() &&
         p.group == p.hidden && int64_t(p.units) * kUnit == p.hidden;
}

// Whether w_eff = w + weight_offset is w itself for every w: the offset is -0 (make_params
// keeps a zero offset as -0). The lx / lx2 instances without staged weights need it
// (mul_packed8); the launchers send other calls on.
inline bool w_as_stored(const Params& p) { return f32_bits(p.weight_offset) == 0x80000000u; }

// w + off of a lane's 8 stored w values (16 bytes), as fp32: WeightEff's and WeightPre's one conversion.
template <class XT>
__device__ __forceinline__ void weff8_of(uint4 q, float off, float w[8]) {
  Raw8<XT> wq;
  wq.q[0] = q;
  unpack8_pairs(wq, w);
#pragma unroll
  for (int i = 0; i < 8; ++i) w[i] = w[i] + off;
}

// w + weight_offset of a lane's 8 columns of unit k, as fp32. kWs: from the CTA's staged copy
// (stage_weff: fp32, the offset already added, two conflict-free LDS.128), else loaded (L1)
// and converted here. The same FADD either way, so the same bits.
template <class XT, int U, bool kWs>
struct WeightEff {
  const XT* wr;     // weight + lane * 8
  const float* ws;  // the staged copy (kWs)
  float off;
  __device__ __forceinline__ void get(int k, float w[8]) const {
    if constexpr (kWs) {
      const int lane = threadIdx.x & 31;
      const float4 a = reinterpret_cast<const float4*>(ws)[k * 64 + lane];
      const float4 b = reinterpret_cast<const float4*>(ws)[k * 64 + 32 + lane];
      w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
      w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
    } else {
      weff8_of<XT>(raw16(k), off, w);
    }
  }
  // The lane's 8 stored values of unit k (the packed multiply's operand: w as stored).
  __device__ __forceinline__ uint4 raw16(int k) const { return ld_const16(wr + k * kUnit); }  // L1: rows re-read w
};

// The same lane's w, loaded with the row's x before the sum of squares (kPre of norm_row_leanq2_kernel, session 33):
// the weight's DRAM round trip leaves the chain after the row fold, where WeightEff's loads sit (few rows, L2 cold:
// ~1 us a call). Registers: 4 a unit. Same values, same operations: the same bits.
template <class XT, int U>
struct WeightPre {
  Raw8<XT> w[U];
  float off;
  __device__ __forceinline__ void load(const XT* wr) {
#pragma unroll
    for (int k = 0; k < U; ++k) w[k].q[0] = ld_const16(wr + k * kUnit);
  }
  __device__ __forceinline__ void get(int k, float v[8]) const { weff8_of<XT>(w[k].q[0], off, v); }
  __device__ __forceinline__ uint4 raw16(int k) const { return w[k].q[0]; }
};

// The CTA's copy of w + weight_offset in fp32 (U units, 4 KB each), laid out so that a lane's
// 8 values of a unit are two float4 at [64k + lane] and [64k + 32 + lane]: the LDS.128 of a
// warp hit consecutive 16 bytes (no bank conflict). Why: per lane and unit it replaces an LDG,
// 8 unpacks and 8 FADD (2 of the ~11 instructions an element of the plain norm) with 2 LDS,
// for 32 elements staged a thread a CTA.
template <class XT, int U>
__device__ __forceinline__ void stage_weff(const Params& p, float* ws) {
  const XT* w = static_cast<const XT*>(p.weight);
#pragma unroll
  for (int c = threadIdx.x * 8; c < U * kUnit; c += kRowThreads * 8) {
    Raw8<XT> q;
    q.q[0] = ld_const16(w + c);
    float e[8];
    unpack8_pairs(q, e);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = e[i] + p.weight_offset;
    const int k = c / kUnit, l = (c % kUnit) / 8;
    reinterpret_cast<float4*>(ws)[k * 64 + l] = make_float4(e[0], e[1], e[2], e[3]);
    reinterpret_cast<float4*>(ws)[k * 64 + 32 + l] = make_float4(e[4], e[5], e[6], e[7]);
  }
}

// t = round_x(v * r) of a unit, packed: the first rounding.
template <class XT, bool kAgain>
__device__ __forceinline__ Raw8<XT> lean_t8(const Raw8<XT>& raw, float r) {
  float e[8];
  if constexpr (kAgain) unpack8_again(raw, e);
  else unpack8_pairs(raw, e);
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = e[i] * r;
  Raw8<XT> t;
  pack8<XT>(e, t);
  return t;
}

// y = round_x(w_eff * t) of a unit in fp32 (t unpacked, one FMUL an element, packed again): the
// second rounding.
template <class XT>
__device__ __forceinline__ Raw8<XT> mul_weff8(const Raw8<XT>& t, const float weff[8]) {
  float e[8];
  unpack8_pairs(t, e);
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = weff[i] * e[i];
  Raw8<XT> o;
  pack8<XT>(e, o);
  return o;
}

// y of one unit (a lane's 8 values) as x's dtype, packed: norm_row_lean_kernel's epilogue with
// weff = w + weight_offset.
template <class XT, bool kAgain>
__device__ __forceinline__ Raw8<XT> lean_y8(const Raw8<XT>& raw, const float weff[8], float r) {
  return mul_weff8<XT>(lean_t8<XT, kAgain>(raw, r), weff);
}

// Whether this device code has a packed multiply of x's type that rounds once: fp16 pairs on
// sm_53+ (mul.rn.f16x2), bf16 pairs on sm_80+ (fma.rn.bf16x2 with a -0 addend; sm_90 has
// mul.rn.bf16x2). Host code and older archs: no (the fp32 path).
template <class XT>
__device__ constexpr bool packed_mul_here() {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<XT, bf16>) return __CUDA_ARCH__ >= 800;
  else return __CUDA_ARCH__ >= 530;
#else
  return false;
#endif
}

// y = round_x(t * w) of a unit by one packed multiply a pair, for w as stored (weight_offset
// -0: w_eff = w + -0 = w for every w, -0 included): mul_weff8's bits.
// Why: the fp32 road costs ~4 instructions an element (two unpacks, FMUL, half a cvt; lean_y8 adds
// the offset's FADD), the packed multiply half of one (sm_90 bf16 16384x4096: the lx2 kernel
// of y alone from 15.8 to 11.5 SASS instructions an element).
// The same bits: mul.rn (fma.rn with a -0 addend) rounds the exact product once; the fp32 path
// rounds fp32's product, and that is the exact product wherever it can matter. fp16: products
// of fp16 values have <= 22 significant bits and magnitudes >= 2^-48, so fp32 holds them
// exactly. bf16: <= 16 significant bits; fp32 rounds only a product with a bit below 2^-149,
// i.e. one under 2^-133 (the smallest bf16 subnormal), where both roads give 0 or 2^-133 alike:
// fp32 can carry it at most up to 2^-134, the midpoint, which ties to 0 as the product below it
// does. tests/c/codes_fast_exhaustive.cpp checks every pair of finite bf16 values; inf and NaN
// products are inf and a NaN both ways (NaN payloads are not part of the contract: the integer
// rounding below sm_80 keeps a NaN's sign, cvt does not).
template <class XT>
__device__ __forceinline__ void mul_packed8(const Raw8<XT>& t, const Raw8<XT>& w, Raw8<XT>& o) {
#if defined(__CUDA_ARCH__)
  const uint32_t* a = reinterpret_cast<const uint32_t*>(&t);
  const uint32_t* b = reinterpret_cast<const uint32_t*>(&w);
  uint32_t* d = reinterpret_cast<uint32_t*>(&o);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<XT, bf16>) {
#if __CUDA_ARCH__ >= 900
      asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d[i]) : "r"(a[i]), "r"(b[i]));
#else
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d[i]) : "r"(a[i]), "r"(b[i]), "r"(0x80008000u));
#endif
    } else {
      asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d[i]) : "r"(a[i]), "r"(b[i]));
    }
  }
#else
  float b[8];  // host pass (never run: kPackW is false there): the fp32 road
  unpack8_pairs(w, b);
  o = mul_weff8<XT>(t, b);
#endif
}

// amax of a block of 16 (this lane's 8 values and its pair lane's): fmaxf ignores NaN and
// the order does not matter (no -0 after fabsf), so the bits of the host's block amax.
__device__ __forceinline__ float amax16(const float y[8]) {
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) a = fmaxf(a, fabsf(y[i]));
  return fmaxf(a, __shfl_xor_sync(0xffffffffu, a, 1));
}

// n0 / d0 and n1 / d1 (operands equal in the two lanes of a pair) with one div.rn a lane:
// the even lane divides the first, the odd one the second, one SHFL exchanges them. The
// operands are selected, not the quotients (else nvcc runs both divisions); div.rn is
// correctly rounded on either lane.
__device__ __forceinline__ void pair_div2(float n0, float d0, float n1, float d1, bool odd, float& q0, float& q1) {
  const float mine = (odd ? n1 : n0) / (odd ? d1 : d0);
  const float other = __shfl_xor_sync(0xffffffffu, mine, 1);
  q0 = odd ? other : mine;
  q1 = odd ? mine : other;
}

// The low bytes of 8 code words (float bits of rint(v) + 1.5 * 2^23: the code in the low byte) packed in order into
// two words: the one byte-pack the three int8_codes8 forms share (session 16: it was written out in each).
__device__ __forceinline__ uint2 pack_code_bytes8(const uint32_t b[8]) {
  uint32_t c[2];
#pragma unroll
  for (int j = 0; j < 2; ++j)
    c[j] = __byte_perm(__byte_perm(b[4 * j], b[4 * j + 1], 0x0040), __byte_perm(b[4 * j + 2], b[4 * j + 3], 0x0040), 0x5410);
  return make_uint2(c[0], c[1]);
}

// INT8 codes of 8 values, packed (byte i = value i): int8_code's bits. An inverse of inf (a
// block amax below ~3.7e-37) leaves int8_code_bits' range (y * inf is +-inf, or NaN for a
// zero): clamping at +127 too brings it back (int8_code clamps the same way); a branch, not
// taken in practice, so the common path keeps one FMNMX a value.
__device__ __forceinline__ uint2 int8_codes8(const float y[8], float inv) {
  uint32_t b[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) b[i] = int8_code_bits(y[i], inv);
  if (inv == INFINITY) {
#pragma unroll
    for (int i = 0; i < 8; ++i) b[i] = f32_bits(fminf(fmaxf(y[i] * inv, -127.0f), 127.0f) + 12582912.0f);
  }
  return pack_code_bytes8(b);
}

// int8_codes8 without its inf-inverse branch (kB, r16lx4wb: the caller checks every unit's
// inverse once and takes int8_codes8 for all of them when one is inf).
__device__ __forceinline__ uint2 int8_codes8_finite(const float y[8], float inv) {
  uint32_t b[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) b[i] = int8_code_bits(y[i], inv);
  return pack_code_bytes8(b);
}

// int8_codes8 with both clamps for every value, no branch: its bits for any inverse (an inf one
// takes the clamps in int8_codes8 too; for a finite one |y * inv| < 127.5, so the upper clamp
// moves only products in (127, 127.5), which round to 127 either way). The unit pairs' cold
// path where one of the two inverses is inf (session 16, n2).
__device__ __forceinline__ uint2 int8_codes8_clamped(const float y[8], float inv) {
  uint32_t b[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) b[i] = f32_bits(fminf(fmaxf(y[i] * inv, -127.0f), 127.0f) + 12582912.0f);
  return pack_code_bytes8(b);
}

// Two E4M3 codes (lo in the low byte) of values already clamped to [-448, 448]: f32_to_e4m3's
// bits (RNE; the clamp leaves no NaN and nothing past 448 for satfinite to act on).
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
#else
  return uint32_t(f32_to_e4m3(lo)) | (uint32_t(f32_to_e4m3(hi)) << 8);
#endif
}

// FP8 codes of 8 values: fp8_code(y, inv)'s bits. kE (the "e" variants, sm_89+): the lower
// clamp alone (it turns a NaN product into -448, as fp8_code's clamp; cvt's satfinite would
// keep the NaN); satfinite gives 448 for everything above it (+inf included), which is what
// the upper clamp and RNE give (nothing in (448, 464) rounds past 448): one FMNMX an element less.
template <bool kE = false>
__device__ __forceinline__ uint2 fp8_codes8(const float y[8], float inv) {
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if constexpr (kE) v[i] = fmaxf(y[i] * inv, -kE4M3Max);
    else
#endif
      v[i] = fminf(fmaxf(y[i] * inv, -kE4M3Max), kE4M3Max);
  }
  return make_uint2(e4m3x2(v[0], v[1]) | (e4m3x2(v[2], v[3]) << 16), e4m3x2(v[4], v[5]) | (e4m3x2(v[6], v[7]) << 16));
}

// NVFP4 codes of 8 values (two a byte, even index low): nvfp4_code(y, mul)'s bits. kEnc 1:
// e2m1_nibble (the "e" variants: the clamp inside, the code left in the magic sum's low bits);
// 2: e2m1_nibble_f (the "f" variants: the magic by one IMAD); 3: e2m1_nibble_near (only for
// |y * mul| < 7, see there); 4: e2m1_nibble_finite (finite and < 7); 0: the clamp and
// e2m1_code_fast. The nibbles join by + (disjoint
// bits: one LEA each).
template <int kEnc = 0>
__device__ __forceinline__ uint32_t nvfp4_codes8(const float y[8], float mul) {
  uint32_t c = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    if constexpr (kEnc == 1) c += e2m1_nibble(y[i] * mul) << (4 * i);
    else if constexpr (kEnc == 2) c += e2m1_nibble_f(y[i] * mul) << (4 * i);
    else if constexpr (kEnc == 3) c += e2m1_nibble_near(y[i] * mul) << (4 * i);
    else if constexpr (kEnc == 4) c += e2m1_nibble_finite(y[i] * mul) << (4 * i);
    else c |= e2m1_code_fast(fminf(fmaxf(y[i] * mul, -kE2M1Max), kE2M1Max)) << (4 * i);
  }
  return c;
}

// The block amax of amax16 from y packed (this lane's 4 words and its pair lane's), but NaN
// if any of the 16 values is NaN (max.NaN / min.NaN: sm_80+): max(max, -min) of the values is
// the largest magnitude, and the largest magnitude of bf16 / fp16 values converts to fp32
// exactly, so without a NaN it is amax16's value (a zero block may give -0: the scale clamps
// it to E4M3's tiny either way). Why ("f" variants): a NaN amax fails the near vote's
// amax / 6 <= 448, so the near path knows its products are finite and drops fmaxf(p, -6) (one
// FMNMX an element); ptxas 13.0 (sm_90) makes the reductions 3-input VHMNMX, ~the 8 FMNMX of
// amax16. Other blocks recompute amax16.
template <class XT>
__device__ __forceinline__ float amax16_nan(const Raw8<XT>& o) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t* u = reinterpret_cast<const uint32_t*>(&o);
  uint32_t m;
#define MLOPS_NORM_AMAX_NAN(T)                                                                   \
  asm("{.reg .b32 a, b, c, d;\n\t"                                                             \
      "max.NaN." T " a, %1, %2;\n\tmax.NaN." T " b, %3, %4;\n\tmax.NaN." T " a, a, b;\n\t"   \
      "min.NaN." T " c, %1, %2;\n\tmin.NaN." T " d, %3, %4;\n\tmin.NaN." T " c, c, d;\n\t"   \
      "neg." T " c, c;\n\tmax.NaN." T " %0, a, c;}"                                              \
      : "=r"(m) : "r"(u[0]), "r"(u[1]), "r"(u[2]), "r"(u[3]))
#define MLOPS_NORM_MAX_NAN(T, d, a, b) asm("max.NaN." T " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b))
  if constexpr (std::is_same_v<XT, bf16>) {
    MLOPS_NORM_AMAX_NAN("bf16x2");
    MLOPS_NORM_MAX_NAN("bf16x2", m, m, __shfl_xor_sync(0xffffffffu, m, 1));
    MLOPS_NORM_MAX_NAN("bf16x2", m, m, __byte_perm(m, 0, 0x1032));
    return __uint_as_float(m << 16);
  } else {
    MLOPS_NORM_AMAX_NAN("f16x2");
    MLOPS_NORM_MAX_NAN("f16x2", m, m, __shfl_xor_sync(0xffffffffu, m, 1));
    MLOPS_NORM_MAX_NAN("f16x2", m, m, __byte_perm(m, 0, 0x1032));
    return f16_to_f32(uint16_t(m));
  }
#undef MLOPS_NORM_MAX_NAN
#undef MLOPS_NORM_AMAX_NAN
#else
  float y[8];
  unpack8_pairs(o, y);
  float a = amax16(y);
  return a;  // below sm_80 the "f" kernel never calls this (kNanAmax is off)
#endif
}

// The running amax of the FP8 dynamic row, packed (sm_80+): a = max(a, |y|) over the 8 values of o as
// bf16x2 / f16x2 pairs (sign bits cleared, then max.bf16x2 / max.f16x2, which return the number when one
// operand is NaN), and its value: the larger half, exact in fp32. From a = 0 it is fmaxf(amax, fabsf(y))
// over the values (NaN ignored, -0 as +0): the same float. Why: 8 unpacks and 8 FMNMX a unit become 4
// LOP3 and 4 HMNMX2, and y need not be unpacked before the row's amax is known (run 57's FP8 dynamic
// kernel had spilled 32 bytes with the unpacked values live: ptxas 13.0, sm_90, 48 registers).
template <class XT>
__device__ __forceinline__ uint32_t amax_max8(uint32_t a, const Raw8<XT>& o) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t* u = reinterpret_cast<const uint32_t*>(&o);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<XT, bf16>) asm("max.bf16x2 %0, %0, %1;" : "+r"(a) : "r"(u[i] & 0x7fff7fffu));
    else asm("max.f16x2 %0, %0, %1;" : "+r"(a) : "r"(u[i] & 0x7fff7fffu));
  }
#endif
  return a;
}
template <class XT>
__device__ __forceinline__ float amax_max8_value(uint32_t a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<XT, bf16>) asm("max.bf16x2 %0, %0, %1;" : "+r"(a) : "r"(__byte_perm(a, 0, 0x1032)));
  else asm("max.f16x2 %0, %0, %1;" : "+r"(a) : "r"(__byte_perm(a, 0, 0x1032)));
#endif
  if constexpr (std::is_same_v<XT, bf16>) return __uint_as_float(a << 16);
  else return f16_to_f32(uint16_t(a));
}

// The "f" NVFP4 epilogue's table, staged once a CTA: 1.0f / e4m3_normal_to_f32(c) for every
// code c, which is nvfp4_block's (1.0f / g) / scale with no global factor (1.0f / g hoisted as
// 1.0f): the same division, so the same bits (codes 0-7 and 127 are never a block scale).
// Why: the division of each pair of blocks (pair_div2: div.rn's ~10 instructions, its slow-path
// region, a SHFL and two selects a lane) becomes two LDS.
// kThreads: the CTA's, 128 or more (the "u" kernels' 256 / 512: the first 128 write it).
template <int kThreads = kRowThreads>
__device__ __forceinline__ void nvfp4_rtab(float* t) {
  static_assert(kRowThreads == 128 && kThreads >= 128, "one E4M3 code a thread");
  if (kThreads == 128 || threadIdx.x < 128) t[threadIdx.x] = 1.0f / e4m3_normal_to_f32(threadIdx.x);
}

// The "h" INT8 epilogue's table (r16lx4wh, session 14b), staged once a CTA: the 128 pairs of
// int8_tab (RN(127/m), RN(m/127)), one uint2 a thread, read from kInt8TabDev's first copy while
// the row's x loads are in flight. No barrier of its own: h runs at four warps a row (the CTA is
// the row) and PartRow<.., 4>::fold's __syncthreads comes before the first lookup.
__device__ __forceinline__ void int8_tab_stage(uint2* t) {
  static_assert(kRowThreads == 128, "one pair a thread");
  t[threadIdx.x] = __ldg(reinterpret_cast<const uint2*>(kInt8TabDev) + threadIdx.x);
}

// int8_tab with the pairs from the staged table (LDS instead of int8_tab's LDG), indexed by
// bits 16-22 of a (the host form's index): the same pairs, the same FMULs, the same range.
__device__ __forceinline__ bool int8_tab_s(float a, const uint2* tab, float& inv, float& scale) {
  const uint32_t b = f32_bits(a);
  const uint2 t = tab[(b >> 16) & 0x7fu];
  const uint32_t q = b & 0x7f800000u;  // E << 23: 2^(E - 127)
  inv = bits_f32(t.x) * bits_f32((254u << 23) - q);
  scale = bits_f32(t.y) * bits_f32(q);
  return b - (8u << 23) < (246u << 23);
}

template <int H, int N>
struct PartRow;
// A CTA a row (PartRow<H, N>, N >= 4: the lx4w kernels r16lx4we / r32lx4we, ..., and session 33's "u" kernels
// of 2 or 4 units a warp): the INT8 unit-pair epilogue of session 16 (n2) is theirs only; the other callers keep
// the old form (in r16lx2's bf16 INT8 instances, 64 registers, the new form left 8 bytes of stack: ptxas 13.0, sm_90).
template <class Red>
struct RowOfCta : std::false_type {};
template <int H, int N>
struct RowOfCta<PartRow<H, N>> : std::bool_constant<(N >= 4)> {};

// The row reductions of a warp that holds a whole row: the unit values folded in order from
// +0, the amax over the warp.
template <int U>
struct WholeRow {
  __device__ __forceinline__ float fold(const float (&u)[U]) const {
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < U; ++k) s = s + u[k];
    return s;
  }
  __device__ __forceinline__ float max(float a) const { return a; }
  __device__ __forceinline__ bool lead() const { return true; }  // this warp writes the row's scale
};

// Units k0 .. k0 + U - 1 of a row (all of it, or the half a warp holds) from its loaded units:
// the sum (Red::fold of the unit values: the whole row's, in unit order), y and the quantized
// output. Red::max gives the row's amax from this warp's (FP8 dynamic). kE (1: the "e"
// variants, 2: the "f" variants, 3: the "g" variants of session 13): NVFP4 codes by
// e2m1_nibble (e) or the NVFP4 epilogue of "f" below (g: its near path's words by
// e2m1_word_finite), FP8 codes with one clamp (same bits); g's bf16 INT8 takes its block
// inverses and scales from int8_tab. kB (r16lx4wb): INT8 in phases (see there).
// rtab ("f" / "g", NVFP4): the CTA's table of 1 / e4m3 value by scale code (nvfp4_rtab).
// wf: WeightEff<XT, U, kWs> (read in the epilogue) or WeightPre<XT, U> (loaded with x, not kWs).
template <class XT, int U, bool kAgain, int kQuant, bool kWs, int kE, bool kB = false, class Red, class W>
__device__ __forceinline__ void leanq_finish(const Params& p, int64_t row, int k0, Raw8<XT> (&raw)[U],
                                             const W& wf, const Red& red,
                                             const float* rtab = nullptr) {
  const int lane = threadIdx.x & 31;
  const bool odd = lane & 1;
  XT* yr = p.y ? static_cast<XT*>(p.y) + row * p.y_stride + k0 * kUnit + lane * 8 : nullptr;
  // Per-lane bases, so that every unit's store is an immediate offset from one register pair:
  // codes (8 a lane a unit: 8 bytes, NVFP4 4) and the block scale of lanes 2j, 2j+1 (block j
  // of a unit: 16 a unit).
  constexpr int kCodeBytes = kQuant == MLOPS_QUANT_NVFP4 ? 4 : 8;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr bool kNanAmax = kE >= 2 && kQuant == MLOPS_QUANT_NVFP4;  // amax16_nan: max.NaN is sm_80+
#else
  constexpr bool kNanAmax = false;
#endif
  uint8_t* qr = static_cast<uint8_t*>(p.q) + row * p.q_stride + (k0 * 32 + lane) * kCodeBytes;
  const int64_t sb = row * p.q_scale_stride + k0 * 16 + (lane >> 1);
  float u[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    float e[8];
    unpack8_pairs(raw[k], e);
    u[k] = warp_butterfly32(lane_sumsq8(e));
  }
  const float r = rms_r(red.fold(u), p.group, p.eps);
  // y of unit k, packed. kPackW (weights loaded, not staged; the launch routes only calls with
  // w as stored, weight_offset -0, here): the second rounding by mul_packed8.
  constexpr bool kPackW = !kWs && packed_mul_here<XT>();
  auto y_unit = [&](int k) {
    if constexpr (kPackW) {
      const Raw8<XT> t = lean_t8<XT, kAgain>(raw[k], r);
      Raw8<XT> wq, o;
      wq.q[0] = wf.raw16(k);
      mul_packed8(t, wq, o);
      return o;
    } else {
      float w[8];
      wf.get(k, w);
      return lean_y8<XT, kAgain>(raw[k], w, r);
    }
  };

  if constexpr (kQuant == MLOPS_QUANT_NONE) {
#pragma unroll
    for (int k = 0; k < U; ++k) st16<false>(yr + k * kUnit, y_unit(k).q[0]);
  } else if constexpr (kQuant == MLOPS_QUANT_FP8_STATIC || kQuant == MLOPS_QUANT_FP8_DYNAMIC) {
    float inv;
    if constexpr (kQuant == MLOPS_QUANT_FP8_STATIC) {
      inv = 1.0f / *p.quant_scale;
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const Raw8<XT> o = y_unit(k);
        if (yr) st16<false>(yr + k * kUnit, o.q[0]);
        float y[8];
        unpack8_pairs(o, y);
        *reinterpret_cast<uint2*>(qr + k * kUnit) = fp8_codes8<(kE > 0)>(y, inv);
      }
    } else {  // the row's amax first: y of every unit kept packed in raw (x is not needed again)
      float amax = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      uint32_t am2 = 0u;  // sm_80+: the lane's amax of both halves, packed (amax_max8)
#endif
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const Raw8<XT> o = y_unit(k);
        if (yr) st16<false>(yr + k * kUnit, o.q[0]);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        am2 = amax_max8(am2, o);
#else
        float y[8];
        unpack8_pairs(o, y);
#pragma unroll
        for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(y[i]));
#endif
        raw[k] = o;
      }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      amax = amax_max8_value<XT>(am2);
#endif
#pragma unroll
      for (int o = 16; o >= 1; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
      amax = red.max(amax);
      inv = fp8_row_inv(amax);
      if (red.lead() && lane == 0) (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[0] = fp8_row_scale(amax);
#pragma unroll
      for (int k = 0; k < U; ++k) {
        float y[8];
        unpack8_pairs(raw[k], y);
        *reinterpret_cast<uint2*>(qr + k * kUnit) = fp8_codes8<(kE > 0)>(y, inv);
      }
    }
  } else if constexpr (kQuant == MLOPS_QUANT_INT8 && kB) {
    // INT8 in phases: y and the block amax of every unit, the divisions back to back, the
    // codes (one inf-inverse check for all units), the scale stores. Why: in the per-pair loop
    // below, each pair's division (its slow-path CALL), int8_codes8's inf branches and the
    // even lane's scale stores are reconvergence regions (BSSY / BSYNC, nvcc 13.0 sm_90) that
    // nvcc schedules nothing across, so the next pair's y and amax wait for them (run 27,
    // 2048x4096: INT8 +2.05 us of kernel time over y). The same operations on the same
    // values, so the same bits; y is kept packed (4 registers a unit) and unpacked twice.
    Raw8<XT> o[U];
    float a[U], inv[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      o[k] = y_unit(k);
      if (yr) st16<false>(yr + k * kUnit, o[k].q[0]);
      float y[8];
      unpack8_pairs(o[k], y);
      a[k] = amax16(y);
    }
#pragma unroll
    for (int k = 0; k < U; k += 2) pair_div2(127.0f, a[k], 127.0f, a[k + 1], odd, inv[k], inv[k + 1]);
    bool inf = false;
#pragma unroll
    for (int k = 0; k < U; ++k) {
      inv[k] = a[k] == 0.0f ? 0.0f : inv[k];  // int8_inv
      inf = inf || inv[k] == INFINITY;
    }
    uint2 c[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      float y[8];
      unpack8_pairs(o[k], y);
      c[k] = int8_codes8_finite(y, inv[k]);
    }
    if (inf) {  // a block amax below ~3.7e-37: int8_codes8 (both clamps where the inverse is inf)
#pragma unroll
      for (int k = 0; k < U; ++k) {
        float y[8];
        unpack8_pairs(o[k], y);
        c[k] = int8_codes8(y, inv[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < U; ++k) *reinterpret_cast<uint2*>(qr + k * kUnit) = c[k];
    if (!odd) {
      float* sr = static_cast<float*>(p.q_scale) + sb;
#pragma unroll
      for (int k = 0; k < U; ++k) sr[k * 16] = div127_bf16(a[k]);  // int8_scale
    }
  } else {  // INT8 / NVFP4: blocks of 16 (lanes 2j, 2j+1), two units at a time
    const float* g = kQuant == MLOPS_QUANT_NVFP4 ? p.quant_scale : nullptr;
    const float gv = g ? *g : 1.0f;
    const float ginv = g ? 1.0f / gv : 1.0f;  // nvfp4_block's (1.0f / g), hoisted: the same bits
    // "f": this lane's scale byte of a unit pair (block 2j + odd of the pair's first unit)
    uint8_t* const sr1 = static_cast<uint8_t*>(p.q_scale) + sb + (odd ? 16 : 0);
    // "g" bf16 INT8 (session 13): this lane's scale of a unit pair, the same way (4 bytes a scale)
    float* const sr8 = static_cast<float*>(p.q_scale) + sb + (odd ? 16 : 0);
#pragma unroll
    for (int k = 0; k < U; k += 2) {
      const Raw8<XT> o0 = y_unit(k);
      const Raw8<XT> o1 = y_unit(k + 1);
      if (yr) {
        st16<false>(yr + k * kUnit, o0.q[0]);
        st16<false>(yr + (k + 1) * kUnit, o1.q[0]);
      }
      float y0[8], y1[8];
      unpack8_pairs(o0, y0);
      unpack8_pairs(o1, y1);
      float a0 = 0.0f, a1 = 0.0f;  // kNanAmax: the "f" branch takes its amaxes itself
      if constexpr (!kNanAmax) a0 = amax16(y0), a1 = amax16(y1);
      if constexpr (kQuant == MLOPS_QUANT_INT8 && (kE == 3 || kE == 4) && std::is_same_v<XT, bf16>) {
        // "g", bf16 (session 13): inverse and scale from int8_tab where both blocks' amaxes are in its
        // range (then the inverses are finite: no inf branch), else the divisions of int8_inv /
        // int8_scale on this lane and int8_codes8; each lane of the pair stores one block's scale.
        // "h" (kE 4, r16lx4wh): the same with the table staged in shared memory (rtab points at it)
        float inv0, inv1, sc0, sc1;
        uint2 c0, c1;
        bool t0, t1;
        if constexpr (kE == 4) {
          const uint2* const it = reinterpret_cast<const uint2*>(rtab);
          t0 = int8_tab_s(a0, it, inv0, sc0), t1 = int8_tab_s(a1, it, inv1, sc1);
        } else {
          t0 = int8_tab(a0, inv0, sc0), t1 = int8_tab(a1, inv1, sc1);
        }
        if (t0 && t1) {
          c0 = int8_codes8_finite(y0, inv0);
          c1 = int8_codes8_finite(y1, inv1);
        } else {  // a zero block, an amax below 2^-119 or from 2^127 (inf included)
          inv0 = int8_inv(a0), inv1 = int8_inv(a1);
          sc0 = div127_bf16(a0), sc1 = div127_bf16(a1);  // int8_scale
          c0 = int8_codes8(y0, inv0);
          c1 = int8_codes8(y1, inv1);
        }
        *reinterpret_cast<uint2*>(qr + k * kUnit) = c0;
        *reinterpret_cast<uint2*>(qr + (k + 1) * kUnit) = c1;
        sr8[k * 16] = odd ? sc1 : sc0;
      } else if constexpr (kQuant == MLOPS_QUANT_INT8 && RowOfCta<Red>::value) {
        // Session 16 (n2): one inf-inverse check for the unit pair (int8_codes8_finite for both
        // blocks, int8_codes8_clamped for both where either inverse is inf: int8_codes8's codes
        // either way), and each lane of the pair
        // stores one block's scale (one div127_bf16 a lane, no even-lane region), as "g" does.
        // Why (sm_90 SASS, docs/norm.md session 16): each int8_codes8 inf branch and the even
        // lane's two scale stores were reconvergence regions (BSSY / BSYNC) in every unit pair.
        float inv0, inv1;
        pair_div2(127.0f, a0, 127.0f, a1, odd, inv0, inv1);
        inv0 = a0 == 0.0f ? 0.0f : inv0;  // int8_inv
        inv1 = a1 == 0.0f ? 0.0f : inv1;
        uint2 c0 = int8_codes8_finite(y0, inv0), c1 = int8_codes8_finite(y1, inv1);
        if (inv0 == INFINITY || inv1 == INFINITY) {  // a block amax below ~3.7e-37
          c0 = int8_codes8_clamped(y0, inv0);
          c1 = int8_codes8_clamped(y1, inv1);
        }
        *reinterpret_cast<uint2*>(qr + k * kUnit) = c0;
        *reinterpret_cast<uint2*>(qr + (k + 1) * kUnit) = c1;
        sr8[k * 16] = div127_bf16(odd ? a1 : a0);  // int8_scale: block (k + odd)'s, at sb + (k + odd) * 16
      } else if constexpr (kQuant == MLOPS_QUANT_INT8) {
        float inv0, inv1;
        pair_div2(127.0f, a0, 127.0f, a1, odd, inv0, inv1);
        inv0 = a0 == 0.0f ? 0.0f : inv0;  // int8_inv
        inv1 = a1 == 0.0f ? 0.0f : inv1;
        *reinterpret_cast<uint2*>(qr + k * kUnit) = int8_codes8(y0, inv0);
        *reinterpret_cast<uint2*>(qr + (k + 1) * kUnit) = int8_codes8(y1, inv1);
        if (!odd) {
          float* sr = static_cast<float*>(p.q_scale) + sb;
          sr[k * 16] = div127_bf16(a0);  // int8_scale
          sr[(k + 1) * 16] = div127_bf16(a1);
        }
      } else if constexpr (kE >= 2) {  // "f" / "g": nvfp4_block for the two blocks, then the codes
        // kNanAmax: the amaxes NaN-propagating first (amax16_nan), amax16's where a block of
        // the warp holds a NaN (or has a global factor: no near path then)
        if constexpr (kNanAmax) {
          if (g) a0 = amax16(y0), a1 = amax16(y1);
          else a0 = amax16_nan(o0), a1 = amax16_nan(o1);
        }

        float sb0 = div6_bf16(a0), sb1 = div6_bf16(a1);  // amax / 6
        if (g) pair_div2(sb0, gv, sb1, gv, odd, sb0, sb1);
        // No global factor and no scale of the warp's blocks clamped at 448: every |y * mul|
        // is < 6.41 (e2m1_nibble_near), warp-uniform so that the codes are one path; with
        // kNanAmax a NaN amax fails the test too, so there every product is also finite. Two
        // compares, not fmaxf(sb0, sb1) <= 448: fmaxf drops a NaN operand, so a NaN block beside a
        // finite one passed (run 37: 465 wrong codes under compute_80, test_lean_nvfp4_nonfinite).
        const bool near = __all_sync(0xffffffffu, !g && sb0 <= kE4M3Max && sb1 <= kE4M3Max);
        if constexpr (kNanAmax) {
          if (!near && !g) {  // a NaN or a scale past 448 in the warp: amax16's amaxes
            sb0 = div6_bf16(amax16(y0));
            sb1 = div6_bf16(amax16(y1));
          }
        }
        sb0 = fminf(fmaxf(sb0, kE4M3Tiny), kE4M3Max);
        sb1 = fminf(fmaxf(sb1, kE4M3Tiny), kE4M3Max);
        const uint32_t sc = e4m3x2(sb0, sb1);  // two positive normal codes
        float m0 = rtab[sc & 0xffu], m1 = rtab[sc >> 8];  // 1.0f / scale, the same division
        if (g) pair_div2(ginv, e4m3_normal_to_f32(sc & 0xffu), ginv, e4m3_normal_to_f32(sc >> 8), odd, m0, m1);
        uint32_t c0, c1;
        if (near) {
          if constexpr (kNanAmax && kE == 3) {  // "g": finite, |p| < 7, m > 0 (e2m1_word_finite)
            c0 = e2m1_word_finite(y0, m0, e2m1_signs8(y0));
            c1 = e2m1_word_finite(y1, m1, e2m1_signs8(y1));
          } else {
            c0 = nvfp4_codes8<kNanAmax ? 4 : 3>(y0, m0);
            c1 = nvfp4_codes8<kNanAmax ? 4 : 3>(y1, m1);
          }
        } else {
          c0 = nvfp4_codes8<2>(y0, m0);
          c1 = nvfp4_codes8<2>(y1, m1);
        }
        *reinterpret_cast<uint32_t*>(qr + k * (kUnit / 2)) = c0;
        *reinterpret_cast<uint32_t*>(qr + (k + 1) * (kUnit / 2)) = c1;
        // each lane of the pair stores one block's scale (the even lane both before): no branch
        sr1[k * 16] = uint8_t(odd ? sc >> 8 : sc);
      } else {  // nvfp4_block for the two blocks, then the codes
        float sb0 = div6_bf16(a0), sb1 = div6_bf16(a1);  // amax / 6
        if (g) pair_div2(sb0, gv, sb1, gv, odd, sb0, sb1);
        sb0 = fminf(fmaxf(sb0, kE4M3Tiny), kE4M3Max);
        sb1 = fminf(fmaxf(sb1, kE4M3Tiny), kE4M3Max);
        const uint32_t sc = e4m3x2(sb0, sb1);  // two positive normal codes
        float m0, m1;
        pair_div2(ginv, e4m3_normal_to_f32(sc & 0xffu), ginv, e4m3_normal_to_f32(sc >> 8), odd, m0, m1);
        *reinterpret_cast<uint32_t*>(qr + k * (kUnit / 2)) = nvfp4_codes8<kE>(y0, m0);
        *reinterpret_cast<uint32_t*>(qr + (k + 1) * (kUnit / 2)) = nvfp4_codes8<kE>(y1, m1);
        if (!odd) {
          uint8_t* sr = static_cast<uint8_t*>(p.q_scale) + sb;
          sr[k * 16] = uint8_t(sc);
          sr[(k + 1) * 16] = uint8_t(sc >> 8);
        }
      }
    }
  }
}

// kQuant: y alone (MLOPS_QUANT_NONE, kWs instances only: without kWs that is
// norm_row_lean_kernel), INT8, NVFP4, FP8 static or dynamic (codes and scales; y too when
// p.y is set). kAgain as in norm_row_lean_kernel (x unpacked again in the epilogue when its
// fp32 values do not fit the registers of kMinCtas CTAs an SM). kWs: w + weight_offset staged
// in shared memory once a CTA (stage_weff); the CTA then meets at one barrier, after every
// warp has issued its first row's loads (a warp past the last row issues none but still meets
// it). kPersist: the grid is a few CTAs an SM and a warp walks the rows with a stride of all
// the grid's warps (the staging is paid once a CTA, and no SM idles while another still holds
// a last wave of CTAs); its next row's loads are issued once the current row is stored.
template <class XT, int U, int kMinCtas, int kQuant, bool kWs = false, bool kPersist = false>
__global__ void __launch_bounds__(kRowThreads, kMinCtas) norm_row_leanq_kernel(Params p) {
  static_assert(sizeof(XT) == 2 && U % 2 == 0, "lx rows: bf16 / fp16 x, units in pairs");
  static_assert(kWs || kQuant != MLOPS_QUANT_NONE, "lx rows: y alone without kWs is norm_row_lean_kernel");
  constexpr bool kAgain = U * 8 + 40 > 65536 / (kRowThreads * kMinCtas);
  const int lane = threadIdx.x & 31;
  int64_t row = int64_t(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  const bool valid = row < p.rows;
  if (!kWs && !valid) return;  // a whole warp leaves: no shuffle is left waiting
  auto load = [&](int64_t rw, Raw8<XT>(&raw)[U]) {
    const XT* xr = static_cast<const XT*>(p.x) + rw * p.x_stride + lane * 8;
#pragma unroll
    for (int k = 0; k < U; ++k) raw[k].q[0] = ld_stream16(xr + k * kUnit);
  };
  Raw8<XT> raw[U];
  if (valid) load(row, raw);
  __shared__ float ws_smem[kWs ? U * kUnit : 1];
  if constexpr (kWs) {
    stage_weff<XT, U>(p, ws_smem);
    __syncthreads();
    if (!valid) return;
  }
  const WeightEff<XT, U, kWs> wf{static_cast<const XT*>(p.weight) + lane * 8, ws_smem, p.weight_offset};
  for (;;) {
    leanq_finish<XT, U, kAgain, kQuant, kWs, 0>(p, row, 0, raw, wf, WholeRow<U>{});
    if constexpr (!kPersist) break;
    row += int64_t(gridDim.x) * kRowWarps;
    if (row >= p.rows) break;
    load(row, raw);
  }
}

// A row held by N warps of a CTA (U / N units each): N = 2, the warps 2j, 2j + 1 (CTAs of 2
// rows), or N = 4, 8, 16, the whole CTA (CTAs of 1 row: 32 N threads). The unit values meet in shared memory and
// every warp folds all U of them in unit order, so the sum has the one-warp order's bits; the
// FP8 row amax meets the same way (fmaxf of non-negative numbers: any order). N = 2: the two
// warps sync by a named barrier of their own (id 1 + j, 64 threads), so a pair past the last
// row skips it; N = 4: the CTA barrier (the whole CTA is the row).
// Why: at 2048x4096 one warp a row leaves 4 warps a scheduler with long dependent epilogues
// (ncu run 19, r16lq: issue slots 42 % busy, 7.8 cycles between a warp's instructions, DRAM
// 23 %); N warps a row cut the chain a warp runs by N and multiply the warps that hide it
// (run 20, 2048x4096 INT8: r16lx2 14.82 us vs one warp a row r16lx 15.30).
template <int H, int N>
struct PartRow {
  float (*us)[N * H];  // [row slot][unit]
  float (*am)[N];      // [row slot][part]
  int slot, part;
  __device__ __forceinline__ void sync() const {
    if constexpr (N >= 4) {  // the CTA is the row
      __syncthreads();
    } else {  // ids as immediates: a register id makes ptxas 13.0 reserve all 16 barriers
      if (slot == 0) asm volatile("bar.sync 1, 64;" ::: "memory");
      else asm volatile("bar.sync 2, 64;" ::: "memory");
    }
  }
  __device__ __forceinline__ float fold(const float (&u)[H]) const {
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
      for (int k = 0; k < H; ++k) us[slot][part * H + k] = u[k];
    }
    sync();
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < N * H; ++k) s = s + us[slot][k];
    return s;
  }
  __device__ __forceinline__ float max(float a) const {
    if ((threadIdx.x & 31) == 0) am[slot][part] = a;
    sync();
    float m = am[slot][0];
#pragma unroll
    for (int j = 1; j < N; ++j) m = fmaxf(m, am[slot][j]);
    return m;
  }
  __device__ __forceinline__ bool lead() const { return part == 0; }
};

// One prefetch of a global address (no register, no value: the bits cannot change). kLevel 1:
// prefetch.global.L1 (CCTL.E.PF1 on sm_90), 2: prefetch.global.L2 (CCTL.E.PF2).
template <int kLevel>
__device__ __forceinline__ void prefetch_global(const void* a) {
#if defined(__CUDA_ARCH__)
  if constexpr (kLevel == 1) asm volatile("prefetch.global.L1 [%0];" ::"l"(a) : "memory");
  else asm volatile("prefetch.global.L2 [%0];" ::"l"(a) : "memory");
#endif
}

// The "k" variants (session 15): every global read of the lx2 epilogue that is not x, issued as a
// prefetch with the row's x loads, so that it is on its way while x is. Why: in every lx2 / lx4w
// instance (sm_90 SASS) the weight's first LDG.E.128.CONSTANT comes after the row fold's barrier and
// the fold's division, rsqrt and reciprocal (where ptxas 13.0 leaves it), and g's int8_tab lookups
// (__ldg of kInt8TabDev) at the head of each unit pair's chain after y. With L2 flushed, the first
// CTAs of every SM send those reads to DRAM behind the wave's x reads, and every row's epilogue
// waits for them. The prefetch: the warp's H units of w (4H lines of 128 B, one a lane), the 2 KB of
// kInt8TabDev that int8_tab indexes (bf16 INT8, kE 3: 16 lines, one a lane of the next 16),
// NVFP4's global factor and FP8 static's scale (lane 31, when set). No value is read: the bits
// cannot change.
// Placement (ptxas 13.0, sm_90): prefetches have no consumer, and ptxas scheduled them last in their
// block (after the sum of squares, i.e. after x had arrived) when they were written after the x
// loads, and hoisted the first FFMAs of the sum of squares above them when they sat in a loop after
// the loads. So they sit in a loop (a run-time trip count, p.units / 16 = 1: ptxas moves nothing
// into it) before the loads, and the loop's exit count minus its bound, 0 at run time, offsets the
// x addresses: the loads cannot move above the prefetches, the sum of squares not above the loads.
template <class XT, int H, int kQuant, int kE, int kPf>
__device__ __forceinline__ int leanq2_prefetch(const Params& p, bool valid, int k0, int lane) {
  const char* wl = reinterpret_cast<const char*>(static_cast<const XT*>(p.weight) + k0 * kUnit);
  const int n = valid ? p.units >> 4 : 0;  // 1: launch_lx2 takes p.units == 16 only
  int k = 0;
#pragma unroll 1
  for (; k < n; ++k) {
    if (lane < 4 * H) prefetch_global<kPf>(wl + lane * 128);
    if constexpr (kQuant == MLOPS_QUANT_INT8 && kE == 3 && std::is_same_v<XT, bf16>) {
      const int t = lane - (4 * H) % 32;  // H = 4: lanes 16-31, H = 8: lanes 0-15
      if (t >= 0 && t < 16) prefetch_global<kPf>(kInt8TabDev + t * 32);  // 128 B a line
    }
    if constexpr (kQuant == MLOPS_QUANT_NVFP4 || kQuant == MLOPS_QUANT_FP8_STATIC) {
      if (lane == 31 && p.quant_scale != nullptr) prefetch_global<kPf>(p.quant_scale);
    }
  }
  return k - n;  // 0 at run time (k == n >= 0 after the loop)
}

// N warps a row (PartRow): r16lx2 (N = 2, 8 CTAs an SM, 64 registers), r16lx4w (N = 4, one
// row a CTA, 4 units a warp, 10 CTAs an SM: ptxas 13.0 sm_90, 48 registers, no spills in the 5
// bf16 instances (fp16 y alone: 4 bytes); at 12 CTAs (40 registers) bf16 INT8 / NVFP4 / FP8
// dynamic spilled). kE 1: NVFP4 codes by e2m1_nibble, FP8 with one clamp (r16lx2e / r16lx4we);
// 2: the "f" NVFP4 epilogue (r16lx2f / r16lx4wf: its table staged here); 3: the "g" epilogue
// (r16lx2g / r16lx4wg: f's NVFP4 with e2m1_word_finite, bf16 INT8 by int8_tab); 4: bf16 INT8 as
// 3 with int8_tab staged in shared memory (r16lx4wh, N = 4 only). kB: INT8 in phases (r16lx4wb).
// kPf ("k" variants, session 15): the epilogue's other global reads prefetched with the x
// loads (leanq2_prefetch): 1 into L1 (prefetch.global.L1), 2 into L2 only.
// N = 8 / 16 and kPre (the "u" variants, session 33, for few rows): CTAs of 32 N threads, one row each, so that a
// warp's share of the row (and its epilogue's chain) is 2 or 4 units; kPre: the lane's w loaded with x (WeightPre).
template <int N>
constexpr int kLx2Threads = N >= 4 ? 32 * N : kRowThreads;  // a CTA's threads
// kRes (lu2mp's add + norm, session 33): residual loaded with x, x + residual rounded to XT (the host's order:
// row_add_residual's), written to residual_out and normed (residual_out may alias x or residual: each lane writes
// only the addresses it has read).
template <class XT, int U, int kMinCtas, int kQuant, int N = 2, int kE = 0, bool kB = false, int kPf = 0,
          bool kPre = false, bool kRes = false>
__global__ void __launch_bounds__(kLx2Threads<N>, kMinCtas) norm_row_leanq2_kernel(Params p) {
  static_assert(sizeof(XT) == 2 && U % (2 * N) == 0, "lx2 rows: bf16 / fp16 x, units in pairs a warp");
  static_assert(kRowWarps == 4 && (N == 2 || N == 4 || N == 8 || N == 16),
                "lx2 rows: 2 row slots a CTA (named barriers 1, 2) or 1");
  static_assert(!kPre || (kPf == 0 && !kB), "kPre: w in registers, nothing to prefetch");
  constexpr int H = U / N;
  constexpr int kSlots = N >= 4 ? 1 : kRowWarps / N;
  constexpr int kThreads = kLx2Threads<N>;
  constexpr bool kAgain = H * (kPre ? 12 : 8) + (kRes ? 4 * H : 0) + 40 > 65536 / (kThreads * kMinCtas);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int slot = warp / N, part = warp % N;
  const int64_t row = int64_t(blockIdx.x) * kSlots + slot;
  // kTab: the whole CTA stages the table and meets once, so a warp past the last row leaves
  // only after that barrier; else all warps of the row leave here (no barrier or shuffle waits)
  constexpr bool kTab = kE >= 2 && kQuant == MLOPS_QUANT_NVFP4;
  const bool valid = row < p.rows;
  if (!kTab && !valid) return;
  const int k0 = part * H;
  int z = 0;  // "k": 0 from the prefetch loop (leanq2_prefetch), so that the x loads come after it
  if constexpr (kPf != 0) z = leanq2_prefetch<XT, H, kQuant, kE, kPf>(p, valid, k0, lane);
  const XT* xr = static_cast<const XT*>(p.x) + row * p.x_stride + k0 * kUnit + lane * 8 + z;
  Raw8<XT> raw[H], res[kRes ? H : 1];
  WeightPre<XT, kPre ? H : 1> wp;
  if (valid) {
#pragma unroll
    for (int k = 0; k < H; ++k) raw[k].q[0] = ld_stream16(xr + k * kUnit);
    if constexpr (kRes) {
      const XT* rr = static_cast<const XT*>(p.residual) + row * p.residual_stride + k0 * kUnit + lane * 8;
#pragma unroll
      for (int k = 0; k < H; ++k) res[k].q[0] = ld_stream16(rr + k * kUnit);
    }
    if constexpr (kPre) wp.load(static_cast<const XT*>(p.weight) + k0 * kUnit + lane * 8);
  }
  __shared__ float us[kSlots][N * H];
  __shared__ float am[kSlots][N];
  __shared__ float rtab[kTab ? 128 : 1];
  if constexpr (kTab) {
    nvfp4_rtab<kThreads>(rtab);
    __syncthreads();
    if (!valid) return;
  }
  if constexpr (kRes) {
    XT* ro = static_cast<XT*>(p.residual_out) + row * p.residual_out_stride + k0 * kUnit + lane * 8;
#pragma unroll
    for (int k = 0; k < H; ++k) {
      add_residual8<XT>(raw[k], res[k]);
      st16<false>(ro + k * kUnit, raw[k].q[0]);
    }
  }
  const PartRow<H, N> red{us, am, slot, part};
  if constexpr (kPre) {
    wp.off = p.weight_offset;
    leanq_finish<XT, H, kAgain, kQuant, false, kE, kB>(p, row, k0, raw, wp, red, rtab);
    return;
  }
  const WeightEff<XT, H, false> wf{static_cast<const XT*>(p.weight) + k0 * kUnit + lane * 8, nullptr, p.weight_offset};
  if constexpr (kE == 4) {  // "h": bf16 INT8 only (the launch sends the rest to the g / e / plain instances)
    static_assert(N == 4 && kQuant == MLOPS_QUANT_INT8 && std::is_same_v<XT, bf16>, "h: r16lx4wh's bf16 INT8");
    __shared__ uint2 itab[128];
    int8_tab_stage(itab);  // ordered before the lookups by the row fold's __syncthreads (N = 4)
    leanq_finish<XT, H, kAgain, kQuant, false, kE, kB>(p, row, k0, raw, wf, red, reinterpret_cast<const float*>(itab));
  } else {
    leanq_finish<XT, H, kAgain, kQuant, false, kE, kB>(p, row, k0, raw, wf, red, rtab);
  }
}

}  // namespace mlops::norm
