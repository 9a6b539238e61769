// The sampler's cluster kernel: the lean forms' weights (sample_weight's integers, straight-line, 4 elements
// interleaved or one at a time), the mass histograms' words, and the exchange barrier they use.
#pragma once
#include "sample_cluster_slice.cuh"

namespace mlops::vocab {
namespace {

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // sample_cluster_shared.cuh: sm_90 device code, or the host runner
// The barrier of an exchange through shared memory: the lean forms' lighter one, or the full one.
template <bool LEAN>
__device__ __forceinline__ void exchange_sync() {
  if constexpr (LEAN) cluster_sync_smem();
  else cluster_sync();
}

// rint(exp_det(u) * 2^31), sample_weight's integer, for u in [-80, 0], straight-line (no branch, so
// the unrolled elements of a loop interleave): exp_det's reduction and polynomial, then one
// scaling. exp_det(u) = (p * 2^h) * 2^(n - h) is p * 2^n exactly while that is a normal float (n >=
// -116 here), and times 2^31 it is p * 2^(n + 31), exact too, so rint of it is the same integer.
// n by one FFMA (session 35): fmaf(u, 1/ln2, 1.5 * 2^23) lies in [2^23, 2^24), where the float step is 1, so
// it is u / ln2 rounded once to an integer, ties to even (the constant is even), and taking the constant off
// is exact. exp_det rounds twice (rintf of fl(u / ln2)); the two n differ for 57 floats u in [-80, 0], where
// the reduced argument is then ln2 wider, and the weight's integer is the same for every float u in [-80, 0]
// (checked for all of them: tests/c/sample_kernel_on_host.cpp, check_lean_weight_of_u). The sum's bits are
// 0x4B400000 + n and 0x4B400000 << 23 is 0 mod 2^32, so 2^(n + 31)'s bits (n + 158) << 23 are (bits << 23) +
// (158 << 23): one LEA, as before. Why: nvcc 13.0 (sm_90) made the rintf an FRND and int(n) an F2I, two of
// the three conversions an element (the third is the weight's F2I.U32), which run on the XU pipe at 16
// lanes a clock an SM (a warp's takes 8 cycles of a partition's); now an FFMA and an FADD where the FMUL,
// FRND and F2I were.
__device__ __forceinline__ uint32_t lean_weight_of_u(float u) {
  const float s = fmaf(u, 1.44269504088896341f, 12582912.0f);
  const float n = s - 12582912.0f;
  float r = fmaf(n, -0.693145751953125f, u);
  r = fmaf(n, -1.428606765330187045e-06f, r);
  float q = 1.9875691500e-4f;
  q = fmaf(q, r, 1.3981999507e-3f);
  q = fmaf(q, r, 8.3334519073e-3f);
  q = fmaf(q, r, 4.1665795894e-2f);
  q = fmaf(q, r, 1.6666665459e-1f);
  q = fmaf(q, r, 5.0000001201e-1f);
  q = fmaf(q * r, r, r);
  q = q + 1.0f;
  return uint32_t(rint_even(q * bits_f32((f32_bits(s) << 23) + (158u << 23))));
}

// What the lean forms need of a row to weigh its elements.
struct LeanRow {
  float m, inv, cutoff;
  float u_min;     // min-p's bound on u (lean_min_u), -inf without min-p
  uint32_t min_w;  // ceil(min_p * 2^31), 0 without min-p
};

// The weights of 4 elements (0 where `on` is false), branch-free past one test of whether any is
// live: sample_weight's value where it is kept (d >= cutoff), then min-p's filter. Why the same
// integers: a live u = (z - m) / T lies in [about -24, 0] (d >= -24 T; z <= m), and u < -80 would
// give 0 either way (exp(-80) * 2^31 < 1e-25), so u is clamped to -80 for the polynomial; a NaN u (a
// subnormal T) is not live, and sample_weight's F2I of a NaN is 0 too. min-p: u < u_min means w <
// min_p * 2^31 (lean_min_u), and w >= min_w is double(w) >= min_p * 2^31 for an integer w (the
// product is exact in double). NAN_TEST false (the global-slice near pass, MLOPS_SAMPLE_GSL_LEAN): no NaN test, the
// same weights: a NaN x makes d NaN, and d >= cutoff is false for it (2 instructions an element fewer).
// MIN_P false (a mass row, mass_row: u_min -inf, min_w 0; the strided near pass's whole trips, MLOPS_SAMPLE_WIDE_LEAN):
// no u >= u_min test, the same weights: it fails only for a NaN u, which with a finite d needs an infinite 1 / T
// (d = 0: 0 x inf), and such a live u weighs lean_weight_of_u(fmaxf(NaN, -80)) = W(-80) = 0.
template <bool NAN_TEST = true, bool MIN_P = true>
__device__ __forceinline__ void lean_weights4(const LeanRow& r, const float (&x)[4], const bool (&on)[4],
                                              uint32_t (&w)[4]) {
  float u[4];
  bool live[4], any = false;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float d = x[j] - r.m;
    u[j] = d * r.inv;
    live[j] = on[j] && (!NAN_TEST || !is_nan(x[j])) && d >= r.cutoff && (!MIN_P || u[j] >= r.u_min);
    any = any || live[j];
    w[j] = 0;
  }
  if (!any) return;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t v = lean_weight_of_u(fmaxf(u[j], -80.0f));
    w[j] = live[j] && (!MIN_P || v >= r.min_w) ? v : 0u;
  }
}

