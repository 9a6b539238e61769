// The C API of mlops-vocab: validation (before any launch), the variant tables, the planners
// and the entry points (GPU and host emulation) of embed, lm_head and sample.
#include <cuda_runtime.h>

#include <string>


#include "mlops/common/api_error.h"
#include "embed_params.h"
#include "lm_head_params.h"
#include "sample_params.h"

namespace mlops::vocab {
namespace {
using common::aligned16;
using common::is_float_type;

thread_local common::ErrorSlot g_err;  // this package's last error (api_error.h)

struct Device {
  int sm = 0, sms = 0;
};
// Attribute queries are host-side and cached by the runtime; no synchronization.
bool current_device(Device* d) {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  d->sm = major * 10 + minor;
  return true;
}

// ---- embed --------------------------------------------------------------------------------
constexpr int64_t kMaxEmbedHidden = 131072;  // unit sums of 8 tokens in 16 KB of shared memory
const mlops_embed_variant kEmbedVariants[] = {{0, 1, "w1"}, {1, 2, "w2"}, {2, 4, "w4"}, {3, 8, "w8"}};
constexpr int kNumEmbed = 4;

mlops_status check_embed(const mlops_embed_args* a) {
  g_err.clear();
  if (!a) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "args: NULL");
  if (a->tokens < 1 || a->tokens > 0x7fffffff)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "ids: expected 1 .. 2^31-1 tokens, got %lld", (long long)a->tokens);
  if (a->hidden < 1 || a->hidden > kMaxEmbedHidden)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table: expected a row length in [1, %lld], got %lld",
                      (long long)kMaxEmbedHidden, (long long)a->hidden);
  if (a->vocab < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table: expected at least one row, got %lld", (long long)a->vocab);
  if (a->id_dtype != MLOPS_DTYPE_INT32 && a->id_dtype != MLOPS_DTYPE_INT64)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "ids: expected int32 or int64, got %s", mlops_dtype_name(a->id_dtype));
  if (!a->ids) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "ids: NULL pointer");
  if (!is_float_type(a->table_dtype))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table: expected bfloat16, float16 or float32, got %s",
                      mlops_dtype_name(a->table_dtype));
  if (!a->table) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table: NULL pointer");
  if (a->table_stride < a->hidden && a->vocab > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table: row stride %lld is smaller than the row (%lld)",
                      (long long)a->table_stride, (long long)a->hidden);
  if (!a->out && !a->xw && !a->unit_sumsq && !a->rms_r)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "out: no output requested (out, xw, unit_sumsq and rms_r are all NULL)");
  if (a->out && a->out_stride < a->hidden && a->tokens > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "out: row stride %lld is smaller than the row (%lld)",
                      (long long)a->out_stride, (long long)a->hidden);
  if (a->xw) {
    if (!a->norm_weight) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "norm_weight: required with xw (bf16(x * w))");
    if (!is_float_type(a->norm_weight_dtype))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "norm_weight: expected bfloat16, float16 or float32, got %s",
                        mlops_dtype_name(a->norm_weight_dtype));
    if (a->xw_stride < a->hidden && a->tokens > 1)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "xw: row stride %lld is smaller than the row (%lld)",
                        (long long)a->xw_stride, (long long)a->hidden);
  } else if (a->norm_weight) {
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "norm_weight: given without xw");
  }
  const int64_t units = (a->hidden + kUnit - 1) / kUnit;
  if (a->unit_sumsq && a->unit_sumsq_stride < units && a->tokens > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "unit_sumsq: row stride %lld is smaller than ceil(hidden / 256) = %lld",
                      (long long)a->unit_sumsq_stride, (long long)units);
  if (a->rms_r && !(a->eps >= 0.0f)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "eps: expected >= 0, got %g", double(a->eps));
  if (a->variant < -1 || a->variant >= kNumEmbed)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: expected -1 or an index below %d, got %d", kNumEmbed, a->variant);
  return MLOPS_OK;
}

