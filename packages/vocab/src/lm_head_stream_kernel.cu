// The launch of the one-stream-per-SM LM head (lm_head_stream_kernel.cuh). It stays in this file, the
// one that instantiates the kernels (nvcc >= 12.8: launch stubs are local to their object).
#include "lm_head_stream_kernel.cuh"
#include "mlops/common/pdl_launch.h"

namespace mlops::vocab {
namespace {

template <int ROWS, int CHUNK>
cudaError_t launch_rows(const LmHeadParams& p, int64_t grid, int stages, bool tlb, bool rr, bool pdl, size_t smem,
                        cudaStream_t s) {
  cudaError_t e = cudaFuncSetAttribute(lm_head_stream_kernel<ROWS, CHUNK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(smem));
  if (e != cudaSuccess) return e;
  return launch_pdl(pdl, lm_head_stream_kernel<ROWS, CHUNK>, dim3(unsigned(grid)), dim3(kThreads), smem, s, p, stages,
                    tlb, rr);
}

}  // namespace

int lm_head_stream_code_arch() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, lm_head_stream_kernel<8, kStreamChunkBytes>) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return attr.ptxVersion;
}

cudaError_t lm_head_launch_stream(const LmHeadParams& p, int rows, int chunk, bool tlb, bool rr, int sms, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  int dev = 0, per_sm = 0, per_block = 0;
  cudaFuncAttributes attr;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
      cudaFuncGetAttributes(&attr, lm_head_stream_kernel<8, kStreamChunkBytes>) != cudaSuccess)
    return cudaGetLastError();
  int64_t room = int64_t(per_sm) - 1024 - int64_t(attr.sharedSizeBytes);
  if (room > int64_t(per_block) - int64_t(attr.sharedSizeBytes)) room = int64_t(per_block) - int64_t(attr.sharedSizeBytes);
  // 4 KB chunks: 16 rows only (the _deep forms)
  if (chunk != kStreamChunkBytes) chunk = 4096, rows = 16;
  const int cap = kStreamStagesMax * kStreamChunkBytes / chunk;  // 3 of 8 KB, 6 of 4 KB
  int stages = int(room / (int64_t(kSegments) * chunk));
  if (stages > cap) stages = cap;
  // x in registers covers segments of <= 512 k (H <= 4096); otherwise, or where 2 stages do not
  // fit, the 6-stage pipe (the same order of the sum, so the same bound)
  if (p.units > 2 * kSegments || stages < 2) return lm_head_launch_pipe(p, 1, 6, sms, false, stream);
  const int64_t grid = p.vocab < sms ? p.vocab : sms;
  const bool pdl = p.best || p.key_hist;
  if (pdl) {
    lm_head_stats_clear_kernel<<<1, 256, 0, s>>>(p.best, p.key_hist, p.tokens);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const size_t smem = size_t(stages) * kSegments * chunk;
  if (chunk == 4096) return launch_rows<16, 4096>(p, grid, stages, tlb, rr, pdl, smem, s);
  if (rows == 8) return launch_rows<8, kStreamChunkBytes>(p, grid, stages, tlb, rr, pdl, smem, s);
  if (rows == 16) return launch_rows<16, kStreamChunkBytes>(p, grid, stages, tlb, rr, pdl, smem, s);
  return launch_rows<32, kStreamChunkBytes>(p, grid, stages, tlb, rr, pdl, smem, s);
}

}  // namespace mlops::vocab
