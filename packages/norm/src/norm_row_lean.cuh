// The "l" (lean) row variants: the r kernel (norm_row.cuh) for the common call only, with
// every run-time flag of the element loops made compile-time.
//
// Why (ncu run 13 and round A, H200): the plain norm at 16384x4096 issues ~29 thread
// instructions an element (61.5 M warp instructions for 67 M elements, issue slots 59 % busy),
// and every load structure (w8c2, r8, r16, r16cs) lands at the same 104 us: the kernels are
// issue bound, not load bound. The r kernel's element loops test LayerNorm / HF / weight /
// bias flags, subtract a mean of 0, branch on the weight dtype per unit and guard every unit
// with `k < units`. Here the call is fixed at compile time: RMSNorm, HF order, a weight of
// x's dtype, no bias / gate / residual / quantized output, exactly U units a row (U = 16 or
// 8: H = 4096 or 2048 in bf16 / fp16). Launched at 3 CTAs of 4 warps an SM (<= 168
// registers): x's fp32 values then stay in registers from the sum to the epilogue (unpacked
// once, not twice); at 4 CTAs (128 registers) ptxas (CUDA 13.0, sm_90) spilled 132 bytes.
// 12 warps an SM still have 96 KB of loads in flight, more than the ~36 KB an SM needs for
// 4.8 TB/s at ~1 us latency. Per 8 elements a lane issues 1 x load, 8 unpacks, 8 FFMA of the
// sum (and the unit's 5 SHFL + 5 FADD), 8 FMUL v*r, 4 cvt pairs, 8 unpacks of t, 1 weight
// load, 8 unpacks of w, 8 FADD w + offset, 8 FMUL, 4 cvt pairs, 1 store (SASS counts in
// docs/norm.md).
//
// Same arithmetic and order as row_finish (so the host emulation's bits): per unit the lane
// fold of 8 FFMAs from +0 and the xor butterfly, units folded left to right from +0;
// r = rms_r(sum, H, eps); t = round_x(v * r) (v - 0 == v bit for bit, -0 included, so the
// mean of 0 is left out); y = round_x((w + weight_offset) * t). The weight offset is kept
// (w + 0 turns -0 into +0, which sets the sign of a zero y).
#pragma once
#include "norm_row.cuh"

namespace mlops::norm {

template <class T> constexpr int dtype_code();
template <> constexpr int dtype_code<bf16>() { return MLOPS_DTYPE_BF16; }
template <> constexpr int dtype_code<f16>() { return MLOPS_DTYPE_FP16; }

// Unpacks 8 values to floats. bf16: one instruction an element (lo = u << 16, hi = u & 0xffff0000
// of each 32-bit pair); unpack8 goes through 16-bit elements and nvcc 13.0 (sm_90) extracts a
// pair's high half with PRMT and shifts it back: two for every odd element. Same values.
template <class T>
__device__ __forceinline__ void unpack8_pairs(const Raw8<T>& r, float out[8]) {
  if constexpr (std::is_same_v<T, bf16>) {
    const uint32_t* u = reinterpret_cast<const uint32_t*>(&r);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = __uint_as_float(u[i] << 16);
      out[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
  } else {
    unpack8(r, out);  // f16: cvt.f32.f16, one HADD2.F32 an element
  }
}

// The same values as unpack8_pairs, through volatile asm: nvcc can neither merge them with the
// sum's unpacks nor move them, so x's fp32 values are not kept alive from the sum to the
// epilogue (16 units at 4 CTAs an SM, 128 registers: with them kept, ptxas 13.0 spilled 132
// bytes; 8 units at 6 CTAs, 80 registers: 56 bytes).
template <class T>
__device__ __forceinline__ void unpack8_again(const Raw8<T>& r, float out[8]) {
  if constexpr (std::is_same_v<T, bf16>) {
    const uint32_t* u = reinterpret_cast<const uint32_t*>(&r);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t lo, hi;
      asm volatile("shl.b32 %0, %2, 16;\n\tand.b32 %1, %2, 0xffff0000;" : "=r"(lo), "=r"(hi) : "r"(u[i]));
      out[2 * i] = __uint_as_float(lo);
      out[2 * i + 1] = __uint_as_float(hi);
    }
  } else {
    unpack8(r, out);  // f16: not kept alive at 128 registers anyway (126 used, no spill)
  }
}

// Whether a call is the lean kernel's (U fixed by the caller's dispatch on p.units): y, or
// an INT8 output with or without y.
template <class XT>
inline bool lean_call(const Params& p) {
  const bool out_ok = p.quant == MLOPS_QUANT_NONE ? p.y != nullptr : p.quant == MLOPS_QUANT_INT8;
  return p.lean_rows && out_ok && p.kind == MLOPS_NORM_RMS && p.order == MLOPS_ORDER_HF && p.weight != nullptr &&
         p.bias == nullptr && p.residual == nullptr && p.w_dtype == dtype_code<XT>() && p.group == p.hidden &&
         int64_t(p.units) * kUnit == p.hidden;
}

// INT8 codes of a lane's 8 values of y (x's values) and the scale of its block of 16 (lanes
// 2k, 2k+1): the bits of quant8<MLOPS_QUANT_INT8>, fewer instructions. The code clamps before
// it rounds (cvt.rni.s32.f32 rounds to nearest even): rint and a clamp to the integers +-127
// commute, and a NaN clamps to -127 either way (fmaxf returns the number). Bytes are packed
// with three PRMT a word of 4 codes rather than shifts and ORs.
// kPair: the two lanes of a block share its two IEEE divisions (amax / 127 on the even lane,
// 127 / amax on the odd one, exchanged by one SHFL) instead of each lane doing both: one
// div.rn routine (~10 instructions and a slow-path branch) a lane a unit instead of two.
// div.rn is correctly rounded whichever lane runs it, so s and inv are the same bits;
// 127 / 0 = inf on the odd lane is replaced by int8_inv's 0 as before.
template <bool kPair>
__device__ __forceinline__ void int8_lean(const float y[8], int lane, int col0, uint8_t* qrow, float* srow) {
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(y[i]));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  float s, inv;
  if constexpr (kPair) {
    const bool odd = lane & 1;
    // The operands are selected, not the quotients: nvcc would otherwise run both divisions.
    const float mine = (odd ? 127.0f : amax) / (odd ? amax : 127.0f);
    const float other = __shfl_xor_sync(0xffffffffu, mine, 1);
    s = odd ? other : mine;
    inv = amax == 0.0f ? 0.0f : (odd ? mine : other);
  } else {
    s = int8_scale(amax);
    inv = int8_inv(amax);
  }
  uint32_t c[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    int q[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) q[i] = __float2int_rn(fminf(fmaxf(y[4 * j + i] * inv, -127.0f), 127.0f));
    c[j] = __byte_perm(__byte_perm(q[0], q[1], 0x0040), __byte_perm(q[2], q[3], 0x0040), 0x5410);
  }
  *reinterpret_cast<uint2*>(qrow + col0) = make_uint2(c[0], c[1]);
  if ((lane & 1) == 0) srow[col0 / 16] = s;
}