// ---- lm_head ------------------------------------------------------------------------------
const mlops_lm_head_variant kLmHeadVariants[] = {
    {0, MLOPS_LM_HEAD_CUDA_CORE, 50, 2, "cuda_core"},
    {1, MLOPS_LM_HEAD_CUDA_CORE, 50, 0, "cuda_core_full_grid"},
    {2, MLOPS_LM_HEAD_CUDA_CORE, 50, 1, "cuda_core_1cta"},
    {3, MLOPS_LM_HEAD_MMA_BF16_K16, 80, 2, "mma_m16n8k16_bf16"},
    {4, MLOPS_LM_HEAD_MMA_F16_K8, 75, 2, "mma_m16n8k8_f16"},
    {5, MLOPS_LM_HEAD_MMA_F16_K4, 70, 2, "mma_m8n8k4_f16"},
    // cp.async pipeline (kLmHeadPipeStages: the cap on its stages): 1 CTA an SM with up to 4
    // stages (96 KB a CTA in flight); 2 CTAs an SM with the stages that fit (2 on the H200: 16
    // warps, 1 chunk each in flight while computing); 1 CTA an SM with up to 6 (160 KB in flight)
    {6, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 80, 1, "mma_m16n8k16_bf16_pipe"},
    {7, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 80, 2, "mma_m16n8k16_bf16_pipe_2cta"},
    {8, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 80, 1, "mma_m16n8k16_bf16_pipe_deep"},
    // the plain pipe with the key-byte counts aggregated a warp (one shared atomic per distinct byte)
    {9, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 80, 1, "mma_m16n8k16_bf16_pipe_agg"},
    // sm_90 candidates (session 4, not planned until measured): one stream of contiguous rows per SM,
    // chunks of 8 / 16 / 32 rows x 1 KB / 512 B / 256 B of each, x in registers, the statistics'
    // clear and decode off the critical path (PDL); _tlb: the page-ahead prefetch
    // (lm_head_stream_kernel.cuh, kLmHeadStreamRows)
    {10, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream8"},
    {11, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream16"},
    {12, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream32"},
    {13, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream8_tlb"},
    {14, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream16_tlb"},
    {15, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream32_tlb"},
    // round B candidates (not planned until measured): the stream kernel with the pipe's order,
    // row blocks in turn over the CTAs (kLmHeadStreamRr): whether that order is what made the
    // 6-stage pipe win on a clean L2 in run 21 (291 vs 302 us), with x in registers
    {16, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream8_rr"},
    {17, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream32_rr"},
    // and the 6-stage pipe's depth (4 KB chunks of 16 rows, 6 stages: 160 KB in flight a CTA, the
    // stream's 8 KB chunks in 3 stages 128 KB), contiguous rows / row blocks in turn
    {18, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream16_deep"},
    {19, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 90, 1, "mma_m16n8k16_bf16_stream16_deep_rr"},
    // the pipe with 3 stages (64 KB in flight a CTA, 96 KB of stages): 32 KB more L1 for x, which every chunk
    // re-reads (M = 8: 64 KB); planned on sm_90 where its last wave is full since GPU run 77 (session 13)
    {20, MLOPS_LM_HEAD_MMA_BF16_K16_PIPE, 80, 1, "mma_m16n8k16_bf16_pipe3"},
};
constexpr int kNumLmHead = 21;
static_assert(sizeof kLmHeadVariants / sizeof kLmHeadVariants[0] == kNumLmHead, "kNumLmHead");
constexpr int kLmHeadPipeStages[kNumLmHead] = {0, 0, 0, 0, 0, 0, 4, 4, 6, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
constexpr bool kLmHeadPipeAgg[kNumLmHead] = {false, false, false, false, false, false, false, false, false, true,
                                             false, false, false, false, false, false, false, false, false, false, false};
// the stream instances: rows a chunk (0: not one), its bytes, the page-ahead prefetch, row blocks in turn
constexpr int kLmHeadStreamRows[kNumLmHead] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 16, 32, 8, 16, 32, 8, 32, 16, 16, 0};
constexpr int kLmHeadStreamChunk[kNumLmHead] = {0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                                                8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 4096, 4096, 0};
constexpr bool kLmHeadStreamTlb[kNumLmHead] = {false, false, false, false, false, false, false, false, false, false,
                                               false, false, false, true,  true,  true,  false, false, false, false, false};
constexpr bool kLmHeadStreamRr[kNumLmHead] = {false, false, false, false, false, false, false, false, false, false,
                                              false, false, false, false, false, false, true,  true,  false, true,  false};

// The kind index of lm_head_mma_kernel.cu for a tensor-core variant.
int mma_kind(mlops_lm_head_kind k) { return k == MLOPS_LM_HEAD_MMA_BF16_K16 ? 0 : k == MLOPS_LM_HEAD_MMA_F16_K8 ? 1 : 2; }

// The arch an instance's code was generated for: the CUDA-core kernel has a body everywhere.
int code_arch_of(const mlops_lm_head_variant& v) {
  if (v.kind == MLOPS_LM_HEAD_CUDA_CORE) return 1000;
  if (v.kind == MLOPS_LM_HEAD_MMA_BF16_K16_PIPE)
    return kLmHeadStreamRows[v.index] ? lm_head_stream_code_arch() : lm_head_pipe_code_arch();
  return lm_head_mma_code_arch(mma_kind(v.kind));
}

// The planner's preference, fastest expected first, by arch (bench/results, docs/vocab.md):
//   sm_80+: the cp.async pipeline (the register-fed m16n8k16 drains its loads at every tile: 57 %
//           of copy bandwidth on the H200, the CUDA-core kernel 18 .. 45 %), then what a build
//           without sm_80 code still has: m16n8k8 FP16, m8n8k4 FP16;
//   sm_75 .. 79: m16n8k8 FP16 (as fast as m16n8k16 on the H200; the CUDA-core kernel is compute
//           bound from M = 2 on), then m8n8k4;
//   sm_70 .. 74: m8n8k4 FP16 (Volta's native MMA; unmeasured there);
// and the CUDA-core instance last, everywhere (below sm_70 alone). Every list ends with index 0.
// sm_90, H <= 4096 (the stream kernels hold a segment of x in registers; larger H keeps the run-14
// plan below), with the statistics (docs/vocab.md, the lm_head planner):
//   - where the pipe's last wave of 32-row tiles is full (pipe_waves_full: 151936 rows are 4748 tiles, 36
//     rounds of 132 CTAs), every M: the 3-stage pipe. GPU run 77 (read flush, weights rotated, graph replay,
//     one call): 290.9 .. 293.8 us at M = 1 .. 8, 99.8 .. 100.5 % of copy bandwidth, against the 4-stage
//     pipe's 293.9 .. 300.9, the 6-stage pipe's 293.9 at M = 1 (301 .. 352 from M = 2 on: x re-read from
//     L1 next to 192 KB of stages), stream32's 302.5 .. 306.1 and cuBLAS's 299.0 .. 302.4 without stats;
//     the fewer stages leave L1 room for x (64 KB at M = 8), where the 4-stage pipe fell to 97.5 %;
//   - elsewhere stream32 (contiguous rows a CTA, 32-row chunks): at 32000 x 4096 (1000 tiles: 7.6 rounds,
//     the pipe's half-empty last round) run 77's 71.1 .. 73.2 us against the 3-stage pipe's 72.2 .. 74.5
//     and the 4-stage one's 74.8 .. 76.5 (run 21 had it first at every (V, M) after a write flush).
// Only sm_90 measured them (an A100's 164 KB fit 4 pipe stages, so there it would run as the pipe).
constexpr int kPlanSm90Pipe3[] = {20, 12, 6, 3, 4, 5, 0};
constexpr int kPlanSm90Stream[] = {12, 6, 3, 4, 5, 0};
// H > 4096 on sm_90 (the stream kernels would run the 6-stage pipe): GPU run 14, with stats, 151936
// x 4096: the 6-stage pipe 319.7 us at M = 1 against the 4-stage pipe's 325.9; at M = 8 379.2
// against 336.1: the 6-stage pipe at M = 1, the 4-stage one from M = 2 on.
constexpr int kPlanSm90M1[] = {8, 6, 3, 4, 5, 0};
constexpr int kPlanSm80[] = {6, 3, 4, 5, 0};
constexpr int kPlanSm75[] = {4, 5, 0};
constexpr int kPlanSm70[] = {5, 0};
constexpr int kPlanOther[] = {0};

// The pipe's CTAs (one an SM) take the 32-row tiles in turn: its time is the busiest CTA's, so it
// is planned only where the last round of tiles keeps the SMs busy (<= 2 % idle slots).
bool pipe_waves_full(int64_t vocab, int sms) {
  const int64_t tiles = (vocab + 31) / 32;
  if (sms <= 0 || tiles < sms) return false;
  const int64_t rounds = (tiles + sms - 1) / sms;
  return rounds * sms * 50 <= tiles * 51;
}

template <class Runs>
int plan_lm_head(int sm, int64_t tokens, int64_t hidden, int64_t vocab, int sms, Runs runs) {
  auto first = [&](const int* list) {
    for (;; ++list)
      if (*list == 0 || runs(kLmHeadVariants[*list])) return *list;
  };
  if (sm >= 90 && hidden <= 16 * kUnit) return first(pipe_waves_full(vocab, sms) ? kPlanSm90Pipe3 : kPlanSm90Stream);
  if (sm >= 90 && tokens == 1) return first(kPlanSm90M1);
  if (sm >= 80) return first(kPlanSm80);
  if (sm >= 75) return first(kPlanSm75);
  if (sm >= 70) return first(kPlanSm70);
  return first(kPlanOther);
}

mlops_status check_lm_head(const mlops_lm_head_args* a, bool device) {
  g_err.clear();
  if (!a) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "args: NULL");
  if (a->tokens < 1 || a->tokens > 8)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT,
                      "x: the LM head takes 1 .. 8 tokens a call (decode); got %lld (use a GEMM for prefill)",
                      (long long)a->tokens);
  if (a->hidden < 8 || a->hidden % 8)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "x: expected a hidden size that is a positive multiple of 8, got %lld",
                      (long long)a->hidden);
  if (a->vocab < 1 || a->vocab > 0x7fffffff)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "weight: expected 1 .. 2^31-1 rows, got %lld", (long long)a->vocab);
  if (!a->x) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "x: NULL pointer");
  if (!a->weight) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "weight: NULL pointer");
  if (!a->logits) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "logits: NULL pointer");
  if (a->x_stride < a->hidden && a->tokens > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "x: row stride %lld is smaller than hidden %lld", (long long)a->x_stride,
                      (long long)a->hidden);
  if (a->weight_stride < a->hidden && a->vocab > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "weight: row stride %lld is smaller than hidden %lld",
                      (long long)a->weight_stride, (long long)a->hidden);
  if (a->logits_stride < a->vocab && a->tokens > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "logits: row stride %lld is smaller than vocab %lld",
                      (long long)a->logits_stride, (long long)a->vocab);
  // 16-byte loads of x and W (8 bf16): the kernels need them aligned
  if (device) {
    if (!aligned16(a->x) || a->x_stride % 8)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "x: expected a 16-byte aligned pointer and a row stride that is a multiple of 8");
    if (!aligned16(a->weight) || a->weight_stride % 8)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT,
                        "weight: expected a 16-byte aligned pointer and a row stride that is a multiple of 8");
  }
  if (a->variant < -1 || a->variant >= kNumLmHead)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: expected -1 or an index below %d, got %d", kNumLmHead, a->variant);
  return MLOPS_OK;
}

