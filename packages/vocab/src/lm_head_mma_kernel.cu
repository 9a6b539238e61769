// The LM head on tensor cores: m16n8k16 BF16 (sm_80+), m16n8k8 FP16 (sm_75+) and m8n8k4 FP16
// (sm_70+) with the BF16 values converted in registers (exact for |values| < 65504, FP16's range). The vocabulary rows
// are the MMA's M dimension (16 a block, 2 blocks a tile of 32 rows) and the tokens its N = 8
// (tokens >= M are zero). Hidden is cut into the same 8 segments as the CUDA-core kernel, warp s
// owning segment s; segment values add in segment order in shared memory. Within a segment the
// MMA's internal order is the hardware's, so these instances are not bit-equal to the host
// emulation: they are held to the float64 bound instead (docs/vocab.md).
// Loads: lane (g = lane / 4, t = lane % 4) reads 16 bytes of W rows g and g + 8 and of token g's x
// at k0 + 8t: k is permuted identically in A and B (a dot product does not care), so every fragment
// register comes from one 16-byte load. The launch stays in this file, the one that instantiates
// the template (nvcc >= 12.8: template launch stubs are local to their object).
#include <cuda_runtime.h>

#include "lm_head_params.h"

namespace mlops::vocab {
namespace {

constexpr int kThreads = 32 * kSegments;
constexpr int kRowBlocks = 2;
constexpr int kTileRows = 16 * kRowBlocks;

enum MmaKind { kBf16K16 = 0, kF16K8 = 1, kF16K4 = 2 };

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
__device__ __forceinline__ uint32_t bf16x2_to_f16x2(uint32_t u) {
  const float lo = __uint_as_float(u << 16), hi = __uint_as_float(u & 0xffff0000u);
  uint16_t a, b;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(a) : "f"(lo));
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(hi));
  return uint32_t(a) | (uint32_t(b) << 16);
}

// Volta's MMA: each quad-pair (lanes 4q .. 4q+3 and 4q+16 .. 4q+19) multiplies its own 8 x 4 A by
// its own 4 x 8 B. Logical thread t = (lane & 3) + 4 (lane >> 4) holds A row t and B column t, all
// four k values (CUTLASS / CuTe SM70_8x8x4_F32F16F16F32_TN: A and B SM70_8x4_Row); the eight f32
// accumulators of thread t are (m, n) = (t0 + 2 v1 + 4 t2, 2 t1 + v0 + 4 v2) for value
// v = v0 + 2 v1 + 4 v2, t = t0 + 2 t1 + 4 t2 (CuTe SM70_8x8_32b).
__device__ __forceinline__ void mma_f16_k4(float (&c)[8], uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, {%10,%11}, "
      "{%0,%1,%2,%3,%4,%5,%6,%7};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])
      : "r"(a0), "r"(a1), "r"(b0), "r"(b1));
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750

__device__ __forceinline__ void mma_f16_k8(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(b0));
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ void mma_bf16_k16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif

// 8 k values of (row g, row g + 8, token g) -> the accumulators of one row block.
template <int KIND>
__device__ __forceinline__ void mma8(float (&c)[4], uint4 wg, uint4 wg8, uint4 xg) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (KIND == kBf16K16) {
    mma_bf16_k16(c, wg.x, wg8.x, wg.y, wg8.y, xg.x, xg.y);
    mma_bf16_k16(c, wg.z, wg8.z, wg.w, wg8.w, xg.z, xg.w);
    return;
  }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  if constexpr (KIND == kF16K8) {
    mma_f16_k8(c, bf16x2_to_f16x2(wg.x), bf16x2_to_f16x2(wg8.x), bf16x2_to_f16x2(xg.x));
    mma_f16_k8(c, bf16x2_to_f16x2(wg.y), bf16x2_to_f16x2(wg8.y), bf16x2_to_f16x2(xg.y));
    mma_f16_k8(c, bf16x2_to_f16x2(wg.z), bf16x2_to_f16x2(wg8.z), bf16x2_to_f16x2(xg.z));
    mma_f16_k8(c, bf16x2_to_f16x2(wg.w), bf16x2_to_f16x2(wg8.w), bf16x2_to_f16x2(xg.w));
  }