// kQuant: MLOPS_QUANT_NONE (y) or MLOPS_QUANT_INT8 (codes and scales, y when p.y is set).
// kCs: st.global.cs for y (evict-first: y is never read again here, so the L2 keeps x's lines).
// kPair: int8_lean's shared division (INT8 instances only).
// kAgain: x's U * 8 fp32 values (and ~40 more) do not fit the registers of kMinCtas CTAs an
// SM, so x is unpacked again in the epilogue (16 units at 4 CTAs, 8 at 6); else they are kept.
template <class XT, int U, int kMinCtas, int kQuant, bool kCs = false, bool kPair = false>
__global__ void __launch_bounds__(kRowThreads, kMinCtas) norm_row_lean_kernel(Params p) {
  static_assert(kQuant == MLOPS_QUANT_NONE || kQuant == MLOPS_QUANT_INT8, "lean rows: y or INT8");
  static_assert(sizeof(XT) == 2, "lean rows: bf16 / fp16 x");
  constexpr bool kAgain = U * 8 + 40 > 65536 / (kRowThreads * kMinCtas);
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  if (row >= p.rows) return;  // a whole warp leaves: no shuffle is left waiting
  // One 64-bit base a tensor; units are immediate offsets of 512 bytes from it.
  const XT* xr = static_cast<const XT*>(p.x) + row * p.x_stride + lane * 8;
  const XT* wr = static_cast<const XT*>(p.weight) + lane * 8;
  const bool want_y = kQuant == MLOPS_QUANT_NONE || p.y != nullptr;
  XT* yr = want_y ? static_cast<XT*>(p.y) + row * p.y_stride + lane * 8 : nullptr;
  Raw8<XT> raw[U];
#pragma unroll
  for (int k = 0; k < U; ++k) raw[k].q[0] = ld_stream16(xr + k * kUnit);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < U; ++k) {
    float e[8];
    unpack8_pairs(raw[k], e);
    s = s + warp_butterfly32(lane_sumsq8(e));
  }
  const float r = rms_r(s, p.group, p.eps);
  const float off = p.weight_offset;
#pragma unroll
  for (int k = 0; k < U; ++k) {
    Raw8<XT> wq;
    wq.q[0] = ld_const16(wr + k * kUnit);  // L1-cached: every row re-reads w
    float e[8], w[8];
    if constexpr (kAgain) unpack8_again(raw[k], e);
    else unpack8_pairs(raw[k], e);
    unpack8_pairs(wq, w);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = e[i] * r;
    Raw8<XT> t;
    pack8<XT>(e, t);  // t = round_x(v * r): cvt.rn pairs, back as floats
    unpack8_pairs(t, e);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = (w[i] + off) * e[i];
    Raw8<XT> o;
    pack8<XT>(e, o);  // pack8 rounds: cvt.rn, y = round_x(w_eff * t)
    if (want_y) st16<kCs>(yr + k * kUnit, o.q[0]);
    if constexpr (kQuant == MLOPS_QUANT_INT8) {
      unpack8_pairs(o, e);  // y as x's values
      int8_lean<kPair>(e, lane, k * kUnit + lane * 8, static_cast<uint8_t*>(p.q) + row * p.q_stride,
                static_cast<float*>(p.q_scale) + row * p.q_scale_stride);
    }
  }
}

}  // namespace mlops::norm
