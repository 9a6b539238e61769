// The step-counter and global-norm kernels (the launches stay in optim_norm.cu). A header so
// tests/c/kernel_on_host.cpp can run the same device code on the host.
#pragma once
#include "optim_norm_math.h"

namespace mlops::optim {

__global__ void increment_steps_kernel(const mlops_optim_tensor* tab, int64_t n, const float* found_inf) {
  if (found_inf && *found_inf != 0.0f) return;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    *tab[i].step = *tab[i].step + 1.0f;
}

__global__ void __launch_bounds__(kThreads) norm_partials_kernel(const mlops_optim_tensor* tab, int64_t num_tensors,
                                                                 float* partials) {
  __shared__ float unit_vals[kUnitsPerChunk];
  const int32_t* chunk_map = reinterpret_cast<const int32_t*>(tab + num_tensors);
  const int64_t c = blockIdx.x;
  const mlops_optim_tensor t = tab[chunk_map[c]];
  const int64_t chunk_start = (c - t.first_chunk) * int64_t(MLOPS_OPTIM_CHUNK);
  const int64_t left = t.numel - chunk_start;
  const int units = int(left >= MLOPS_OPTIM_CHUNK ? kUnitsPerChunk : (left + kUnitElems - 1) / kUnitElems);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int u = warp; u < units; u += kThreads / 32) {
    const int64_t i0 = chunk_start + int64_t(u) * kUnitElems + kLaneElems * lane;
    float v[kLaneElems];
    if ((t.flags & kFlagAligned) && i0 + kLaneElems <= t.numel && t.dtype == MLOPS_DTYPE_FP32) {
      const float4 a = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(t.grad) + i0));
      const float4 b = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(t.grad) + i0 + 4));
      v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else {
#pragma unroll
      for (int e = 0; e < kLaneElems; ++e) v[e] = i0 + e < t.numel ? grad_to_f32(t.grad, t.dtype, i0 + e) : 0.0f;
    }
    const float s = warp_butterfly32(lane_sumsq8(v));
    if (lane == 0) unit_vals[u] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = unit_vals[0];
    for (int u = 1; u < units; ++u) s = s + unit_vals[u];
    partials[c] = s;
  }
}

__global__ void norm_finalize_kernel(const float* partials, int64_t total, float max_norm, const float* grad_scale,
                                     float* norm, float* coef) {
  __shared__ float seg_vals[kFinalizeThreads];
  const int64_t seg = finalize_segment(total);
  float s = 0.0f;
  for (int64_t i = threadIdx.x * seg; i < (threadIdx.x + 1) * seg && i < total; ++i) s = s + partials[i];
  seg_vals[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float tot = seg_vals[0];
    for (int k = 1; k < kFinalizeThreads; ++k) tot = tot + seg_vals[k];
    finish_norm(tot, max_norm, grad_scale, norm, coef);
  }
}

}  // namespace mlops::optim
