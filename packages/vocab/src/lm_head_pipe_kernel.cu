// The launch of the cp.async-pipelined LM head (lm_head_pipe_kernel.cuh). It stays in this file, the
// one that instantiates the kernel (nvcc >= 12.8: launch stubs are local to their object).
#include "lm_head_pipe_kernel.cuh"
#include "mlops/common/pdl_launch.h"

namespace mlops::vocab {
namespace {

// What the stage count depends on: the device's shared memory a SM and a block (opt-in), and the
// kernel's static shared memory.
// (and, for the statistics' launch, whether device and code are sm_90+: pdl)
struct SmemLimits {
  int64_t per_sm = 0, per_block = 0, fixed = 0;
  bool pdl = false;
};
bool smem_limits(SmemLimits* l) {
  int dev = 0, per_sm = 0, per_block = 0, major = 0;
  cudaFuncAttributes attr;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaFuncGetAttributes(&attr, lm_head_pipe_kernel) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  l->per_sm = per_sm;
  l->per_block = per_block;
  l->fixed = int64_t(attr.sharedSizeBytes);
  // griddepcontrol is in the kernel's code only where it was generated for sm_90+ (a compute_80 PTX
  // build JIT-compiled on an H200 has none: there a programmatic launch would let the kernel's
  // atomics race the clear, so that build keeps the memset)
  l->pdl = major >= 9 && attr.ptxVersion >= 90;
  return true;
}

// The stages a CTA gets when ctas CTAs share an SM: what fits next to the static shared memory,
// at most max_stages, at least 2 (0: does not fit).
int stages_for(const SmemLimits& l, int ctas, int max_stages) {
  int64_t room = l.per_sm / ctas - 1024 - l.fixed;  // 1 KB a CTA reserved (sm_80+)
  if (room > l.per_block - l.fixed) room = l.per_block - l.fixed;
  int64_t s = room / (int64_t(kSegments) * kChunkBytes);
  if (s > max_stages) s = max_stages;
  return s >= 2 ? int(s) : 0;
}

}  // namespace

int lm_head_pipe_code_arch() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, lm_head_pipe_kernel) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return attr.ptxVersion;
}

// ctas_per_sm: what the variant asks; fewer when the stages of that many do not fit an SM.
cudaError_t lm_head_launch_pipe(const LmHeadParams& p, int ctas_per_sm, int max_stages, int sms, bool agg,
                                void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  max_stages = max_stages < 2 ? 2 : max_stages > kStagesMax ? kStagesMax : max_stages;
  SmemLimits l;
  if (!smem_limits(&l)) return cudaErrorInvalidDeviceFunction;
  int ctas = ctas_per_sm < 1 ? 1 : ctas_per_sm, stages = 0;
  for (; ctas >= 1 && (stages = stages_for(l, ctas, max_stages)) == 0; --ctas) {
  }
  if (stages == 0) return cudaErrorInvalidConfiguration;
  const size_t smem = size_t(stages) * kSegments * kChunkBytes;
  // the attribute is the most any launch of any variant may ask on this device (the same value from
  // every thread: a call with fewer stages never lowers it under another's launch); a launch's own
  // size decides its occupancy
  cudaError_t e = cudaFuncSetAttribute(lm_head_pipe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(l.per_block - l.fixed));
  if (e != cudaSuccess) return e;
  const int64_t tiles = (p.vocab + kTileRows - 1) / kTileRows;
  int64_t grid = int64_t(ctas) * (sms > 0 ? sms : 1);
  if (grid > tiles) grid = tiles;
  const bool pdl = l.pdl && (p.best || p.key_hist);
  if (!pdl) {
    e = lm_head_clear_stats(p, s);
    if (e != cudaSuccess) return e;
    lm_head_pipe_kernel<<<unsigned(grid), kThreads, smem, s>>>(p, stages, agg);
    return cudaGetLastError();
  }
  lm_head_stats_clear_kernel<<<1, 256, 0, s>>>(p.best, p.key_hist, p.tokens);
  if (e = cudaGetLastError(); e != cudaSuccess) return e;
  return launch_pdl(true, lm_head_pipe_kernel, dim3(unsigned(grid)), dim3(kThreads), smem, s, p, stages, agg);
}

}  // namespace mlops::vocab
