// A float exp and silu that give the same bits on the host and on every GPU arch.
// expf on the device (ex2.approx based, 2 ulp) and the host's libm differ in the last bit;
// gates must not, so both sides run this: Cody-Waite reduction by ln2, a degree-6 minimax
// polynomial by Horner with fmaf, and an exact scaling by 2^n. Accuracy: within 2 ulp of
// the correctly rounded exp over [-87, 88] (tests/test_exp.py measures it against float64).
#pragma once
#include "hd.h"

namespace mlops {

// exp_det's reduction and polynomial: n = rint(x / ln2) and the returned p ~ e^(x - n ln2), so exp(x) = p * 2^n.
// exp_det below and attention's exp_det_le (fbla_math.h) differ only in how they scale p by 2^n; their sm_90 SASS is
// the same as with their own copies (session 18). vocab's lean_weight_of_u (sample_cluster_lean.cuh) keeps its own
// copy: calling this moved 8 sampler kernels' branch layout (the same FFMA / FMUL counts); GPU run 107 (session 20)
// passed their tokens (test_vocab_sampler_gpu.py 437 passed) but timed the planned B = 1 top-k kernel ~0.5 us slower
// (CUPTI 14.05 / 14.40 -> 14.74 / 14.75 us), on a target it already misses.
// e^(x - n ln2) for an integer-valued float n = rint(x / ln2), |n| <= 150: the Cody-Waite reduction (ln2 in a high part
// whose products with n are exact and a low part) and the polynomial. Attention's exp_att (fbla_math.h) takes n its own
// way and shares this.
MLOPS_HD float exp_det_poly(float x, float n) {
  float r = fmaf(n, -0.693145751953125f, x);          // ln2 high part (exact product)
  r = fmaf(n, -1.428606765330187045e-06f, r);         // ln2 low part
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  p = fmaf(p * r, r, r);                              // r + r^2 * p
  return p + 1.0f;
}

MLOPS_HD float exp_det_reduced(float x, float& n) {
  n = rint_even(x * 1.44269504088896341f);
  return exp_det_poly(x, n);
}

MLOPS_HD float exp_det(float x) {
  if (!(x == x)) return x;                 // NaN
  if (x > 88.5f) return bits_f32(0x7f800000u);
  if (x < -103.5f) return 0.0f;
  float n;
  const float p = exp_det_reduced(x, n);
  // scale by 2^n in two steps so subnormal results and n = 128 stay exact
  int ni = int(n);
  int h = ni / 2;
  float s1 = bits_f32(uint32_t(h + 127) << 23);
  float s2 = bits_f32(uint32_t(ni - h + 127) << 23);
  return (p * s1) * s2;
}

// silu(z) = z / (1 + e^-z), IEEE division on both sides (nvcc's default -prec-div=true).
MLOPS_HD float silu_det(float z) { return z / (1.0f + exp_det(-z)); }

}  // namespace mlops
