// The per-element arithmetic of every update, shared by the kernels and the host emulation
// (MLOPS_HD), so the GPU and the host give the same bits. Written as explicit operations
// (fmaf only where written) in the order of torch's CPU fused kernels
// (aten/src/ATen/native/cpu/FusedAdamKernel.cpp / FusedSGDKernel.cpp, fp32 vector path), so
// the host emulation also gives torch.optim.AdamW / Adam / SGD(fused=True)'s bits on the CPU.
// The fmaf calls mirror torch's binaries, not only its source: its x86 wheels are built by GCC,
// which contracts a*b + c of the AVX2 / AVX-512 vector code into FMAs (v*beta2 + c2*g*g,
// g + p*wd, p + g*(-lr)); tests/test_optimizers_vs_torch.py measures the match.
#pragma once
#include "mlops/common/hd.h"
#include "mlops/common/round.h"
#include "mlops/optimizers.h"

namespace mlops::optim {

// beta^n by binary powering: a fixed sequence of IEEE double products, the same bits on the
// host and on every GPU (device pow() is not correctly rounded, glibc's is; this is neither but
// deterministic). Within a few double ulps of pow: far below the float the scalars become.
MLOPS_HD double pow_int(double b, double n_) {
  uint64_t n = n_ > 0 ? uint64_t(n_) : 0;
  double r = 1.0, x = b;
  while (n) {
    if (n & 1) r = r * x;
    x = x * x;
    n >>= 1;
  }
  return r;
}

// The scalars of one tensor's update: double math like torch, then rounded to float once.
struct Scalars {
  float lr, neg_lr, decay, wd, coef1, coef1m1, beta1, beta2, coef2, bc2_sqrt, eps, neg_step_size;
  bool lerp_small, has_wd, first;
};

MLOPS_HD Scalars make_scalars(const mlops_optim_args& a, double lr, double step) {
  Scalars s;
  s.lr = float(lr);
  s.neg_lr = float(-lr);
  s.has_wd = a.weight_decay != 0.0;
  s.decay = float(1.0 - lr * a.weight_decay);
  s.wd = float(a.weight_decay);
  s.beta1 = float(a.beta1);
  s.beta2 = float(a.beta2);
  s.eps = float(a.eps);
  s.first = step <= 1.0;
  if (a.algo == MLOPS_OPTIM_ADAM) {
    const double bc1 = 1.0 - pow_int(a.beta1, step);
    const double bc2 = 1.0 - pow_int(a.beta2, step);
    s.coef1 = float(1.0 - a.beta1);
    s.coef2 = float(1.0 - a.beta2);
    s.neg_step_size = float(-(lr / bc1));
    s.bc2_sqrt = float(sqrt(bc2));
  } else if (a.algo == MLOPS_OPTIM_SGD) {
    s.coef1 = float(1.0 - a.beta2);  // 1 - dampening
    s.coef2 = 0.0f;
    s.neg_step_size = float(-lr);
    s.bc2_sqrt = 1.0f;
  } else {  // Lion
    s.coef1 = float(1.0 - a.beta1);
    s.coef2 = float(1.0 - a.beta2);
    s.neg_step_size = float(-lr);
    s.bc2_sqrt = 1.0f;
  }
  s.coef1m1 = s.coef1 - 1.0f;
  s.lerp_small = fabsf(s.coef1) < 0.5f;
  return s;
}

// Gradient preprocessing: unscale (GradScaler), clip, maximize.
MLOPS_HD float prep_grad(float g, const float* scale, const float* clip, bool maximize) {
  if (scale) g = g / *scale;
  if (clip) g = g * *clip;
  if (maximize) g = -g;
  return g;
}

// Adam / AdamW, torch's fused order: decay, lerp (fma), second moment, denominator, update.
MLOPS_HD void adam_elem(const Scalars& s, bool decoupled, bool amsgrad, float& p, float g, float& m, float& v,
                        float& vmax) {
  if (s.has_wd) {
    if (decoupled) p = p * s.decay;
    else g = fmaf(p, s.wd, g);
  }
  m = s.lerp_small ? fmaf(s.coef1, g - m, m) : fmaf(s.coef1m1, g - m, g);
  v = fmaf(s.coef2 * g, g, v * s.beta2);
  float vv = v;
  if (amsgrad) {
    vmax = vmax > v || vmax != vmax ? vmax : v;  // torch.maximum: NaN wins
    vv = vmax;
  }
  const float denom = sqrtf(vv) / s.bc2_sqrt + s.eps;
  p = p + s.neg_step_size * m / denom;
}

// SGD, torch's fused order (fma where torch's vector code has vec::fmadd).
MLOPS_HD void sgd_elem(const Scalars& s, bool momentum, bool nesterov, float& p, float g, float& buf) {
  if (s.has_wd) g = fmaf(p, s.wd, g);
  if (momentum) {
    buf = s.first ? g : fmaf(s.coef1, g, buf * s.beta1);
    g = nesterov ? fmaf(buf, s.beta1, g) : buf;
  }
  p = fmaf(g, s.neg_lr, p);
}

// Lion (Chen et al. 2023, Algorithm 2): c = b1 m + (1-b1) g; p -= lr (sign(c) + wd p);
// m = b2 m + (1-b2) g. The decay is applied as p *= 1 - lr*wd first (the same in exact math).
MLOPS_HD void lion_elem(const Scalars& s, float& p, float g, float& m) {
  if (s.has_wd) p = p * s.decay;
  const float c = m * s.beta1 + g * s.coef1;
  const float u = c > 0.0f ? s.neg_lr : (c < 0.0f ? s.lr : 0.0f);
  p = p + u;
  m = m * s.beta2 + g * s.coef2;
}

// ---- stochastic rounding -------------------------------------------------------------------
// lowbias32 (Chris Wellons' 32-bit integer hash): a bijection whose outputs for consecutive
// inputs look independent; chained over (seed, step, tensor id, element index) it is a
// counter-based generator: a value depends on those four numbers alone.
MLOPS_HD uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

MLOPS_HD uint32_t sr_key(uint32_t seed, uint32_t step, uint32_t id) {
  return mix32(seed ^ mix32(step ^ mix32(id + 0x9e3779b9u)));
}

MLOPS_HD uint32_t sr_bits(uint32_t key, int64_t index) {
  return mix32(key ^ mix32(uint32_t(index) ^ mix32(uint32_t(uint64_t(index) >> 32) + key)));
}

// float -> bf16 rounding up with probability (x - down) / (up - down): add 16 random bits
// below the kept ones, truncate. Unbiased: E[result] = x. NaN stays a quiet NaN.
MLOPS_HD uint16_t f32_to_bf16_sr(float f, uint32_t r) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t(((u >> 16) & 0x8000u) | 0x7fc0u);
  if ((u & 0x7fffffffu) == 0x7f800000u) return uint16_t(u >> 16);
  u += r & 0xffffu;
  return uint16_t(u >> 16);
}

