// The "lxp" variants (session 12, issue 2's 2048x4096 quantized gap): r16lx4w's row split (four
// warps a row, 4 units each, every warp folding all 16 unit sums in unit order) on a persistent
// grid of kCtas CTAs an SM, each CTA streaming its rows (blockIdx.x, + gridDim.x, ...) through a
// ring of kS shared-memory stages of one row (8 KB for 4096 bf16 / fp16), so that a row's epilogue
// runs while the CTA's next rows are in flight.
//
// Why (docs/norm.md, "Session 10 (2)"): at 2048 rows the lx2 / lx4w grids are about one wave; every
// CTA loads its rows at once and then runs its quantized epilogue with no other loads to hide it
// behind (run 60, CUPTI: INT8 9.38 us against y's 8.11). Here the loads of rows i+1 .. i+kS-1 of a
// CTA are in flight while row i's epilogue runs.
//
// The copy engine by arch (same bits on every road: the ring holds x's bytes as stored, and the
// epilogue is leanq_finish's, as r16lx4w / r16lx4we / r16lx4wf run it):
//   * sm_90+: one cp.async.bulk a row (global -> shared, 8 KB) issued by thread 0, completing on the
//     stage's mbarrier (expect_tx); the warps wait on its phase. The stage is refilled (row i+kS)
//     right after the CTA barrier inside the row fold (every warp has read its units of the stage
//     into registers by then), with fence.proxy.async between the generic reads and the async write.
//   * sm_80 .. sm_89: cp.async (16 bytes) by each lane of exactly the bytes it reads later, one
//     commit group a row, wait_group kS - 1: no cross-thread hand-off.
//   * below sm_80: no ring; the lane loads its units of each row when it gets there (the same
//     persistent loop, no overlap: the variant is offered everywhere so its bits are tested
//     everywhere, but it is a candidate for sm_80+ only).
// The row-sum and amax exchange of PartRow is double-buffered by row parity: a warp may reach the
// next row's fold while another still reads this row's sums.
#pragma once
#include "norm_row_leanq.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MLOPS_NORM_PIPE_BULK 1
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MLOPS_NORM_PIPE_CPASYNC 1
#endif

namespace mlops::norm {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

#if defined(MLOPS_NORM_PIPE_BULK)
__device__ __forceinline__ void mbar_init1(uint64_t* b) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(b)) : "memory");
}
// One row into a stage: the stage's mbarrier expects the bytes, then the bulk copy completes them.
__device__ __forceinline__ void bulk_row(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
#elif defined(MLOPS_NORM_PIPE_CPASYNC)
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
#endif

// PartRow (4 warps, the CTA is the row) whose fold, once its CTA barrier has passed, calls the
// ring's refill: every warp has moved its units of the current stage into registers by then.
template <int H, class Refill>
struct PipeRow : PartRow<H, 4> {
  Refill refill;
  __device__ __forceinline__ float fold(const float (&u)[H]) const {
    const float s = PartRow<H, 4>::fold(u);
    refill();
    return s;
  }
};

// kQuant as norm_row_leanq2_kernel; kE: 0 (INT8, y alone), 1 (FP8 with one clamp), 2 (the "f"
// NVFP4 epilogue, its table staged once a CTA): the instances r16lx4we / r16lx4wf run. kCtas: CTAs
// an SM (the grid is at most SMs x kCtas); kS: stages of the ring.
template <class XT, int U, int kCtas, int kQuant, int kE, int kS>
__global__ void __launch_bounds__(kRowThreads, kCtas) norm_row_leanp_kernel(Params p) {
  static_assert(sizeof(XT) == 2 && U % 8 == 0 && kRowWarps == 4 && kS >= 2, "lxp rows: bf16 / fp16 x, 4 warps a row");
  constexpr int N = 4, H = U / N;
  constexpr bool kAgain = H * 8 + 40 > 65536 / (kRowThreads * kCtas);
  constexpr bool kTab = kE == 2 && kQuant == MLOPS_QUANT_NVFP4;
  const int lane = threadIdx.x & 31, part = threadIdx.x >> 5;
  const int k0 = part * H;
  const XT* const x = static_cast<const XT*>(p.x);
  const int64_t step = gridDim.x;
  int64_t row = blockIdx.x;  // rows blockIdx.x + i * gridDim.x
  __shared__ float us[2][U];
  __shared__ float am[2][N];
  __shared__ float rtab[kTab ? 128 : 1];
  if constexpr (kTab) nvfp4_rtab(rtab);
#if defined(MLOPS_NORM_PIPE_BULK) || defined(MLOPS_NORM_PIPE_CPASYNC)
  __shared__ alignas(128) uint4 ring[kS][U * 32];  // a row as stored: unit k, lane l at [32k + l]
#endif
#if defined(MLOPS_NORM_PIPE_BULK)
  constexpr uint32_t kRowBytes = U * kUnit * sizeof(XT);
  __shared__ alignas(8) uint64_t full[kS];
  auto issue = [&](int64_t r, int st) {  // thread 0
    if (r < p.rows) bulk_row(ring[st], x + r * p.x_stride, kRowBytes, &full[st]);
  };
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < kS; ++s) mbar_init1(&full[s]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < kS; ++s) issue(row + s * step, s);
  }
#elif defined(MLOPS_NORM_PIPE_CPASYNC)
  auto issue = [&](int64_t r, int st) {  // every lane: its own bytes; one group a row (empty past the end)
    if (r < p.rows) {
      const XT* src = x + r * p.x_stride + k0 * kUnit + lane * 8;
#pragma unroll
      for (int k = 0; k < H; ++k) cp_async16(&ring[st][(k0 + k) * 32 + lane], src + k * kUnit);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
#pragma unroll
  for (int s = 0; s < kS; ++s) issue(row + s * step, s);
  if constexpr (kTab) __syncthreads();
#else
  if constexpr (kTab) __syncthreads();
#endif
  const WeightEff<XT, H, false> wf{static_cast<const XT*>(p.weight) + k0 * kUnit + lane * 8, nullptr, p.weight_offset};
  for (int i = 0; row < p.rows; ++i, row += step) {
    const int st = i % kS;
    Raw8<XT> raw[H];
#if defined(MLOPS_NORM_PIPE_BULK)
    mbar_wait(&full[st], uint32_t(i / kS) & 1u);
#elif defined(MLOPS_NORM_PIPE_CPASYNC)
    asm volatile("cp.async.wait_group %0;" ::"n"(kS - 1) : "memory");
#endif
#if defined(MLOPS_NORM_PIPE_BULK) || defined(MLOPS_NORM_PIPE_CPASYNC)
#pragma unroll
    for (int k = 0; k < H; ++k) raw[k].q[0] = ring[st][(k0 + k) * 32 + lane];
#else
    (void)st;
#pragma unroll
    for (int k = 0; k < H; ++k) raw[k].q[0] = ld_stream16(x + row * p.x_stride + (k0 + k) * kUnit + lane * 8);
#endif
    auto refill = [&]() {
#if defined(MLOPS_NORM_PIPE_BULK)
      if (threadIdx.x == 0) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        issue(row + kS * step, st);
      }
#elif defined(MLOPS_NORM_PIPE_CPASYNC)
      issue(row + kS * step, st);
#endif
    };
    leanq_finish<XT, H, kAgain, kQuant, false, kE>(p, row, k0, raw, wf,
                                                    PipeRow<H, decltype(refill)>{{us, am, i & 1, part}, refill}, rtab);
  }
}

}  // namespace mlops::norm

#undef MLOPS_NORM_PIPE_BULK
#undef MLOPS_NORM_PIPE_CPASYNC
