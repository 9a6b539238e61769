// The arithmetic of one element of a norm, shared by the kernels (norm_kernel.cuh) and the
// host emulation (norm_host.cpp): both call these functions, so the order of operations
// and every rounding are the same code.
#pragma once
#include "mlops/common/exp.h"
#include "mlops/common/fixed_sum.h"
#include "mlops/common/round.h"
#include "mlops/norm.h"

namespace mlops::norm {

// Element type tags; storage is the raw bits.
struct bf16 { uint16_t bits; };
struct f16 { uint16_t bits; };

template <class T> struct Elem;
template <> struct Elem<bf16> {
  static MLOPS_HD float load(bf16 v) { return bf16_to_f32(v.bits); }
  static MLOPS_HD bf16 store(float f) { return bf16{f32_to_bf16(f)}; }
  static MLOPS_HD float round(float f) { return bf16_to_f32(f32_to_bf16(f)); }
};
template <> struct Elem<f16> {
  static MLOPS_HD float load(f16 v) { return f16_to_f32(v.bits); }
  static MLOPS_HD f16 store(float f) { return f16{f32_to_f16(f)}; }
  static MLOPS_HD float round(float f) { return f16_to_f32(f32_to_f16(f)); }
};
template <> struct Elem<float> {
  static MLOPS_HD float load(float v) { return v; }
  static MLOPS_HD float store(float f) { return f; }
  static MLOPS_HD float round(float f) { return f; }
};

// What the kernels and the host emulation read of a call (a flat copy of mlops_norm_args
// with derived sizes). Passed to kernels by value.
struct Params {
  int64_t rows, hidden;
  int units;          // ceil(hidden / 256)
  int group;          // elements per group (hidden for one group)
  int units_per_group;
  int groups;
  int kind, gate_mode, order, quant;
  float eps, weight_offset;
  const void* x; int64_t x_stride;
  const void* residual; int64_t residual_stride;
  void* residual_out; int64_t residual_out_stride;
  const void* gate; int64_t gate_stride;
  const void* weight; const void* bias; int w_dtype;
  void* y; int64_t y_stride;
  void* q; int64_t q_stride;
  void* q_scale; int64_t q_scale_stride;
  const float* quant_scale;
  // 16-byte vector access is legal for every tensor (checked on the host once per call)
  bool vec_ok;
  // the lean kernel applies (norm_simple_kernel's conditions, but the register fit: per variant)
  bool simple;
  // the one-warp-a-row kernels apply (norm_row.cuh): simple, except that a quantized output is
  // allowed and y may be absent; the register fit is per variant
  bool lean_rows;
  int sms;  // SMs of the device (persistent grids); set by mlops_norm, 0 on the host
};

Params make_params(const mlops_norm_args& a);

// Step 1, per element: x (+ residual) -> s (rounded to x's type, the residual output);
// v = s, or s * silu(z) with the gate before the norm (kept in fp32, as Mamba-2 does).
MLOPS_HD float gate_before(float s, float z) { return s * silu_det(z); }

// Step 3, per element: n is the normalized value (v - mean) * r.
template <class XT>
MLOPS_HD float epilogue(const Params& p, float n, float w, float b, float z) {
  const bool has_w = p.weight != nullptr;
  const float w_eff = has_w ? w + p.weight_offset : 1.0f;
  float u;
  if (p.order == MLOPS_ORDER_HF) {
    float t = Elem<XT>::round(n);
    u = has_w ? w_eff * t : t;
    if (p.bias) u = u + b;
    if (p.gate_mode == MLOPS_GATE_AFTER) u = Elem<XT>::round(u) * silu_det(z);
  } else {
    u = has_w ? n * w_eff : n;
    if (p.bias) u = u + b;
    if (p.gate_mode == MLOPS_GATE_AFTER) u = u * silu_det(z);
  }
  return Elem<XT>::round(u);
}

MLOPS_HD float rms_r(float sumsq, int count, float eps) {
  return 1.0f / sqrtf(sumsq / float(count) + eps);
}

// ---- quantizers of one block of 16 output values (y already rounded to the output type) ----
constexpr float kE4M3Max = 448.0f;
constexpr float kE2M1Max = 6.0f;
constexpr float kE4M3Tiny = 0.015625f;  // torch.finfo(float8_e4m3fn).tiny, torchao's E4M3_EPS

// Codes multiply by an inverse computed once a block / row (one IEEE division there, none
// per element: an IEEE division is a call into a slow-path subroutine in SASS, and per element
// it made the kernel 5x larger than the instruction cache).
MLOPS_HD float int8_scale(float amax) { return amax / 127.0f; }
MLOPS_HD float int8_inv(float amax) { return amax == 0.0f ? 0.0f : 127.0f / amax; }
MLOPS_HD int8_t int8_code(float y, float inv) {
  float q = rint_even(y * inv);
  q = fminf(fmaxf(q, -127.0f), 127.0f);
  return int8_t(q);
}

MLOPS_HD uint8_t fp8_code(float y, float inv) {
  float q = y * inv;
  q = fminf(fmaxf(q, -kE4M3Max), kE4M3Max);
  return f32_to_e4m3(q);
}
MLOPS_HD float fp8_row_scale(float amax) { return amax == 0.0f ? 1.0f : amax / kE4M3Max; }
MLOPS_HD float fp8_row_inv(float amax) { return amax == 0.0f ? 1.0f : kE4M3Max / amax; }

// NVFP4 as torchao.prototype.mx_formats.nvfp4_tensor.nvfp4_quantize (0.18): the block scale
// amax/6 (over the global decode factor g when there is one) is clamped to
// [E4M3 tiny, 448] and rounded to E4M3; values are multiplied by (1/g)/scale (or 1/scale),
// clamped to [-6, 6] and rounded to E2M1.
struct Nvfp4Block { uint8_t scale_code; float mul; };
MLOPS_HD Nvfp4Block nvfp4_block(float amax, const float* global) {
  float bs = amax / kE2M1Max;
  Nvfp4Block r;
  if (global) {
    float g = *global;
    float sb = fminf(fmaxf(bs / g, kE4M3Tiny), kE4M3Max);
    r.scale_code = f32_to_e4m3(sb);
    r.mul = (1.0f / g) / e4m3_to_f32(r.scale_code);
  } else {
    float sb = fminf(fmaxf(bs, kE4M3Tiny), kE4M3Max);
    r.scale_code = f32_to_e4m3(sb);
    r.mul = 1.0f / e4m3_to_f32(r.scale_code);
  }
  return r;
}
MLOPS_HD uint8_t nvfp4_code(float y, float mul) {
  float v = fminf(fmaxf(y * mul, -kE2M1Max), kE2M1Max);
  return f32_to_e2m1(v);
}

}  // namespace mlops::norm