#endif
}

__device__ __forceinline__ uint4 load16(const uint16_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

template <int KIND>
__global__ void __launch_bounds__(kThreads) lm_head_mma_kernel(LmHeadParams p) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ub = segment_begin(warp, p.units), ue = segment_begin(warp + 1, p.units);
  const int64_t tiles = (p.vocab + kTileRows - 1) / kTileRows;
  __shared__ float part[2][kSegments][kTileRows][8];
  __shared__ uint32_t hist[8][256];
  __shared__ uint64_t best_sh[kThreads];
  const bool stats = p.best || p.key_hist;
  if (p.key_hist)
    for (int i = threadIdx.x; i < 8 * 256; i += kThreads) (&hist[0][0])[i] = 0u;
  // epilogue: thread i owns (row i / 8, token i % 8) of every tile
  const int my_r = threadIdx.x >> 3, my_m = threadIdx.x & 7;
  uint64_t best = 0;
  int buf = 0;
  __syncthreads();
#pragma unroll 1
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, buf ^= 1) {
    const int64_t v0 = tile * kTileRows;
    float c[kRowBlocks][4] = {};
    if constexpr (KIND == kF16K4) {
      // quad-pair q takes rows v0 + 8q .. +7; logical thread t its row 8q + t and token t; every
      // thread of a quad-pair holds the same 8 k values a step (two k = 4 instructions)
      const int q = (lane >> 2) & 3, tq = (lane & 3) + 4 * (lane >> 4);
      const int64_t r = v0 + 8 * q + tq;
      float cv[8] = {};
      // the segment's k range as one loop with a uniform trip count (no early exit inside), so
      // the compiler can issue the loads of several steps before their MMAs
      const int64_t kb = int64_t(ub) * kUnit, ke = ue * int64_t(kUnit) < p.hidden ? ue * int64_t(kUnit) : p.hidden;
      const int steps = ke > kb ? int((ke - kb) / 8) : 0;
      {
#pragma unroll 4
        for (int step = 0; step < steps; ++step) {
          const int64_t k = kb + int64_t(step) * 8;
          const uint4 zero = make_uint4(0, 0, 0, 0);
          const uint4 w = r < p.vocab ? load_weight16(p.weight + r * p.weight_stride + k) : zero;
          const uint4 xv = tq < p.tokens ? load16(p.x + tq * p.x_stride + k) : zero;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
          mma_f16_k4(cv, bf16x2_to_f16x2(w.x), bf16x2_to_f16x2(w.y), bf16x2_to_f16x2(xv.x), bf16x2_to_f16x2(xv.y));
          mma_f16_k4(cv, bf16x2_to_f16x2(w.z), bf16x2_to_f16x2(w.w), bf16x2_to_f16x2(xv.z), bf16x2_to_f16x2(xv.w));
#endif
        }
      }
      const int t0 = lane & 1, t1 = (lane >> 1) & 1, t2 = (lane >> 4) & 1;
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        const int m = t0 + 2 * ((v >> 1) & 1) + 4 * t2, n = 2 * t1 + (v & 1) + 4 * (v >> 2);
        part[buf][warp][8 * q + m][n] = cv[v];
      }
    }
    if constexpr (KIND != kF16K4) {
      // the segment's k range in steps of 32 with a uniform trip count (no early exit inside), so
      // the compiler can issue the loads of several steps before their MMAs
      const int64_t kb = int64_t(ub) * kUnit, ke = ue * int64_t(kUnit) < p.hidden ? ue * int64_t(kUnit) : p.hidden;
      const int steps = ke > kb ? int((ke - kb + 31) / 32) : 0;
#pragma unroll 4
      for (int step = 0; step < steps; ++step) {
        const int64_t k = kb + int64_t(step) * 32 + t * 8;
        // H % 8 == 0: a lane's 8 values are all in or all out; out-of-range lanes feed zeros
        const bool in = k < p.hidden;
        const uint4 zero = make_uint4(0, 0, 0, 0);
        const uint4 xg = in && g < p.tokens ? load16(p.x + g * p.x_stride + k) : zero;
#pragma unroll
        for (int rb = 0; rb < kRowBlocks; ++rb) {
          const int64_t r0 = v0 + rb * 16 + g, r1 = r0 + 8;
          const uint4 wg = in && r0 < p.vocab ? load_weight16(p.weight + r0 * p.weight_stride + k) : zero;
          const uint4 wg8 = in && r1 < p.vocab ? load_weight16(p.weight + r1 * p.weight_stride + k) : zero;
          mma8<KIND>(c[rb], wg, wg8, xg);
        }
      }
    }
