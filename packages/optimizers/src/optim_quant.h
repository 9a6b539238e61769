// The 8-bit kernels' table quantizer: quantize_nearest (optim_math.h, the spec, which the host
// emulation runs) for the two standard dynamic maps from one byte and one float read instead
// of a binary search (optim_qtables.h and tools/gen_qtables.py say how the tables are made).
#pragma once
#include "mlops/common/hd.h"
#include "optim_qtables.h"

namespace mlops::optim {

// Bucket c of the top 16 bits of |x| (the signed map: its + or - half), thr[c] = T[c + 1]
// (the smallest float whose code is > c): code = c + (x >= thr[c]). Equal to
// quantize_nearest(standard map, x) for every float that leaves `bad` alone
// (tests/c/qtables_exhaustive.cpp checks all 2^32). Sets bad for NaN, +-inf, |x| >= 1.0078125
// and, for the unsigned map, x < 0 or -0.0: the caller then takes quantize_nearest.
template <bool SIGNED>
MLOPS_HD uint32_t quantize_table(float x, const uint8_t* bucket, const float* thr, bool& bad) {
  const uint32_t u = f32_bits(x);
  const uint32_t key = SIGNED ? (u >> 16) & 0x7fffu : u >> 16;
  bad = bad || key > kQBucketHi;
  int i = int(key) - int(kQBucketLo);
  i = i < 0 ? 0 : (i > kQBuckets - 1 ? kQBuckets - 1 : i);
  if (SIGNED && (u >> 31) != 0u) i += kQBuckets;
  const uint32_t c = bucket[i];
  return c + (x >= thr[c] ? 1u : 0u);
}

#if !defined(__CUDACC__)
// Host: are the two maps (bits) the standard ones the tables describe? Plain C++ builds only (the host
// tests): under nvcc the tables are __device__ arrays, which host code cannot read (nvcc 11.8 / 13.5
// warning #20091-D on every .cu that included this while it was guarded by __CUDA_ARCH__ alone).
inline bool qmaps_standard(const float* map1, const float* map2) {
  for (int k = 0; k < 256; ++k)
    if (f32_bits(map1[k]) != kQMapS[k] || f32_bits(map2[k]) != kQMapU[k]) return false;
  return true;
}
#endif

}  // namespace mlops::optim
