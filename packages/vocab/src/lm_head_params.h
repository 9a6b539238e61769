// What the lm_head kernels and their host emulation read of a call (a flat copy of
// mlops_lm_head_args), passed to the kernel by value.
#pragma once
#include <cuda_runtime_api.h>

#include "vocab_math.h"

namespace mlops::vocab {

struct LmHeadParams {
  int tokens;      // M, 1 .. 8
  int64_t hidden;  // H, multiple of 8
  int64_t vocab;   // V
  int units;       // ceil(H / 256)
  const uint16_t* x; int64_t x_stride;
  const uint16_t* weight; int64_t weight_stride;
  float* logits; int64_t logits_stride;
  const float* row_scale;
  float logit_scale;
  uint64_t* best;
  uint32_t* key_hist;
};

LmHeadParams make_lm_head_params(const mlops_lm_head_args& a);

#if defined(__CUDACC__)
// 16 bytes of the weight, read once per call: not kept in L1, and from sm_80 the L2 fetches 256
// bytes around it (the rest of the row's sectors are next). Plain __ldg below sm_80.
__device__ __forceinline__ uint4 load_weight16(const uint16_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
#else
  return __ldg(reinterpret_cast<const uint4*>(p));
#endif
}
#endif

void lm_head_host(const LmHeadParams& p);
// Clears best / key_hist before a launch (one memset when key_hist follows best); the device
// decode of best into (max, argmax) (lm_head_kernel.cu).
cudaError_t lm_head_clear_stats(const LmHeadParams& p, void* stream);
cudaError_t lm_head_decode_best(const uint64_t* best, int64_t rows, float* mx, int64_t* am, void* stream);
// grid: CTAs (each strides over tiles of 32 / MT rows, MT = tokens rounded up to 1, 2, 4, 8).
cudaError_t lm_head_launch_cuda_core(const LmHeadParams& p, int64_t grid, void* stream);
// The tensor-core instances (lm_head_mma_kernel.cu): kind 0 m16n8k16 BF16, 1 m16n8k8 FP16, 2 m8n8k4 FP16.
cudaError_t lm_head_launch_mma(const LmHeadParams& p, int kind, int64_t grid, void* stream);
int lm_head_mma_code_arch(int kind);
int lm_head_mma_tile_rows();
// The cp.async-pipelined m16n8k16 instance (lm_head_pipe_kernel.cu, sm_80+): a grid of up to
// ctas_per_sm * sms CTAs (fewer a SM when 2 stages of that many do not fit its shared memory), each
// with as many stages as fit, at most max_stages (2 .. 6).
// agg: the key-byte counts one shared atomic per distinct byte of a warp (the _agg variant).
cudaError_t lm_head_launch_pipe(const LmHeadParams& p, int ctas_per_sm, int max_stages, int sms, bool agg,
                                void* stream);
int lm_head_pipe_code_arch();
// The one-stream-per-SM instance (lm_head_stream_kernel.cu, sm_90 candidates): 1 CTA an SM with
// contiguous rows, chunks of rows x (4096 / rows) k (rows 8, 16, 32; chunk 8192 bytes, or 4096:
// 16 rows x 128 k in 6 stages), x in registers, statistics cleared by a kernel it follows as a
// programmatic dependent; tlb: the page-ahead prefetch; rr: row blocks in turn over the CTAs.
// H > 4096 (or too little shared memory) runs the 6-stage pipe.
cudaError_t lm_head_launch_stream(const LmHeadParams& p, int rows, int chunk, bool tlb, bool rr, int sms, void* stream);
int lm_head_stream_code_arch();
// Tiles of vocabulary rows the CUDA-core kernel cuts V into.
inline int lm_head_tile_rows(int tokens) {
  const int mt = tokens <= 1 ? 1 : tokens <= 2 ? 2 : tokens <= 4 ? 4 : 8;
  return 32 / mt;
}

}  // namespace mlops::vocab
