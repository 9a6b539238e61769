#pragma once
#include <cuda_runtime.h>
#include "mlops/common/status.h"
#include "rope_params.h"

namespace mlops::rope {
constexpr int kCtaThreads = 256;

// The kernel variants as data (mlops_rope_variants lists them, bench --variants times them side by
// side). All give the same bits: they differ in when a thread issues its q / k loads and how many
// items (16 bytes of each half of a head) it keeps in registers.
//  step2:  the run-4 kernel: positions -> cos/sin into shared memory, barrier, then 2 items a
//          thread a step (3 DRAM round trips before the first store).
//  earlyU: a thread issues the loads of its first U items before the CTA reads its positions, so
//          the data round trip overlaps the positions -> cos/sin chain (2 round trips before the
//          first store); the planner gives a CTA about U items a thread so they all go at once.
//          U = 2 / 4 / 8 at 4 / 3 / 2 CTAs an SM (64 / 80 / 128 registers).
//  early2x5 / early2x6: early2 compiled for 5 / 6 CTAs an SM (<= 51 / 42 registers): round-B
//          candidates, more warps to hide the cache path's positions -> cos/sin round trip.
// (pipe4 / pipe8, a persistent grid pipelining token blocks, were ids 5 / 6 in round A: slower than
// early2 / early4 at every T on the H200, run 14 (spills, loop overhead), so removed; docs/positional.md.)
struct VariantInfo {
  int id;                // 1 ...; 0 in the C API means the planner's pick
  const char* name;
  int items_per_thread;  // items a thread keeps in flight
  int early;             // 1: q / k loads issued before the positions are read
  int pipe;              // always 0 now (the C API's field stays for ABI 2)
  int ctas_per_sm;       // what __launch_bounds__ allows
};
constexpr VariantInfo kVariants[] = {{1, "step2", 2, 0, 0, 4}, {2, "early2", 2, 1, 0, 4}, {3, "early4", 4, 1, 0, 3},
                                     {4, "early8", 8, 1, 0, 2}, {5, "early2x5", 2, 1, 0, 5},
                                     {6, "early2x6", 2, 1, 0, 6}};
constexpr int kNumVariants = int(sizeof(kVariants) / sizeof(kVariants[0]));
// The planner's kernels (H200, run 17, bench --variants): early2 for decode, early2x5 for prefill
// from the cache and on the fly (mlops_rope_plan_path).
constexpr int kEarly2 = 2, kEarly2x5 = 5;

// One object a dtype (rope_launch_<dtype>.cu), so the three compile in parallel. variant: 1 ... kNumVariants.
cudaError_t launch_bf16(const Params& p, bool vec, int layout, int variant, cudaStream_t s);
cudaError_t launch_fp16(const Params& p, bool vec, int layout, int variant, cudaStream_t s);
cudaError_t launch_fp32(const Params& p, bool vec, int layout, int variant, cudaStream_t s);
cudaError_t launch_cache(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache,
                         cudaStream_t s);

inline cudaError_t launch(const Params& p, mlops_dtype t, bool vec, int layout, int variant, cudaStream_t s) {
  switch (t) {
    case MLOPS_DTYPE_BF16: return launch_bf16(p, vec, layout, variant, s);
    case MLOPS_DTYPE_FP16: return launch_fp16(p, vec, layout, variant, s);
    case MLOPS_DTYPE_FP32: return launch_fp32(p, vec, layout, variant, s);
    default: return cudaErrorInvalidValue;
  }
}

// cos/sin of each token, then 4 base offsets (q in/out, k in/out) and a bad flag a token (the early
// variants use the cos/sin and the flags only: the same size keeps one formula).
inline size_t smem_bytes(const Params& p) {
  return sizeof(float) * size_t(p.tpc) * p.rotary_dim + sizeof(long long) * 4 * p.tpc + sizeof(int) * p.tpc;
}

void run_host(const Params& p, mlops_dtype t, int layout);
void cache_host(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache);
}  // namespace mlops::rope
