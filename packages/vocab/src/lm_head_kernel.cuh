// The LM head on CUDA cores, every arch. A CTA is 8 warps; warp s owns segment s of the hidden
// axis (vocab_math.h: whole units of 256) for every tile of R = 32 / MT vocabulary rows the CTA
// takes. Per tile a lane folds, for each of the R x MT (row, token) pairs, its 8 elements of
// each unit of the segment with fmaf in index order (16-byte loads of W and x). The 32 lane
// values of the R x MT pairs are then added by a reduce-scatter whose tree is the butterfly of
// fixed_sum.h (pairs at lane offsets 16, 8, 4, 2, 1), 31 shuffles instead of 5 x 32; lane j
// ends with pair j. Warp 0 adds the 8 segment values in segment order from shared memory and
// runs the epilogue (scales, max / lowest argmax, key-byte counts). The launch is in
// lm_head_kernel.cu, the one file that instantiates the template (nvcc >= 12.8: template launch
// stubs are local to their object); tests/c/lm_head_kernel_on_host.cpp runs this header's CTAs on
// the host, one host thread a GPU thread.
#pragma once
#include <cuda_runtime.h>

#include "lm_head_params.h"

namespace mlops::vocab {
namespace {

constexpr int kThreads = 32 * kSegments;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }

__device__ __forceinline__ void unpack8(uint4 q, float v[8]) {
  v[0] = bf16_lo(q.x); v[1] = bf16_hi(q.x); v[2] = bf16_lo(q.y); v[3] = bf16_hi(q.y);
  v[4] = bf16_lo(q.z); v[5] = bf16_hi(q.z); v[6] = bf16_lo(q.w); v[7] = bf16_hi(q.w);
}

// 32 values a lane -> lane l holds the butterfly sum of value l over the warp.
__device__ __forceinline__ float reduce_scatter32(float (&a)[32], int lane) {
#pragma unroll
  for (int step = 0; step < 5; ++step) {
    const int half = 16 >> step;
    const bool upper = (lane & half) != 0;
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const float send = upper ? a[i] : a[i + half];
      const float keep = upper ? a[i + half] : a[i];
      a[i] = keep + __shfl_xor_sync(kFull, send, half);
    }
  }
  return a[0];
}

template <int MT>
__global__ void __launch_bounds__(kThreads) lm_head_cc_kernel(LmHeadParams p) {
  constexpr int R = 32 / MT;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int ub = segment_begin(warp, p.units), ue = segment_begin(warp + 1, p.units);
  const int64_t tiles = (p.vocab + R - 1) / R;
  __shared__ float part[2][kSegments][32];
  __shared__ uint32_t hist[MT][256];
  const bool stats = p.best || p.key_hist;
  if (p.key_hist)
    for (int i = threadIdx.x; i < MT * 256; i += kThreads) (&hist[0][0])[i] = 0u;
  uint64_t best = 0;  // warp 0: the best (key, index) of token lane % MT so far
  const int my_m = lane % MT, my_r = lane / MT;
  int buf = 0;
  __syncthreads();
#pragma unroll 1
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, buf ^= 1) {
    const int64_t v0 = tile * R;
    float acc[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) acc[j] = 0.0f;
#pragma unroll 1
    for (int u = ub; u < ue; ++u) {
      const int64_t col0 = int64_t(u) * kUnit + lane * 8;
      if (col0 >= p.hidden) break;  // H % 8 == 0: a lane's 8 elements are all in or all out
      float x[MT][8];
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        if (m < p.tokens) unpack8(__ldg(reinterpret_cast<const uint4*>(p.x + m * p.x_stride + col0)), x[m]);
        else
#pragma unroll
          for (int i = 0; i < 8; ++i) x[m][i] = 0.0f;
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (v0 + r >= p.vocab) continue;
        float w[8];
        // __ldg, not load_weight16: with the inline-asm load nvcc 13.0 left MT = 1's 32
        // accumulators on the stack (a 128-byte frame); with __ldg they stay in registers
        unpack8(__ldg(reinterpret_cast<const uint4*>(p.weight + (v0 + r) * p.weight_stride + col0)), w);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          if (m >= p.tokens) continue;
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[r * MT + m] = fmaf(x[m][i], w[i], acc[r * MT + m]);
        }
      }
    }
    part[buf][warp][lane] = reduce_scatter32(acc, lane);
    __syncthreads();
    if (warp == 0) {
      float total = part[buf][0][lane];
#pragma unroll
      for (int s = 1; s < kSegments; ++s) total = total + part[buf][s][lane];
      const int64_t v = v0 + my_r;
      if (v < p.vocab && my_m < p.tokens) {
        const float logit = lm_head_epilogue(total, p.row_scale, my_m, p.logit_scale);
        p.logits[my_m * p.logits_stride + v] = logit;
        if (stats) {
          const uint32_t k = key_of(logit);
          const uint64_t b = pack_best(k, uint32_t(v));
          best = b > best ? b : best;
          if (p.key_hist) atomicAdd(&hist[my_m][k >> 24], 1u);
        }
      }
    }
  }
  if (!stats) return;
  __syncthreads();
  if (p.key_hist)
    for (int i = threadIdx.x; i < p.tokens * 256; i += kThreads) {
      const uint32_t c = (&hist[0][0])[i];
      if (c) atomicAdd(p.key_hist + i, c);
    }
  if (p.best && warp == 0) {
#pragma unroll
    for (int off = 16; off >= MT; off >>= 1) {
      const uint64_t o = __shfl_xor_sync(kFull, best, off);
      best = o > best ? o : best;
    }
    if (lane < MT && lane < p.tokens && best != 0)
      atomicMax(reinterpret_cast<unsigned long long*>(p.best + lane), (unsigned long long)best);
  }
}

}  // namespace
}  // namespace mlops::vocab
