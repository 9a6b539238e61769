// Embedding rows. A CTA is 256 threads; WARPS warps share a token (8 / WARPS tokens a CTA), its
// units of 256 going round-robin to them. Lane l of the warp that owns unit u handles elements
// 256u + 8l .. +7: widened to fp32, optionally bf16(x * w), and the unit's sum of squares in
// the fixed order of mlops/common/fixed_sum.h. The launch is in embed_kernel.cu, the one file that
// instantiates the template (nvcc >= 12.8 keeps template launch stubs local to their object);
// tests/c/embed_kernel_on_host.cpp runs this header's CTAs on the host.
#pragma once
#include <cuda_runtime.h>

#include "embed_params.h"

// The dynamic shared-memory array (a macro so the kernel-on-host test can give it host storage).
#ifndef MLOPS_VOCAB_EXTERN_SHARED
#define MLOPS_VOCAB_EXTERN_SHARED(type, name) extern __shared__ type name[]
#endif

namespace mlops::vocab {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ __forceinline__ void load_row8(const T* row, int64_t col0, int64_t n, bool vec, float v[8]) {
  if (vec && col0 + 8 <= n) {
    if constexpr (sizeof(T) == 2) {
      const uint4 r = *reinterpret_cast<const uint4*>(row + col0);
      const uint16_t* h = reinterpret_cast<const uint16_t*>(&r);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = load_elem(reinterpret_cast<const T*>(h), i);
    } else {
      const float4 a = *reinterpret_cast<const float4*>(row + col0);
      const float4 b = *reinterpret_cast<const float4*>(row + col0 + 4);
      v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = col0 + i < n ? load_elem(row, col0 + i) : 0.0f;
  }
}

__device__ __forceinline__ void load_table8(const EmbedParams& p, int64_t id, int64_t col0, float v[8]) {
  if (id < 0) {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = 0.0f;
    return;
  }
  const int64_t off = id * p.table_stride;
  if (p.table_dtype == MLOPS_DTYPE_BF16) load_row8(static_cast<const bf16*>(p.table) + off, col0, p.hidden, p.vec_ok, v);
  else if (p.table_dtype == MLOPS_DTYPE_FP16) load_row8(static_cast<const f16*>(p.table) + off, col0, p.hidden, p.vec_ok, v);
  else load_row8(static_cast<const float*>(p.table) + off, col0, p.hidden, p.vec_ok, v);
}

template <int WARPS>
__global__ void __launch_bounds__(kThreads) embed_kernel(EmbedParams p) {
  constexpr int kTokens = 8 / WARPS;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int slot = warp / WARPS, wr = warp % WARPS;
  const int64_t t = int64_t(blockIdx.x) * kTokens + slot;
  const bool active = t < p.tokens;
  MLOPS_VOCAB_EXTERN_SHARED(float, unit_sums);  // [kTokens][units]
  int64_t id = -1;
  if (active) {
    id = embed_row(p, t);
    if (id < 0 && p.oov_flag && wr == 0 && lane == 0) *p.oov_flag = 1;
  }
  const bool want_sums = p.unit_sumsq || p.rms_r;
#pragma unroll 1
  for (int u = wr; active && u < p.units; u += WARPS) {
    const int64_t col0 = int64_t(u) * kUnit + lane * 8;
    float v[8];
    load_table8(p, id, col0, v);
    const bool full = p.vec_ok && col0 + 8 <= p.hidden;
    if (p.out) {
      float* o = p.out + t * p.out_stride;
      if (full) {
        *reinterpret_cast<float4*>(o + col0) = make_float4(v[0], v[1], v[2], v[3]);
        *reinterpret_cast<float4*>(o + col0 + 4) = make_float4(v[4], v[5], v[6], v[7]);
      } else {
        for (int i = 0; i < 8; ++i)
          if (col0 + i < p.hidden) o[col0 + i] = v[i];
      }
    }
    if (p.xw) {
      uint16_t* o = p.xw + t * p.xw_stride;
      float w[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) w[i] = col0 + i < p.hidden ? embed_weight(p, col0 + i) : 0.0f;
      if (full) {
        uint4 r;
        r.x = f32x2_to_bf16x2(v[0] * w[0], v[1] * w[1]);
        r.y = f32x2_to_bf16x2(v[2] * w[2], v[3] * w[3]);
        r.z = f32x2_to_bf16x2(v[4] * w[4], v[5] * w[5]);
        r.w = f32x2_to_bf16x2(v[6] * w[6], v[7] * w[7]);
        *reinterpret_cast<uint4*>(o + col0) = r;
      } else {
        for (int i = 0; i < 8; ++i)
          if (col0 + i < p.hidden) o[col0 + i] = f32_to_bf16(v[i] * w[i]);
      }
    }
    if (want_sums) {
      const float s = warp_butterfly32(lane_sumsq8(v));
      if (lane == 0) {
        unit_sums[slot * p.units + u] = s;
        if (p.unit_sumsq) p.unit_sumsq[t * p.unit_sumsq_stride + u] = s;
      }
    }
  }
  if (!p.rms_r) return;
  __syncthreads();
  if (active && wr == 0 && lane == 0) {
    float s = 0.0f;  // units fold left to right, as mlops-norm folds them
    for (int u = 0; u < p.units; ++u) s = s + unit_sums[slot * p.units + u];
    p.rms_r[t] = embed_rms_r(s, p.hidden, p.eps);
  }
}

}  // namespace
}  // namespace mlops::vocab