// ---- sample -------------------------------------------------------------------------------
const mlops_sample_variant kSampleVariants[] = {
    {0, 256, 0, 0, "t256"},         {1, 512, 0, 0, "t512"},          {2, 1024, 0, 0, "t1024"},
    {3, 1024, 1, 0, "split"},       {4, 512, 0, 8, "cluster8"},      {5, 512, 0, 16, "cluster16"},
    {6, 512, 0, 8, "cluster8_smem"}, {7, 512, 0, 16, "cluster16_smem"}, {8, 1024, 0, 16, "cluster16_smem_t1024"},
    // the staged forms whose top-p rounds stop at a bin of one weighted element (not planned
    // until measured)
    {9, 512, 0, 8, "cluster8_smem_es"}, {10, 512, 0, 16, "cluster16_smem_es"},
    // the staged forms with the lean draw (kept weights stored over the slice, walked by one
    // thread; warp-0 reads of the cluster; the last barrier's arrive before the walk): not planned
    // until measured
    {11, 512, 0, 8, "cluster8_lean"}, {12, 512, 0, 16, "cluster16_lean"},
    // the lean forms whose rounds after the first run in each CTA on the cluster's gathered
    // candidates (no cluster barrier a round): not planned until measured
    {13, 512, 0, 8, "cluster8_gather"}, {14, 512, 0, 16, "cluster16_gather"},
    // the gather forms that gather again after the second round where the first's bin held too
    // many elements (top-p alone), with the early stop on the gathered list: not planned until measured
    {15, 512, 0, 8, "cluster8_late"}, {16, 512, 0, 16, "cluster16_late"},
    // the late forms whose first round takes an 11-bit digit: top-k's in each CTA alone then one
    // gather, top-p's across the cluster then a gather of the crossing bin: not planned until measured
    {17, 512, 0, 8, "cluster8_wide"}, {18, 512, 0, 16, "cluster16_wide"},
    // the gather forms with lists of slice indices: top-k's first round counted in the staging pass,
    // top-p after a gathered top-k decided on the list, the draw over a CTA's list where it holds the
    // kept elements: not planned until measured
    {19, 512, 0, 8, "cluster8_tk"}, {20, 512, 0, 16, "cluster16_tk"},
    // the tk forms whose top-p without top-k takes the wide first round with a list of slice indices at or
    // above the crossing bin, and whose draw over a CTA's list goes by chunk sums: cluster8_tp planned above B = 8
    // for top-p rows without top-k from GPU run 76 to run 85 (then cluster8_tp3: mlops_sample_plan_configs)
    {21, 512, 0, 8, "cluster8_tp"}, {22, 512, 0, 16, "cluster16_tp"},
    // the tp forms with the wide round's atomics predicated (no branch an element), the staging without the fused
    // count's test where a row has none, and the rounds on the gathered list weighing a position only where a lane
    // of the warp keeps its element there (session 14): not planned until measured
    {23, 512, 0, 8, "cluster8_tp2"}, {24, 512, 0, 16, "cluster16_tp2"},
    // the tp forms whose rounds on the gathered list after the wide top-p round are one weighing of the list into
    // level 2's 256 bins and, where the chosen bin holds at most 32 weighted elements, one warp's exact threshold
    // over them (tp3_rounds, session 15): cluster8_tp3 planned above B = 8 for top-p rows without top-k since GPU
    // run 85 (mlops_sample_plan_configs)
    {25, 512, 0, 8, "cluster8_tp3"}, {26, 512, 0, 16, "cluster16_tp3"},
    // the tp3 forms with the slice left in global memory (GSL, session 38): 1024-thread CTAs, one an SM, 2 or 4 a row,
    // so that B = 64 (or 32) runs every row at once where the staged cluster8 forms run 30 rows at a time; the draw by
    // chunks of 64. cluster2_tp3g planned from B = 40 (GPU run 201: mlops_sample_plan_configs); cluster4_tp3g and _t512
    // (the same at 512 threads, which the scheduler may put two on an SM) lost everywhere measured: not planned
    {27, 1024, 0, 2, "cluster2_tp3g"}, {28, 1024, 0, 4, "cluster4_tp3g"}, {29, 512, 0, 2, "cluster2_tp3g_t512"}};
