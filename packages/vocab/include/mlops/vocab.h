/* mlops-vocab: everything along the vocabulary axis. Embedding rows (with the inputs of the
 * first RMSNorm), the BF16 LM head for 1 .. 8 tokens (with the statistics the sampler needs),
 * and token sampling without a sort of the vocabulary, with probability mass counted in fixed
 * point so a token depends on (logits, configuration, seed, step) alone.
 *
 * Plain C. Every call validates its arguments before launching anything; a failure returns a
 * status and mlops_vocab_last_error() names the argument and what was expected. No call
 * allocates or synchronizes. The GPU calls take device pointers (the embedding table may also
 * be mapped pinned host memory: with unified addressing its host address is its device
 * address); the _host calls are the host emulation on host pointers (the same arithmetic in
 * the same order: the reference the GPU is compared with bit for bit). */
#ifndef MLOPS_VOCAB_H
#define MLOPS_VOCAB_H

#include <stdint.h>
#include "mlops/common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLOPS_VOCAB_ABI_VERSION 1

/* ---- embed ------------------------------------------------------------------------------
 * out[t, :] = float(table[ids[t], :]). Optional, for the first RMSNorm of the model:
 *   xw[t, :]        = bf16(out[t, :] * w)  (w = norm_weight; the deferred-scalar form of the
 *                      norm: the consumer multiplies by rms_r[t] later),
 *   unit_sumsq[t, u] = the sum of squares of elements 256u .. 256u+255, in mlops-norm's fixed
 *                      order (mlops/common/fixed_sum.h),
 *   rms_r[t]        = 1 / sqrt(fold(unit_sumsq[t, :]) / hidden + eps): bit for bit the r that
 *                      mlops_norm computes for the same row.
 * An id outside [0, vocab) gives a zero row (and its sums, r = 1/sqrt(eps)) and sets
 * *oov_flag to 1; the table is never read out of bounds. */
typedef struct mlops_embed_args {
  int64_t tokens;  /* T >= 1 */
  int64_t hidden;  /* H >= 1 */
  int64_t vocab;   /* V >= 1: rows of the table */
  mlops_dtype id_dtype; const void* ids;                        /* INT32 or INT64 [T] */
  mlops_dtype table_dtype; const void* table; int64_t table_stride; /* BF16, FP16, FP32 [V, H] */
  float* out; int64_t out_stride;                               /* FP32 [T, H], optional */
  mlops_dtype norm_weight_dtype; const void* norm_weight;       /* [H] contiguous; with xw */
  uint16_t* xw; int64_t xw_stride;                              /* BF16 [T, H], optional */
  float* unit_sumsq; int64_t unit_sumsq_stride;                 /* FP32 [T, ceil(H/256)], optional */
  float* rms_r; float eps;                                      /* FP32 [T], optional */
  int32_t* oov_flag;                                            /* set to 1 on an OOV id, optional */
  int variant;                                                  /* -1: the planner picks */
} mlops_embed_args;

typedef struct mlops_embed_variant {
  int index;
  int warps_per_token; /* 1, 2, 4, 8 (a CTA is 256 threads: 8 / warps_per_token tokens) */
  const char* name;    /* "w1" .. "w8" */
} mlops_embed_variant;

int mlops_embed_variants(mlops_embed_variant* out, int capacity);
int mlops_embed_plan(int64_t tokens, int64_t hidden, int sm, int sms);
mlops_status mlops_embed(const mlops_embed_args* args, void* stream);
mlops_status mlops_embed_host(const mlops_embed_args* args);

/* ---- lm_head ----------------------------------------------------------------------------
 * logits[m, v] = ((x[m, :] . W[v, :]) * row_scale[m]) * logit_scale for M = 1 .. 8 tokens,
 * x and W BF16, logits FP32. The dot product's order (the CUDA-core instances) is fixed: the
 * hidden axis is cut into 8 segments of whole units of 256 (segment s = units
 * [s*U/8, (s+1)*U/8)); lane l folds elements 8l .. 8l+7 of each unit of a segment with fmaf in
 * index order, unit after unit; the 32 lane values add by the butterfly of fixed_sum.h; the 8
 * segment values add in segment order. Warp s of a CTA owns segment s, so the logits do not
 * depend on how the vocabulary rows are split over CTAs (the grid) nor on the variant.
 * Epilogue statistics (optional, each cleared by the call first):
 *   best[m]          = max over v of (key(logit) << 32) | (0xffffffff - v): the maximum and
 *                      its lowest index (key: the order-preserving uint32 of a float,
 *                      mlops_vocab_key below);
 *   key_hist[m, b]   = how many logits of row m have key >> 24 == b (the first level of the
 *                      sampler's radix select). */
typedef struct mlops_lm_head_args {
  int64_t tokens;   /* M, 1 .. 8 */
  int64_t hidden;   /* H, a multiple of 8 */
  int64_t vocab;    /* V >= 1, any */
  const uint16_t* x; int64_t x_stride;            /* BF16 [M, H] */
  const uint16_t* weight; int64_t weight_stride;  /* BF16 [V, H] */
  float* logits; int64_t logits_stride;           /* FP32 [M, V] */
  const float* row_scale;  /* FP32 [M]: the deferred RMSNorm scalar 1/rms, optional */
  float logit_scale;       /* 1 for none */
  uint64_t* best;          /* [M], optional */
  uint32_t* key_hist;      /* [M, 256], optional */
  int variant;             /* -1: the planner picks */
} mlops_lm_head_args;