// lean_weights4's weights for rows that keep few elements (lean_draw), warp by warp: a position j's exps
// are evaluated only where a lane of the warp keeps its element j. Called by the whole warp.
__device__ __forceinline__ void lean_weights_sparse4(const LeanRow& r, const float (&x)[4], const bool (&on)[4],
                                                     uint32_t (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float d = x[j] - r.m;
    const float u = d * r.inv;
    const bool live = on[j] && !is_nan(x[j]) && d >= r.cutoff && u >= r.u_min;
    w[j] = 0;
    if (__ballot_sync(kFull, live)) {
      const uint32_t v = lean_weight_of_u(fmaxf(u, -80.0f));
      w[j] = live && v >= r.min_w ? v : 0u;
    }
  }
}

// A weight into a mass histogram copy (two 32-bit words). The lean forms add its low and high 16
// bits into the two words with atomics whose result is not used (RED: nothing waits for them, where
// add_mass's carry test waits for the old value); a copy sees at most 64 threads' elements of a
// staged slice or of the candidates (< 65536 of them), so neither word wraps: the mass is
// lo + hi * 2^16, the same integer.
template <bool LEAN>
__device__ __forceinline__ void add_mass_of(uint32_t* lo, uint32_t* hi, uint32_t w) {
  if constexpr (LEAN) {
    atomicAdd(lo, w & 0xffffu);
    atomicAdd(hi, w >> 16);
  } else {
    add_mass(lo, hi, w);
  }
}
template <bool LEAN>
__device__ __forceinline__ uint64_t mass_of(uint32_t lo, uint32_t hi) {
  if constexpr (LEAN) return uint64_t(lo) + (uint64_t(hi) << 16);
  else return (uint64_t(hi) << 32) | lo;
}

// The lean forms' row: min-p's bound on u. A weight whose exponent u = (z - m) / T is below
// ln(min_p) - 0.01 is below min_p * 2^31 whatever exp_det returns (within 2 ulp: W <= 0.9901 *
// min_p * 2^31 + 0.5 < min_p * 2^31 for min_p >= 1e-6), so its exp is skipped: the same kept
// weights. logf's last bit does not matter to a bound with that margin (host and GPU may differ).
__device__ __forceinline__ LeanRow lean_row(const mlops_sample_config& cfg, float m, Temperature t) {
  LeanRow r;
  r.m = m;
  r.inv = t.inv;
  r.cutoff = t.cutoff;
  const bool mp = cfg.min_p > 0.0f;
  r.u_min = mp && cfg.min_p >= 1e-6f ? logf(cfg.min_p) - 0.01f : -__int_as_float(0x7f800000);
  r.min_w = mp ? uint32_t(ceil(min_p_threshold(cfg.min_p))) : 0u;  // <= 2^31
  return r;
}

// lean_row without min-p: top-p's masses are before min-p.
__device__ __forceinline__ LeanRow mass_row(const mlops_sample_config& cfg, float m, Temperature t) {
  LeanRow r = lean_row(cfg, m, t);
  r.u_min = -__int_as_float(0x7f800000);
  r.min_w = 0;
  return r;
}

// lean_weights4's weight of one element (the same expression, element by element).
__device__ __forceinline__ uint32_t lean_weight1(const LeanRow& r, float x, bool on) {
  const float d = x - r.m;
  const float u = d * r.inv;
  const bool live = on && !is_nan(x) && d >= r.cutoff && u >= r.u_min;
  const uint32_t v = lean_weight_of_u(fmaxf(u, -80.0f));
  return live && v >= r.min_w ? v : 0u;
}
#endif

}  // namespace
}  // namespace mlops::vocab