constexpr int kNumSample = 30;
static_assert(sizeof kSampleVariants / sizeof kSampleVariants[0] == kNumSample, "kNumSample");
// The cluster variants whose CTAs copy their slice into shared memory once (one pass of 16-byte
// loads, the max measured on the way) and read only shared memory after it (sample_cluster_kernel.cuh):
// 1, 2 with the top-p rounds' early stop, 3 with the lean draw, 4 lean with gathered rounds, 5 the
// gather form with the second gather, 6 the late form with the wide first rounds, 7 the tk forms, 8 the tp forms,
// 9 the tp2 forms, 10 the tp3 forms, 11 the global-slice tp3 forms (their slice measured on the way, not copied).
constexpr int kSampleStaged[kNumSample] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10,
                                           11, 11, 11};
constexpr int kSampleFallback = 2;  // t1024: what a cluster variant runs where it cannot
constexpr int kSampleTp3At8 = 25;   // cluster8_tp3: what the global-slice forms run where their slices would misalign
static_assert(kSampleStaged[kSampleTp3At8] == 10 && kSampleStaged[kSampleTp3At8 + 1] == 10, "cluster8_tp3 / cluster16_tp3");

// Whether a cluster variant can run as itself: an sm_90+ device, code generated for sm_90+, and
// rows on grid.y.
bool cluster_runs(const mlops_sample_variant& v, const Device& d, int64_t rows) {
  return v.cluster > 0 && d.sm >= 90 && sample_cluster_code_arch(v.cluster) >= 90 && rows <= 65535;
}

// Chunks (CTAs) a row is cut into by the split variant: ~2048 elements each, at most 64.
int split_chunks(int64_t vocab) {
  const int64_t c = (vocab + 2047) / 2048;
  return int(c < 1 ? 1 : c > kSplitMaxChunks ? kSplitMaxChunks : c);
}

mlops_status check_sample(const mlops_sample_args* a) {
  g_err.clear();
  if (!a) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "args: NULL");
  if (a->rows < 1 || a->rows > 0x7fffffff)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "logits: expected 1 .. 2^31-1 rows, got %lld", (long long)a->rows);
  if (a->vocab < 1 || a->vocab > 0x7fffffff)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "logits: expected a vocabulary of 1 .. 2^31-1, got %lld", (long long)a->vocab);
  if (!a->logits) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "logits: NULL pointer");
  if (a->logits_stride < a->vocab && a->rows > 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "logits: row stride %lld is smaller than vocab %lld",
                      (long long)a->logits_stride, (long long)a->vocab);
  if (!a->configs) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "configs: NULL pointer");
  if (!a->seeds) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "seeds: NULL pointer");
  if (!a->steps) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "steps: NULL pointer");
  if (!a->tokens) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "tokens: NULL pointer");
  if (a->history) {
    if (!a->history_len) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "history_len: required with a history");
    if (a->history_stride < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "history: expected a row stride >= 1");
    if (!a->penalty_counts)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "penalty_counts: a zeroed int32 [rows, vocab] workspace is required with a history");
  }
  if (a->variant >= 0 && a->variant < kNumSample && kSampleVariants[a->variant].split) {
    if (!a->workspace)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "workspace: the split variant needs mlops_sample_workspace_bytes() of workspace");
    if (a->rows > 65535)
      return g_err.fail(MLOPS_ERR_UNSUPPORTED, "variant: split takes at most 65535 rows a call (grid.y), got %lld", (long long)a->rows);
  }
  if (a->history && a->rows > 65535)  // the penalty kernels put rows on grid.y
    return g_err.fail(MLOPS_ERR_UNSUPPORTED, "history: penalties take at most 65535 rows a call, got %lld", (long long)a->rows);
  if (a->stats_key_hist && !a->stats_best)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "stats_key_hist: given without stats_best");
  if (a->variant < -1 || a->variant >= kNumSample)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: expected -1 or an index below %d, got %d", kNumSample, a->variant);
  return MLOPS_OK;
}

}  // namespace

EmbedParams make_embed_params(const mlops_embed_args& a) {
  EmbedParams p{};
  p.tokens = a.tokens; p.hidden = a.hidden; p.vocab = a.vocab;
  p.units = int((a.hidden + kUnit - 1) / kUnit);
  p.id_dtype = a.id_dtype; p.table_dtype = a.table_dtype; p.w_dtype = a.norm_weight_dtype;
  p.ids = a.ids; p.table = a.table; p.table_stride = a.table_stride;
  p.out = a.out; p.out_stride = a.out_stride;
  p.norm_weight = a.norm_weight;
  p.xw = a.xw; p.xw_stride = a.xw_stride;
  p.unit_sumsq = a.unit_sumsq; p.unit_sumsq_stride = a.unit_sumsq_stride;
  p.rms_r = a.rms_r; p.eps = a.eps;
  p.oov_flag = a.oov_flag;
  const int es = mlops_dtype_size(a.table_dtype);
  bool ok = aligned16(a.table) && (a.table_stride * es) % 16 == 0 && a.hidden % 8 == 0;
  if (a.out) ok = ok && aligned16(a.out) && (a.out_stride * 4) % 16 == 0;
  if (a.xw) ok = ok && aligned16(a.xw) && (a.xw_stride * 2) % 16 == 0;
  p.vec_ok = ok;
  return p;
}