#pragma unroll
    for (int rb = 0; KIND != kF16K4 && rb < kRowBlocks; ++rb) {
      part[buf][warp][rb * 16 + g][2 * t] = c[rb][0];
      part[buf][warp][rb * 16 + g][2 * t + 1] = c[rb][1];
      part[buf][warp][rb * 16 + g + 8][2 * t] = c[rb][2];
      part[buf][warp][rb * 16 + g + 8][2 * t + 1] = c[rb][3];
    }
    __syncthreads();
    float total = part[buf][0][my_r][my_m];
#pragma unroll
    for (int s = 1; s < kSegments; ++s) total = total + part[buf][s][my_r][my_m];
    const int64_t v = v0 + my_r;
    if (v < p.vocab && my_m < p.tokens) {
      const float logit = lm_head_epilogue(total, p.row_scale, my_m, p.logit_scale);
      p.logits[my_m * p.logits_stride + v] = logit;
      if (stats) {
        const uint32_t key = key_of(logit);
        const uint64_t b = pack_best(key, uint32_t(v));
        best = b > best ? b : best;
        if (p.key_hist) atomicAdd(&hist[my_m][key >> 24], 1u);
      }
    }
  }
  if (!stats) return;
  best_sh[threadIdx.x] = best;
  __syncthreads();
  if (p.key_hist)
    for (int i = threadIdx.x; i < p.tokens * 256; i += kThreads) {
      const uint32_t n = (&hist[0][0])[i];
      if (n) atomicAdd(p.key_hist + i, n);
    }
  if (p.best && threadIdx.x < p.tokens) {
    uint64_t b = 0;
    for (int i = threadIdx.x; i < kThreads; i += 8) b = best_sh[i] > b ? best_sh[i] : b;
    if (b) atomicMax(reinterpret_cast<unsigned long long*>(p.best + threadIdx.x), (unsigned long long)b);
  }
}

template <int KIND>
int code_arch() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, lm_head_mma_kernel<KIND>) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return attr.ptxVersion;  // major * 10 + minor: 75, 80, 90
}

}  // namespace

// The arch the instance's code was generated for (its PTX version): a compute_75 build JIT-compiled
// on an sm_90 GPU has no m16n8k16 BF16 body, so the API must not launch it there.
int lm_head_mma_code_arch(int kind) {
  return kind == kBf16K16 ? code_arch<kBf16K16>() : kind == kF16K8 ? code_arch<kF16K8>() : code_arch<kF16K4>();
}

cudaError_t lm_head_launch_mma(const LmHeadParams& p, int kind, int64_t grid, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = lm_head_clear_stats(p, s); e != cudaSuccess) return e;
  if (kind == kBf16K16) lm_head_mma_kernel<kBf16K16><<<unsigned(grid), kThreads, 0, s>>>(p);
  else if (kind == kF16K8) lm_head_mma_kernel<kF16K8><<<unsigned(grid), kThreads, 0, s>>>(p);
  else lm_head_mma_kernel<kF16K4><<<unsigned(grid), kThreads, 0, s>>>(p);
  return cudaGetLastError();
}

int lm_head_mma_tile_rows() { return kTileRows; }

}  // namespace mlops::vocab
