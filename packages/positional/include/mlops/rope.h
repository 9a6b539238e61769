/* mlops-positional: rotary position embeddings (RoPE) on q and k in one call.
 *
 * Plain C. Every call validates its arguments before launching anything; a failure returns a
 * status and mlops_rope_last_error() names the argument and what was expected. No call
 * allocates or synchronizes. Pointers are device pointers for mlops_rope / mlops_rope_cache
 * and host pointers for the _host variants (the host emulation: the same arithmetic, the same
 * bits, see mlops/rope.cuh).
 *
 * Tokens. A call covers batch * seq tokens; token (b, s) of q head h starts at
 *   q.x + b * q.batch_stride + s * q.seq_stride + h * q.head_stride     (elements)
 * and its head_dim values are contiguous. So [B, S, H, D], [B, H, S, D], a flattened [T, H, D]
 * (batch = 1) and q / k as views of a fused qkv tensor are all plain strides.
 *
 * Positions (device memory, int32 or int64, any order) are positions[b * seq + s]; mrope reads
 * three rows, row r at positions + r * pos_row_stride. A position outside [0, max_positions)
 * is never used to read anything: that token's heads are left unrotated (copied when out of
 * place) and *out_of_range (when given) is set to 1. The caller clears the flag.
 *
 * Frequencies. With cos_sin_cache (fp32 [max_positions, rotary_dim]: cos of the rotary_dim/2
 * frequencies, then their sin; mlops_rope_cache builds it) the kernel reads it; without,
 * it computes cos/sin from inv_freq (fp32 [rotary_dim/2], device memory, so it may change
 * between CUDA-graph replays: dynamic NTK, longrope) and attention_scaling. Both give the same
 * bits for the same inv_freq and scaling. */
#ifndef MLOPS_ROPE_H
#define MLOPS_ROPE_H

#include <stdint.h>
#include "mlops/common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLOPS_ROPE_ABI_VERSION 2 /* 2: mlops_rope_args.variant */

typedef enum mlops_rope_layout {
  MLOPS_ROPE_NEOX = 0, /* pairs (i, i + rotary_dim/2): Llama, Qwen, Mistral, NeoX */
  MLOPS_ROPE_GPTJ = 1  /* pairs (2i, 2i + 1): GPT-J, GLM, interleaved */
} mlops_rope_layout;

/* q or k: input and output (out == x: in place). heads == 0: absent. */
typedef struct mlops_rope_tensor {
  const void* x;
  void* out;
  int64_t heads;
  int64_t batch_stride, seq_stride, head_stride;             /* of x, in elements */
  int64_t out_batch_stride, out_seq_stride, out_head_stride; /* of out, in elements */
} mlops_rope_tensor;

typedef struct mlops_rope_args {
  int64_t batch, seq;   /* tokens = batch * seq < 2^31 (a flattened token layout: batch = 1) */
  int64_t head_dim;     /* 64 ... 256 */
  int64_t rotary_dim;   /* even, 2 ... head_dim; values past it pass through */
  mlops_rope_layout layout;
  mlops_dtype dtype;    /* BF16, FP16, FP32: q, k and their outputs */
  mlops_rope_tensor q, k;

  mlops_dtype pos_dtype; /* INT32 or INT64 */
  const void* positions;
  int64_t pos_row_stride;     /* mrope: elements between the three position rows */
  int32_t mrope_section[3];   /* all 0: one position row; else sum = rotary_dim / 2 */

  const float* cos_sin_cache; /* [max_positions, rotary_dim] fp32, or NULL: on the fly */
  int64_t max_positions;      /* positions must lie in [0, max_positions) */
  const float* inv_freq;      /* [rotary_dim / 2] fp32, on the fly only */
  float attention_scaling;    /* on the fly only (the cache holds it already); 1 for most types */

  int32_t* out_of_range;      /* optional flag, set to 1 when a position was out of range */
  int tokens_per_cta;         /* 0: the planner picks both; else 1 ... 16 */
  int heads_per_cta;          /* with tokens_per_cta: 0 = all heads; else 1 ... q.heads + k.heads */
  int variant;                /* 0: the planner's kernel; else the id of one of mlops_rope_variants */
} mlops_rope_args;

/* A kernel variant (every one gives the same bits; they differ in when and how many q / k loads a
 * thread issues). id >= 1 is what mlops_rope_args.variant takes. */
typedef struct mlops_rope_variant {
  int id;
  const char* name;
  int items_per_thread; /* 16-byte pieces of each half of a head a thread keeps in flight */
  int early;            /* 1: q / k loads issued before the positions are read */
  int pipe;             /* 0 (kept for ABI 2: the persistent-grid variants were removed) */
} mlops_rope_variant;

/* Writes up to capacity entries and returns how many variants there are. */
int mlops_rope_variants(mlops_rope_variant* out, int capacity);

/* GPU: enqueues on stream (a cudaStream_t; NULL = the legacy default stream). */
mlops_status mlops_rope(const mlops_rope_args* args, void* stream);

/* Host emulation on host pointers; the same bits as mlops_rope for the same args. */
mlops_status mlops_rope_host(const mlops_rope_args* args);

/* Only validates; what both calls do first. */
mlops_status mlops_rope_check(const mlops_rope_args* args);

/* cache[p, i] = cos(fp32(p * inv_freq[i])) * scaling, cache[p, half + i] = sin(...) * scaling for
 * p < max_positions, i < half: fp32 [max_positions, 2 * half]. The GPU and host builds agree bit
 * for bit (and with the kernels' on-the-fly values). */
mlops_status mlops_rope_cache(const float* inv_freq, int64_t half, float scaling, int64_t max_positions,
                              float* cache, void* stream);
mlops_status mlops_rope_cache_host(const float* inv_freq, int64_t half, float scaling, int64_t max_positions,
                                   float* cache);

/* The split the planner picks (tokens_per_cta = 0) for a shape on a device with sms SMs: tokens a
 * CTA and heads a CTA (heads: q.heads + k.heads). Its kernel from the cache is dec up to 10 waves of
 * dec's grid (decode and small prefills: 8 tokens a CTA, a warp a token and a few heads), then a few
 * tokens and all heads a CTA. A call that sets its own split with variant 0 gets the planner's kernel
 * among those that use a split (early2 for decode from the cache, stage4 on the fly, early2x5 above). */
void mlops_rope_plan(int64_t tokens, int64_t heads, int64_t rotary_dim, int sms, int* tokens_per_cta,
                     int* heads_per_cta);
/* The same for a given variant (0: the planner's kernel); *variant_used gets the id it resolves to. */
void mlops_rope_plan_variant(int variant, int64_t tokens, int64_t heads, int64_t rotary_dim, int sms,
                             int* tokens_per_cta, int* heads_per_cta, int* variant_used);
/* The same for a path: on_the_fly = 1 when the call passes no cache (inv_freq). The planner's
 * kernel (variant 0) and split depend on it (on the fly: dec up to 8 tokens, stage4 for the rest of
 * decode, early2x5 above; prefill: the tokens a CTA); mlops_rope_plan_variant is on_the_fly = 0. The
 * flat variants have no split: they report one token and every head a CTA and size their grid at the
 * launch; the dec variants report 8 tokens and their warp's heads. */
void mlops_rope_plan_path(int variant, int on_the_fly, int64_t tokens, int64_t heads, int64_t rotary_dim, int sms,
                          int* tokens_per_cta, int* heads_per_cta, int* variant_used);

/* The message of the last failed call on this thread ("" if none). */
const char* mlops_rope_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