// ---- 8-bit block-wise states (bitsandbytes' scheme) -----------------------------------------
// code = the map entry nearest x / absmax (ties to the lower entry); value = map[code] * absmax.
MLOPS_HD uint8_t quantize_nearest(const float* map, float x) {
  int lo = 0, hi = 255;  // invariant: map[lo] <= x < map[hi] unless x is outside the range
  if (!(x > map[0])) return 0;
  if (x >= map[255]) return 255;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (map[mid] <= x) lo = mid;
    else hi = mid;
  }
  return (x - map[lo]) <= (map[hi] - x) ? uint8_t(lo) : uint8_t(hi);
}

// x / absmax as the 8-bit update computes it: x times r = 1 / absmax (qrecip: one division a
// block, as bitsandbytes does), 0 when absmax is 0, and a true division in a block whose
// 1 / absmax is not finite (absmax < 2^-128).
MLOPS_HD float qrecip(float absmax) { return absmax > 0.0f ? 1.0f / absmax : 0.0f; }
MLOPS_HD bool qrecip_finite(float r) { return r <= 3.40282347e38f; }
MLOPS_HD float qnormalize(float x, float absmax, float r) {
  return absmax > 0.0f ? (qrecip_finite(r) ? x * r : x / absmax) : 0.0f;
}

MLOPS_HD float fabs_max(float a, float b) {
  const float fb = fabsf(b);
  return fb > a ? fb : a;
}

// ---- parameters in storage -----------------------------------------------------------------
struct bf16_t { uint16_t v; };
struct f16_t { uint16_t v; };

MLOPS_HD float to_f32(float v) { return v; }
MLOPS_HD float to_f32(bf16_t v) { return bf16_to_f32(v.v); }
MLOPS_HD float to_f32(f16_t v) { return f16_to_f32(v.v); }

// new parameter value -> storage: RNE, or stochastic rounding (bf16 without master weights)
MLOPS_HD void from_f32(float x, float& out, bool, uint32_t) { out = x; }
MLOPS_HD void from_f32(float x, bf16_t& out, bool sr, uint32_t r) {
  out.v = sr ? f32_to_bf16_sr(x, r) : f32_to_bf16(x);
}
MLOPS_HD void from_f32(float x, f16_t& out, bool, uint32_t) { out.v = f32_to_f16(x); }

// One element through the whole update, after loading (p: master or param as float, g
// prepared, m / v / vm dequantized). The kernels and the host emulation both call it.
struct Elem {
  float p, g, m, v, vm;
};

// amsgrad: the kernels pass a compile-time value (an AMSGrad-free instance needs ~25 registers
// less, nvcc 13.0 sm_90), the host emulation a.amsgrad.
template <int ALGO>
MLOPS_HD void update_elem(const mlops_optim_args& a, const Scalars& s, Elem& e, bool amsgrad) {
  if (ALGO == MLOPS_OPTIM_ADAM) adam_elem(s, a.decoupled != 0, amsgrad, e.p, e.g, e.m, e.v, e.vm);
  else if (ALGO == MLOPS_OPTIM_SGD) sgd_elem(s, a.beta1 != 0.0, a.nesterov != 0, e.p, e.g, e.m);
  else lion_elem(s, e.p, e.g, e.m);
}

}  // namespace mlops::optim
