// The launch of the one-stream-per-SM LM head (lm_head_stream_kernel.cuh). It stays in this file, the
// one that instantiates the kernels (nvcc >= 12.8: launch stubs are local to their object).
#include "lm_head_stream_kernel.cuh"

namespace mlops::vocab {
namespace {

// Clears best and key_hist (the statistics the stream's atomics add into), then lets the stream,
// launched as its programmatic dependent, start at once: the stream waits for this grid only
// before its atomics, ~300 us later, so the clear costs no time on the critical path (a memset
// node does: run 17, 317.0 -> 320.1 us with the memset and the decode).
__global__ void lm_head_stream_clear_kernel(uint64_t* best, uint32_t* key_hist, int tokens) {
  launch_dependents();
  if (best)
    for (int i = threadIdx.x; i < tokens; i += blockDim.x) best[i] = 0;
  if (key_hist)
    for (int i = threadIdx.x; i < 256 * tokens; i += blockDim.x) key_hist[i] = 0;
}

template <int ROWS, int CHUNK>
cudaError_t launch_rows(const LmHeadParams& p, int64_t grid, int stages, bool tlb, bool rr, bool pdl, size_t smem,
                        cudaStream_t s) {
  cudaError_t e = cudaFuncSetAttribute(lm_head_stream_kernel<ROWS, CHUNK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(smem));
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, lm_head_stream_kernel<ROWS, CHUNK>, p, stages, tlb, rr);
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
    lm_head_stream_clear_kernel<<<1, 256, 0, s>>>(p.best, p.key_hist, p.tokens);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const size_t smem = size_t(stages) * kSegments * chunk;
  if (chunk == 4096) return launch_rows<16, 4096>(p, grid, stages, tlb, rr, pdl, smem, s);
  if (rows == 8) return launch_rows<8, kStreamChunkBytes>(p, grid, stages, tlb, rr, pdl, smem, s);
  if (rows == 16) return launch_rows<16, kStreamChunkBytes>(p, grid, stages, tlb, rr, pdl, smem, s);
  return launch_rows<32, kStreamChunkBytes>(p, grid, stages, tlb, rr, pdl, smem, s);
}

}  // namespace mlops::vocab