typedef enum mlops_lm_head_kind {
  MLOPS_LM_HEAD_CUDA_CORE = 0,      /* fixed order above, every arch, bit for bit == host emulation */
  MLOPS_LM_HEAD_MMA_BF16_K16 = 1,   /* mma m16n8k16 BF16 (sm_80+): the MMA's own order within a
                                       segment; within the float64 bound of docs/vocab.md */
  MLOPS_LM_HEAD_MMA_F16_K8 = 2,     /* mma m16n8k8 FP16 converted from BF16 in registers (sm_75+):
                                       exact conversion for |x|, |w| < 65504 */
  MLOPS_LM_HEAD_MMA_F16_K4 = 3,     /* mma m8n8k4 FP16 (Volta's quad-pairs, sm_70+), same conversion */
  MLOPS_LM_HEAD_MMA_BF16_K16_PIPE = 4 /* mma m16n8k16 BF16 fed by a cp.async shared-memory pipeline
                                       (sm_80+): the same order and bound as MMA_BF16_K16 */
} mlops_lm_head_kind;

typedef struct mlops_lm_head_variant {
  int index;
  mlops_lm_head_kind kind;
  int min_sm;          /* lowest arch it runs on (major * 10 + minor) */
  int ctas_per_sm;     /* 0: one CTA per tile of rows; else a grid of ctas_per_sm * SMs CTAs
                          striding over the tiles */
  const char* name;
} mlops_lm_head_variant;

int mlops_lm_head_variants(mlops_lm_head_variant* out, int capacity);
/* 1 when the variant can run on the current device with this build (the device's arch and the
 * arch its code was generated for are both >= min_sm), else 0. */
int mlops_lm_head_variant_runs(int index);
/* The variant the planner picks for a GPU of arch sm (major * 10 + minor) with sms SMs, for a build
 * that has code for that arch: the fastest measured one (tensor cores where the arch has them; on
 * sm_90 the 6-stage pipe for one token, the 4-stage one for more).
 * mlops_lm_head with variant -1 starts from this choice and steps down (to the next tensor-core
 * instance, at last the CUDA-core one) while this build's code for it is below its min_sm (a
 * compute_75 PTX build JIT-compiled on an sm_90 GPU has no m16n8k16 BF16 body). */
int mlops_lm_head_plan(int64_t tokens, int64_t hidden, int64_t vocab, int sm, int sms);
mlops_status mlops_lm_head(const mlops_lm_head_args* args, void* stream);
/* The host emulation of the CUDA-core order (args->variant is not used). */
mlops_status mlops_lm_head_host(const mlops_lm_head_args* args);
/* max[m] = the float whose key is best[m] >> 32 and argmax[m] = 0xffffffff - (uint32_t)best[m], for
 * m < rows, on the device (one small kernel on the stream; device pointers). A key_hist placed right
 * after best ((uint32_t*)(best + tokens)) is cleared with best by one memset in mlops_lm_head. */
mlops_status mlops_lm_head_decode_best(const uint64_t* best, int64_t rows, float* max, int64_t* argmax, void* stream);

/* ---- sample -----------------------------------------------------------------------------
 * One token a row. Per row (its own configuration, seed and step):
 *  1. penalties on the row's history h[0 .. len) (count c_v of token v in it), in place on
 *     logits: repetition (z > 0 ? z / p : z * p, for c_v > 0), then
 *     z - presence * (c_v > 0) - frequency * c_v;
 *  2. greedy (temperature 0 or top_k 1): the lowest index of the maximum;
 *  3. else weights W_v = rint(exp_det((z_v - max) * (1/T)) * 2^31) (integers, the max gets 2^31),
 *     kept when key(z_v) >= the top_k-th largest key (ties kept), then when the weight of the
 *     kept tokens with a larger key is < top_p * (their total) (ties kept), then when
 *     W_v >= min_p * 2^31; the token is the first index whose running sum of kept weights in
 *     index order exceeds floor(R * S / 2^64), S the kept total, R = 64 bits of
 *     Philox4x32-10(key = seed, counter = step);
 *  4. step += 1 (on the device).
 * NaN and +inf logits set flags (bit 0 NaN, bit 1 +inf, bit 2 no logit above -inf); such a row
 * falls back to greedy over its non-NaN logits. Nothing is read outside [0, vocab). */
typedef struct mlops_sample_config {
  float temperature;        /* >= 0; 0: greedy */
  int32_t top_k;            /* >= 0; 0: off */
  float top_p;              /* (0, 1]; 1: off */
  float min_p;              /* [0, 1]; 0: off */
  float repetition_penalty; /* > 0; 1: off */
  float presence_penalty;   /* 0: off */
  float frequency_penalty;  /* 0: off */
  int32_t reserved;         /* 0 */
} mlops_sample_config;