LmHeadParams make_lm_head_params(const mlops_lm_head_args& a) {
  LmHeadParams p{};
  p.tokens = int(a.tokens); p.hidden = a.hidden; p.vocab = a.vocab;
  p.units = int((a.hidden + kUnit - 1) / kUnit);
  p.x = a.x; p.x_stride = a.x_stride;
  p.weight = a.weight; p.weight_stride = a.weight_stride;
  p.logits = a.logits; p.logits_stride = a.logits_stride;
  p.row_scale = a.row_scale; p.logit_scale = a.logit_scale;
  p.best = a.best; p.key_hist = a.key_hist;
  return p;
}

SampleParams make_sample_params(const mlops_sample_args& a) {
  SampleParams p{};
  p.rows = a.rows; p.vocab = a.vocab;
  p.logits = a.logits; p.logits_stride = a.logits_stride;
  p.configs = a.configs; p.seeds = a.seeds; p.steps = a.steps;
  p.history = a.history; p.history_stride = a.history_stride; p.history_len = a.history_len;
  p.penalty_counts = a.penalty_counts;
  p.tokens = a.tokens; p.logprobs = a.logprobs; p.flags = a.flags;
  p.stats_best = a.stats_best; p.stats_key_hist = a.stats_key_hist;
  p.split = nullptr;
  p.chunks = 1;
  return p;
}

}  // namespace mlops::vocab

using namespace mlops::vocab;
using mlops::kUnit;

extern "C" {

const char* mlops_vocab_last_error(void) { return g_err.message(); }

// ---- embed --------------------------------------------------------------------------------
int mlops_embed_variants(mlops_embed_variant* out, int capacity) {
  for (int i = 0; i < kNumEmbed && i < capacity; ++i) out[i] = kEmbedVariants[i];
  return kNumEmbed;
}

int mlops_embed_plan(int64_t tokens, int64_t hidden, int sm, int sms) {
  (void)sm;
  const int64_t units = (hidden + kUnit - 1) / kUnit;
  // a warp per 4 units, more warps a token while the grid is short of 2 CTAs an SM
  int v = 0;
  while (v < kNumEmbed - 1 && units > 4 * int64_t(kEmbedVariants[v].warps_per_token)) ++v;
  while (v < kNumEmbed - 1 && (tokens * kEmbedVariants[v].warps_per_token + 7) / 8 < 2 * int64_t(sms > 0 ? sms : 1) &&
         units >= kEmbedVariants[v + 1].warps_per_token)
    ++v;
  return v;
}

mlops_status mlops_embed(const mlops_embed_args* args, void* stream) {
  mlops_status st = check_embed(args);
  if (st != MLOPS_OK) return st;
  int v = args->variant;
  if (v < 0) {
    Device d;
    if (!current_device(&d)) return g_err.fail(MLOPS_ERR_CUDA, "no CUDA device available");
    v = mlops_embed_plan(args->tokens, args->hidden, d.sm, d.sms);
  }
  cudaError_t e = embed_launch(make_embed_params(*args), kEmbedVariants[v].warps_per_token, stream);
  if (e != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "embed launch (%s) failed: %s", kEmbedVariants[v].name, cudaGetErrorString(e));
  return MLOPS_OK;
}

mlops_status mlops_embed_host(const mlops_embed_args* args) {
  mlops_status st = check_embed(args);
  if (st != MLOPS_OK) return st;
  embed_host(make_embed_params(*args));
  return MLOPS_OK;
}

// ---- lm_head ------------------------------------------------------------------------------
int mlops_lm_head_variants(mlops_lm_head_variant* out, int capacity) {
  for (int i = 0; i < kNumLmHead && i < capacity; ++i) out[i] = kLmHeadVariants[i];
  return kNumLmHead;
}

int mlops_lm_head_variant_runs(int index) {
  if (index < 0 || index >= kNumLmHead) return 0;
  Device d;
  if (!current_device(&d)) return 0;
  const mlops_lm_head_variant& v = kLmHeadVariants[index];
  return d.sm >= v.min_sm && code_arch_of(v) >= v.min_sm;
}

int mlops_lm_head_plan(int64_t tokens, int64_t hidden, int64_t vocab, int sm, int sms) {
  // a build with code for sm: every instance with min_sm <= sm has its body
  return plan_lm_head(sm, tokens, hidden, vocab, sms, [sm](const mlops_lm_head_variant& v) { return sm >= v.min_sm; });
}

mlops_status mlops_lm_head(const mlops_lm_head_args* args, void* stream) {
  mlops_status st = check_lm_head(args, true);
  if (st != MLOPS_OK) return st;
  Device d;
  if (!current_device(&d)) return g_err.fail(MLOPS_ERR_CUDA, "no CUDA device available");
  // planned: the first instance of the arch's list whose code in this build is for its arch
  const int v = args->variant >= 0 ? args->variant
                                    : plan_lm_head(d.sm, args->tokens, args->hidden, args->vocab, d.sms,
                                                   [&d](const mlops_lm_head_variant& x) {
                                                     return d.sm >= x.min_sm && code_arch_of(x) >= x.min_sm;
                                                   });
  const mlops_lm_head_variant& var = kLmHeadVariants[v];
  if (d.sm < var.min_sm)
    return g_err.fail(MLOPS_ERR_UNSUPPORTED, "variant: %s needs sm_%d or newer, this GPU is sm_%d", var.name, var.min_sm, d.sm);
  if (code_arch_of(var) < var.min_sm)
    return g_err.fail(MLOPS_ERR_UNSUPPORTED, "variant: %s needs code built for sm_%d or newer; this build's is for sm_%d",
                      var.name, var.min_sm, code_arch_of(var));
  const LmHeadParams p = make_lm_head_params(*args);
  cudaError_t e;
  if (kLmHeadStreamRows[v]) {
    e = lm_head_launch_stream(p, kLmHeadStreamRows[v], kLmHeadStreamChunk[v], kLmHeadStreamTlb[v], kLmHeadStreamRr[v],
                              d.sms, stream);
  } else if (var.kind == MLOPS_LM_HEAD_MMA_BF16_K16_PIPE) {
    e = lm_head_launch_pipe(p, var.ctas_per_sm, kLmHeadPipeStages[v], d.sms, kLmHeadPipeAgg[v], stream);
  } else {
    const bool cc = var.kind == MLOPS_LM_HEAD_CUDA_CORE;
    const int rows = cc ? lm_head_tile_rows(p.tokens) : lm_head_mma_tile_rows();
    const int64_t tiles = (p.vocab + rows - 1) / rows;
    int64_t grid = var.ctas_per_sm == 0 ? tiles : int64_t(var.ctas_per_sm) * d.sms;
    if (grid > tiles) grid = tiles;
    if (grid > 0x7fffffff) grid = 0x7fffffff;
    e = cc ? lm_head_launch_cuda_core(p, grid, stream) : lm_head_launch_mma(p, mma_kind(var.kind), grid, stream);
  }
  if (e != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "lm_head launch (%s) failed: %s", var.name, cudaGetErrorString(e));
  return MLOPS_OK;
}

mlops_status mlops_lm_head_decode_best(const uint64_t* best, int64_t rows, float* max, int64_t* argmax, void* stream) {
  g_err.clear();
  if (rows < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "best: expected at least one row, got %lld", (long long)rows);
  if (!best || !max || !argmax) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "best / max / argmax: NULL pointer");
  const cudaError_t e = lm_head_decode_best(best, rows, max, argmax, stream);
  if (e != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "lm_head decode_best launch failed: %s", cudaGetErrorString(e));
  return MLOPS_OK;
}

