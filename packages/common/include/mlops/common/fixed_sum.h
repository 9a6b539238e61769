// Fixed-order sums, shared by norm, vocab (embed, lm_head) and attention.
//
// The order (docs/design/fixed-order-sums.md):
//   * A row is cut into units of 256 elements. Lane l (0..31) of the warp that owns a unit
//     holds its elements 8l .. 8l+7 and folds them in index order: s = fmaf(v_i, v_i, s)
//     for sums of squares, s = s + v_i for plain sums, starting from +0.
//   * The 32 lane values of a unit are added by a butterfly: at offsets 16, 8, 4, 2, 1 each
//     lane adds the value of lane (l ^ offset). Addition commutes bit for bit, so every lane
//     ends with the same value; host_butterfly32 replays the same tree.
//   * Unit values fold left to right: total = ((u0 + u1) + u2) + ... in unit order.
// Nothing depends on how many warps, CTAs or GPUs share the row, so every variant and
// every architecture gives the same bits.
#pragma once
#include "hd.h"

namespace mlops {

constexpr int kUnit = 256;       // elements per unit
constexpr int kLaneElems = 8;    // elements per lane within a unit

MLOPS_HD float lane_sumsq8(const float v[kLaneElems]) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kLaneElems; ++i) s = fmaf(v[i], v[i], s);
  return s;
}

MLOPS_HD float lane_sum8(const float v[kLaneElems]) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kLaneElems; ++i) s = s + v[i];
  return s;
}

#if defined(__CUDACC__)
// Every lane of the warp must call it (full mask). Returns the unit value in every lane.
__device__ __forceinline__ float warp_butterfly32(float v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
#endif

// Host replay of warp_butterfly32 over the 32 lane values.
inline float host_butterfly32(const float lanes[32]) {
  float v[32];
  for (int l = 0; l < 32; ++l) v[l] = lanes[l];
  for (int off = 16; off >= 1; off >>= 1) {
    float n[32];
    for (int l = 0; l < 32; ++l) n[l] = v[l] + v[l ^ off];
    for (int l = 0; l < 32; ++l) v[l] = n[l];
  }
  return v[0];
}

}  // namespace mlops