#define MLOPS_SAMPLE_FLAG_NAN 1
#define MLOPS_SAMPLE_FLAG_POSINF 2
#define MLOPS_SAMPLE_FLAG_NO_FINITE 4

typedef struct mlops_sample_args {
  int64_t rows;   /* B >= 1 */
  int64_t vocab;  /* V >= 1, any */
  float* logits; int64_t logits_stride;     /* FP32 [B, V]; penalized in place */
  const mlops_sample_config* configs;       /* [B] */
  const uint64_t* seeds;                    /* [B] */
  int64_t* steps;                           /* [B]; each advances by one */
  const int32_t* history; int64_t history_stride; const int32_t* history_len; /* [B, L], [B]; optional */
  int32_t* penalty_counts;  /* INT32 [B, V] workspace, zero before and after each call; with a history */
  int32_t* tokens;          /* [B] */
  float* logprobs;          /* [B], optional: log of the chosen token's kept mass / S (greedy: T = 1, no filter) */
  int32_t* flags;           /* [B], optional */
  /* Optional: the LM head's statistics of these logits (mlops_lm_head_args.best / key_hist, rows
   * in the same order). Rows without penalties then skip the pass for the max (greedy rows read
   * nothing else) and top-k its first radix pass. The flags of such a row come from its max alone:
   * NaN if the max key is a (positive) NaN's, +inf if it is +inf's, none finite if it is -inf's. */
  const uint64_t* stats_best;     /* [B] */
  const uint32_t* stats_key_hist; /* [B, 256], optional with stats_best */
  void* workspace;          /* mlops_sample_workspace_bytes(rows, vocab, variant) bytes (the split
                               variant); NULL otherwise */
  int variant;              /* -1: the planner picks */
} mlops_sample_args;

typedef struct mlops_sample_variant {
  int index;
  int threads;  /* CTA size */
  int split;    /* 0: one CTA a row does everything; 1: chunks of the row go to several CTAs for
                   the max, the first histogram and the draw (small batches), one CTA a row for
                   the radix selection between them; needs a workspace */
  int cluster;  /* 0, or C: a thread-block cluster of C CTAs a row (sm_90+, code built for sm_90):
                   one launch, histograms and sums exchanged in distributed shared memory. Where
                   it cannot run (older GPU or code, more than 65535 rows) the call runs t1024
                   instead: the same tokens (mlops_sample_variant_runs says which) */
  const char* name;
} mlops_sample_variant;

/* Bytes of workspace a call needs (0 for variants without one). */
int64_t mlops_sample_workspace_bytes(int64_t rows, int64_t vocab, int variant);

int mlops_sample_variants(mlops_sample_variant* out, int capacity);
/* 1 when the variant runs as itself on the current device with this build, 0 when a call falls
 * back (a cluster variant below sm_90 or without sm_90 code: t1024). */
int mlops_sample_variant_runs(int index);
/* The variant a call naming `index` runs for rows x vocab on the current device: itself, t1024 where
 * a cluster cannot run, cluster8 for cluster16 where clusters of 16 do not schedule, the unstaged
 * cluster variant for a staged one whose slice does not fit in shared memory; -1 for a bad index. */
int mlops_sample_variant_runs_as(int index, int64_t rows, int64_t vocab);
/* The variant mlops_sample with variant -1 runs (docs/vocab.md, the mode-aware plan): on sm_90 for
 * V >= 16384 cluster16_smem for one row, cluster8_smem for more; one CTA a row elsewhere. */
int mlops_sample_plan(int64_t rows, int64_t vocab, int sm, int sms);
/* The planner that knows the batch (mlops.vocab.Sampler asks it; mlops_sample with variant -1
 * cannot, its configurations are on the device): configs[rows] in host memory, has_stats whether
 * the LM head's statistics come with the call, has_history whether penalties do. It may answer
 * the split variant (index 3): the caller then passes mlops_sample_workspace_bytes() of workspace.
 * Every answer gives the same tokens; only the time differs. */
int mlops_sample_plan_configs(int64_t rows, int64_t vocab, int sm, int sms, const mlops_sample_config* configs,
                              int has_stats, int has_history);
/* Host-side validation of configurations (the device kernels also clamp, never fault). */
mlops_status mlops_sample_check_configs(const mlops_sample_config* configs, int64_t rows);
mlops_status mlops_sample(const mlops_sample_args* args, void* stream);
mlops_status mlops_sample_host(const mlops_sample_args* args);
/* Host emulation only: the kept integer weights of one row after steps 1 - 3 (weights[V],
 * zero where not kept); returns the kept total S (0 for a greedy row). For tests and tools. */
uint64_t mlops_sample_row_weights_host(const float* logits, int64_t vocab, const mlops_sample_config* config,
                                       uint32_t* weights);

/* The order-preserving key of a float (larger float -> larger key; NaN above +inf when positive). */
static inline uint32_t mlops_vocab_key(uint32_t float_bits) {
  return (float_bits & 0x80000000u) ? ~float_bits : (float_bits | 0x80000000u);
}

/* The message of the last failed call on this thread ("" if none). */
const char* mlops_vocab_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