mlops_status mlops_lm_head_host(const mlops_lm_head_args* args) {
  mlops_status st = check_lm_head(args, false);
  if (st != MLOPS_OK) return st;
  lm_head_host(make_lm_head_params(*args));
  return MLOPS_OK;
}

// ---- sample -------------------------------------------------------------------------------
int mlops_sample_variants(mlops_sample_variant* out, int capacity) {
  for (int i = 0; i < kNumSample && i < capacity; ++i) out[i] = kSampleVariants[i];
  return kNumSample;
}

int mlops_sample_variant_runs(int index) {
  if (index < 0 || index >= kNumSample) return 0;
  const mlops_sample_variant& v = kSampleVariants[index];
  if (!v.cluster) return 1;
  Device d;
  if (!current_device(&d)) return 0;
  return cluster_runs(v, d, 1);
}

int mlops_sample_variant_runs_as(int index, int64_t rows, int64_t vocab) {
  if (index < 0 || index >= kNumSample) return -1;
  const mlops_sample_variant& v = kSampleVariants[index];
  if (!v.cluster) return index;
  Device d;
  if (!current_device(&d) || !cluster_runs(v, d, rows)) return kSampleFallback;
  const int unstaged = v.cluster == 16 && sample_cluster16_ok() ? 5 : 4;  // cluster16 / cluster8
  if (kSampleStaged[index] == 11 && !sample_cluster_staged_ok(v.cluster, v.threads, vocab, 11))  // global-slice forms
    return sample_cluster_staged_ok(8, kSampleVariants[kSampleTp3At8].threads, vocab, 10) ? kSampleTp3At8 : 4;  // or cluster8
  if (kSampleStaged[index])
    return sample_cluster_staged_ok(v.cluster, v.threads, vocab, kSampleStaged[index]) ? index : unstaged;
  return unstaged;
}

int mlops_sample_plan(int64_t rows, int64_t vocab, int sm, int sms) {
  (void)sms;
  // sm_90: a cluster a row for large vocabularies (16 CTAs while the batch is small, 8 above: the
  // same work in fewer, fuller waves); mlops_sample runs t1024 where the build has no sm_90 code.
  // Elsewhere one CTA a row. The split variant needs a workspace the caller sizes, so it is only
  // named (mlops.vocab.Sampler(variant="split")), never planned.
  // GPU run 21 (H200, V = 151936, us; docs/vocab.md, the mode-aware plan), for a batch whose modes
  // are unknown here, the variant whose worst loss over the measured modes is smallest:
  //  - B <= 8: cluster16_gather (B = 1: top-p 40.7 vs cluster16_lean's 37.9, but all three 27.7
  //    vs 34.8; B = 8: top-p 52.0 vs 49.2, all three 36.2 vs cluster8_gather's 34.7);
  //  - above: cluster8_lean (B = 64: all three 112.9 vs cluster8_gather's 109.0, top-p 175.2 vs
  //    180.4; the cluster16 forms lose every mode there: 16 x 64 CTAs are 8 waves).
  if (sm >= 90 && vocab >= 16384 && rows <= 65535) return rows <= 8 ? 14 : 11;
  return vocab >= 16384 ? 2 : vocab >= 2048 ? 1 : 0;
}

int mlops_sample_plan_configs(int64_t rows, int64_t vocab, int sm, int sms, const mlops_sample_config* configs,
                              int has_stats, int has_history) {
  const int base = mlops_sample_plan(rows, vocab, sm, sms);
  if (!configs || !kSampleVariants[base].cluster) return base;
  bool all_greedy = true, any_top_k = false, any_top_p = false, any_top_k_top_p = false, any_sampled_no_top_k = false;
  bool any_sampled_no_top_p = false;
  for (int64_t i = 0; i < rows; ++i) {
    const mlops_sample_config c = sanitize(configs[i]);
    const bool greedy = config_greedy(c);
    const bool top_k = !greedy && c.top_k > 0 && int64_t(c.top_k) < vocab, top_p = !greedy && c.top_p < 1.0f;
    all_greedy = all_greedy && greedy;
    any_top_k = any_top_k || top_k;
    any_top_p = any_top_p || top_p;
    any_top_k_top_p = any_top_k_top_p || (top_k && top_p);
    any_sampled_no_top_k = any_sampled_no_top_k || (!greedy && !top_k);
    any_sampled_no_top_p = any_sampled_no_top_p || (!greedy && !top_p);
  }
  // Measured on the H200 (GPU run 21, V = 151936, CUDA-graph replay, logits in L2; docs/vocab.md,
  // the mode-aware plan). The gather forms win where top-k's lower levels (and top-p's after them)
  // run on the gathered candidates; elsewhere their list costs a little (top-p alone, B = 1: 40.7
  // vs 37.9):
  //  - greedy rows fed the head's statistics read nothing of the row: one CTA a row is the cheapest
  //    launch (t1024 5.3 / 5.5 / 6.0 us at B = 1 / 8 / 64; cluster16_lean 6.9 at B = 1,
  //    cluster8_lean 16.9 at B = 64: staging the slice is wasted there);
  //  - B <= 8, a row with top-k: cluster16_gather (B = 1: top-k 21.0, all three 27.7, top-k with
  //    the statistics 16.9; cluster16_lean 22.8 / 34.8 / 18.0. B = 8: 27.2 / 36.2 / 20.9; all three
  //    on cluster8_gather 34.7 is the one loss, B = 2 .. 7 unmeasured);
  //  - B <= 8 otherwise: cluster16_lean (B = 1: greedy 8.7, temperature 13.0, min-p 12.0, top-p
  //    37.9, penalties + top-p 40.1; B = 8: 10.8 / 17.7 / 16.3 / 49.2 / 52.3);
  //  - above B = 8, a row with top-k and top-p: cluster8_gather (B = 64: all three 109.0, cluster8_lean
  //    112.9); otherwise cluster8_lean (B = 64: greedy 27.1, temperature 56.2, min-p 48.5, top-k 85.3,
  //    top-p 175.2, penalties + top-p 184.0, top-k with the statistics 62.5; the split variant,
  //    planned for temperature / min-p since run 15, takes 77.6 / 77.7). B = 9 .. 63 unmeasured.
  // GPU run 31 (session 6, the same bench): the wide forms (an 11-bit first digit; top-p's masses per
  // wide bin, then only the crossing bin's elements gathered) where a row has top-p and the batch no
  // row that takes the gather form above: B = 1 top-p 27.4 us (cluster16_wide) vs cluster16_lean's 36.5,
  // penalties + top-p 30.0 vs 38.9; B = 8 36.7 / 39.3 vs 50.5 / 53.6; B = 64 (cluster8_wide) 123.6 /
  // 127.1 vs cluster8_lean's 167.0 / 174.9. Elsewhere they tie or lose a little (top-k alone B = 1 21.8
  // vs 20.5, greedy 7.9 vs 7.1), so top-k rows keep the gather / lean picks.
  // GPU runs 52 / 53 (session 9, commit 71896f9's kernels): from B = 8 on, a batch with a row of top-k and
  // top-p runs faster on cluster8_wide (its top-k lists each CTA's elements above its own k-th wide bin, one
  // gather): top-k + top-p + min-p B = 8 31.3 / 31.5 us vs cluster16_gather's 33.4 / 33.3, B = 64 102.9 /
  // 101.5 vs cluster8_gather's 105.5 / 104.7; at B = 1 the two tie (24.3 / 26.8 vs 25.9 / 26.5), so B < 8
  // keeps the gather form. With the head's statistics (top-k's first level from its histogram) unmeasured:
  // unchanged.
  // GPU run 66 (session 12, commit 20a575b's kernels; docs/vocab.md "Session 12"): where every sampled row has
  // top-k, the tk forms (top-k's first round in the staging pass, top-p after it on the gathered list, the
  // draw over the CTAs' lists): B = 1 (cluster16_tk) top-k 18.4 us vs cluster16_gather's 19.7, top-k + top-p
  // + min-p 20.0 vs 26.7, top-k with the statistics 15.8 vs 16.0; B = 8 20.6 / 23.5 / 17.3 vs 23.7 /
  // 31.1 (cluster8_wide) / 18.7; B = 64 (cluster8_tk) 66.2 / 74.0 / 56.5 vs cluster8_lean's 79.4,
  // cluster8_wide's 102.9, cluster8_lean's 61.7. Batches with sampled rows without top-k keep the picks
  // below (the tk forms' temperature / min-p / top-p rows are slower: B = 64 54.9 / 47.7 / 186.9 vs
  // 50.4 / 44.1 / 110.7; mixed batches unmeasured). Top-k + top-p + min-p with the statistics unmeasured.
  // GPU run 69 (session 12, commit c85f57c's tk forms: tk_finish, build_candidates_tk; docs/vocab.md
  // "Session 12"): B = 8 takes cluster8_tk (top-k 20.7 us vs cluster16_tk's 21.7, top-k + top-p + min-p 23.0
  // vs 25.0, top-k with the statistics 17.5 vs 18.4; the same call); B = 1 keeps cluster16_tk (17.0 / 19.3 /
  // 14.4 vs 19.3 / 21.7 / 16.4). B = 2 .. 7 unmeasured: cluster16_tk as before.
  // GPU run 76 (session 13, commit e617759's tp forms: the wide top-p round with one RED an element, a list of
  // slice indices at or above the crossing bin, the list draw by chunk sums; docs/vocab.md "Session 13"): above
  // B = 8, a batch whose every sampled row has top-p and none top-k takes cluster8_tp (B = 64 top-p 105.3 us vs
  // cluster8_wide's 110.1, penalties + top-p 116.3 vs 119.3; the same call). Its temperature / min-p rows are
  // slower (55.4 / 47.7 vs 51.1 / 44.8), so a batch with a sampled row without top-p keeps cluster8_wide; at B = 8
  // the two tie (34.1 vs 34.0) and at B = 1 cluster16_tp loses (28.8 vs cluster16_wide's 26.4): B <= 8 unchanged.
  if (all_greedy && has_stats && !has_history) return 2;
  // GPU run 201 (session 39, 4414356's kernels; docs/vocab.md "Session 39"): the global-slice form cluster2_tp3g runs
  // every row at once (2 CTAs of 1024 threads a row, one an SM) where the staged forms run 30 clusters at a time, and
  // its time hardly moves with B (temperature 34.5 / 35.3 / 36.0 us at B = 8 / 32 / 64, top-k 50 31.9 / 32.9 / 34.4,
  // top-p 61.0 / 62.5 / 64.3). B = 64: temperature 36.0 vs cluster8_lean's 50.0, top-k 34.4 vs cluster8_tk's 60.0, top-k
  // + top-p + min-p 37.8 vs 66.8, top-p 64.3 vs cluster8_tp3's 91.9, penalties + top-p 71.8 vs 102.0. B = 32 (the staged
  // forms' second round starts at B = 31, run 197): top-k 32.9 vs 38.9 and the combination 36.1 vs 43.4, but
  // temperature 35.3 vs 31.5 and top-p 62.5 vs 55.5; run 197's B = 48 (temperature 43.5, top-p 77.9) puts the
  // crossing for those near B = 37 (B = 33 .. 47 unmeasured): every sampled batch takes it from B = 40 on, a batch whose
  // sampled rows all have top-k from B = 31. Only while the rows fit one CTA an SM (rows <= SMs / 2), at the measured
  // V (above 65536, where a row fills the staged forms' shared memory, and where the form runs as itself:
  // sample_cluster_staged_ok, the check mlops_sample_variant_runs_as makes: V a multiple of 4, slices <= kGslMaxSlice,
  // so V <= 262144); greedy batches (one argmax a row) and the head's statistics with it unmeasured: the picks below.
  // Sessions 40 / 41 (the global-slice passes in quads, LEAN, then the branchless near mask; docs/vocab.md "Session 40",
  // "Session 41"): at B = 32 the form beats or ties the staged picks in every mode on both cards, the named variants
  // in one call: H200 run 209 temperature 29.5 vs cluster8_lean's 31.7, penalties + top-p 59.0 vs cluster8_tp3's 62.5,
  // top-p 57.2 vs 57.1; H100 run 207 29.5 vs 31.6, 58.2 vs 60.3, 55.6 vs 54.8 (top-k and the combination took it
  // from B = 31 already). Every sampled batch takes it from B = 31 on (B = 33 .. 39 unmeasured: the staged
  // forms' second round of clusters starts at 31 on the H200, the global-slice form's time hardly moves with B).
  const mlops_sample_variant& gsl = kSampleVariants[27];
  const bool gsl_fits = sm >= 90 && 2 * rows <= sms && vocab > 65536 &&
                        sample_cluster_staged_ok(gsl.cluster, gsl.threads, vocab, kSampleStaged[27]);
  if (gsl_fits && !all_greedy && rows >= 31) return 27;
  if (any_top_k && !any_sampled_no_top_k) return rows < 8 ? 20 : 19;
  if (rows >= 8 && any_top_k_top_p && !has_stats) return 17;
  // GPU run 85 (session 15, commit a8d2e8a's tp3 forms: the rounds on the gathered list weighed once into level 2's bins,
  // a warp's exact threshold where the chosen bin holds <= 32 weighted elements; docs/vocab.md "Session 15"): the same
  // rows take cluster8_tp3 (B = 64 top-p 100.5 us vs cluster8_tp's 102.8, penalties + top-p 110.6 vs 112.5; CUPTI
  // 97.4 / 98.5 vs 100.3; the same call, the same tokens); its other modes tie with cluster8_tp's.
  if (rows > 8 && any_top_p && !any_top_k && !any_sampled_no_top_p) return 25;
  if (rows <= 8) return any_top_k ? 14 : any_top_p ? 18 : 12;
  return any_top_k_top_p ? 13 : any_top_p && !any_top_k ? 17 : 11;
}

int64_t mlops_sample_workspace_bytes(int64_t rows, int64_t vocab, int variant) {
  (void)vocab;
  if (variant < 0 || variant >= kNumSample || !kSampleVariants[variant].split) return 0;
  return rows * int64_t(sizeof(SplitRow));
}

mlops_status mlops_sample_check_configs(const mlops_sample_config* c, int64_t rows) {
  g_err.clear();
  if (!c) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "configs: NULL pointer");
  for (int64_t i = 0; i < rows; ++i) {
    if (!(c[i].temperature >= 0.0f))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "temperature: expected >= 0, got %g (row %lld)", double(c[i].temperature), (long long)i);
    if (c[i].top_k < 0)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "top_k: expected >= 0 (0: off), got %d (row %lld)", c[i].top_k, (long long)i);
    if (!(c[i].top_p > 0.0f && c[i].top_p <= 1.0f))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "top_p: expected a value in (0, 1], got %g (row %lld)", double(c[i].top_p), (long long)i);
    if (!(c[i].min_p >= 0.0f && c[i].min_p <= 1.0f))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "min_p: expected a value in [0, 1], got %g (row %lld)", double(c[i].min_p), (long long)i);
    if (!(c[i].repetition_penalty > 0.0f))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "repetition_penalty: expected > 0, got %g (row %lld)",
                        double(c[i].repetition_penalty), (long long)i);
  }
  return MLOPS_OK;
}

mlops_status mlops_sample(const mlops_sample_args* args, void* stream) {
  mlops_status st = check_sample(args);
  if (st != MLOPS_OK) return st;
  int v = args->variant;
  Device d;
  const bool have_device = current_device(&d);
  if (v < 0) {
    if (!have_device) return g_err.fail(MLOPS_ERR_CUDA, "no CUDA device available");
    v = mlops_sample_plan(args->rows, args->vocab, d.sm, d.sms);
  }
  if (kSampleVariants[v].cluster && !(have_device && cluster_runs(kSampleVariants[v], d, args->rows)))
    v = kSampleFallback;  // the same tokens (the header says so)
  SampleParams sp = make_sample_params(*args);
  cudaError_t e;
  if (kSampleVariants[v].cluster) {
    e = sample_launch_cluster(sp, kSampleVariants[v].cluster, kSampleStaged[v], kSampleVariants[v].threads, stream);
  } else if (kSampleVariants[v].split) {
    sp.split = static_cast<SplitRow*>(args->workspace);
    sp.chunks = split_chunks(args->vocab);
    e = sample_launch_split(sp, kSampleVariants[v].threads, stream);
  } else {
    e = sample_launch(sp, kSampleVariants[v].threads, stream);
  }
  if (e != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "sample launch (%s) failed: %s", kSampleVariants[v].name, cudaGetErrorString(e));
  return MLOPS_OK;
}

mlops_status mlops_sample_host(const mlops_sample_args* args) {
  mlops_status st = check_sample(args);
  if (st != MLOPS_OK) return st;
  sample_host(make_sample_params(*args));
  return MLOPS_OK;
}

uint64_t mlops_sample_row_weights_host(const float* logits, int64_t vocab, const mlops_sample_config* config,
                                       uint32_t* weights) {
  return sample_row_weights_host(logits, vocab, *config, weights);
}

}  // extern "C"
