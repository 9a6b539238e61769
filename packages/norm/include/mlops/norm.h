/* mlops-norm: RMSNorm and LayerNorm with residual add, silu gates, groups and quantized
 * outputs (INT8, NVFP4, FP8 E4M3), reproducible bit for bit across variants and GPUs.
 *
 * Plain C. Every call validates its arguments before launching anything; a failure returns
 * a status and mlops_norm_last_error() names the argument and what was expected. No call
 * allocates or synchronizes. Pointers are device pointers for mlops_norm and host
 * pointers for mlops_norm_host (the host emulation: the same arithmetic in the same order,
 * the reference the GPU is compared with bit for bit). */
#ifndef MLOPS_NORM_H
#define MLOPS_NORM_H

#include <stdint.h>
#include "mlops/common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLOPS_NORM_ABI_VERSION 1

typedef enum mlops_norm_kind { MLOPS_NORM_RMS = 0, MLOPS_NORM_LAYER = 1 } mlops_norm_kind;

/* Where the silu gate multiplies: none, before the norm (Mamba-2 norm_before_gate=False),
 * after it (Mamba-2 / Nemotron-H norm_before_gate=True, Qwen3-Next). */
typedef enum mlops_norm_gate { MLOPS_GATE_NONE = 0, MLOPS_GATE_BEFORE = 1, MLOPS_GATE_AFTER = 2 } mlops_norm_gate;

/* Order of roundings. HF: t = round_x(v*r); y = round_out(w*t [+ b]), a gate after the
 * norm multiplies round_x(w*t) (Llama, Qwen, Qwen3-Next). SINGLE: y = round_out(v*r*w [+ b]
 * [* silu(z)]) (Gemma, LayerNorm, biases). */
typedef enum mlops_norm_order { MLOPS_ORDER_HF = 0, MLOPS_ORDER_SINGLE = 1 } mlops_norm_order;

typedef enum mlops_norm_quant {
  MLOPS_QUANT_NONE = 0,
  MLOPS_QUANT_INT8 = 1,        /* q int8 [rows, H] = rne(y * 127/amax); scale fp32 [rows, H/16] = amax/127 per 16 values */
  MLOPS_QUANT_NVFP4 = 2,       /* q uint8 [rows, H/2] (E2M1 pairs, even index in the low nibble);
                                  scale E4M3 [rows, H/16]; fp32 global decode factor (optional) */
  MLOPS_QUANT_FP8_STATIC = 3,  /* q e4m3 [rows, H] = e4m3(clamp(y * (1 / scale[0]), +-448)) */
  MLOPS_QUANT_FP8_DYNAMIC = 4  /* q e4m3 [rows, H]; scale fp32 [rows] = amax_row/448 (1 if 0) */
} mlops_norm_quant;

/* One call. Row r of a tensor starts at ptr + r * <name>_stride elements; the last
 * dimension is contiguous. Optional pointers are NULL when absent. */
typedef struct mlops_norm_args {
  int64_t rows;        /* T >= 1 */
  int64_t hidden;      /* H >= 1 */
  int64_t group_size;  /* 0 or H: one group a row; else a multiple of 256 dividing H */
  mlops_norm_kind kind;
  mlops_norm_gate gate_mode;
  mlops_norm_order order;
  mlops_norm_quant quant;
  float eps;
  float weight_offset; /* 0: w (applied as -0: w + -0 = w, a -0 weight keeps its sign), 1: 1 + w (Gemma, Qwen3-Next, LayerNorm1P) */

  mlops_dtype x_dtype; /* BF16, FP16, FP32; also the dtype of residual, gate, y, residual_out */
  const void* x;        int64_t x_stride;
  const void* residual; int64_t residual_stride;  /* added to x before the norm */
  void* residual_out;   int64_t residual_out_stride; /* x + residual (may alias residual or x) */
  const void* gate;     int64_t gate_stride;

  mlops_dtype w_dtype;  /* BF16, FP16, FP32, or NONE: no weight */
  const void* weight;   /* [H] contiguous */
  const void* bias;     /* [H] contiguous, w_dtype (LayerNorm, or RMSNorm with a bias) */

  void* y; int64_t y_stride;  /* normalized output, x_dtype; may be NULL with a quantized output */

  void* q; int64_t q_stride;          /* quantized values (bytes per row stride) */
  void* q_scale; int64_t q_scale_stride; /* per-16 / per-row scales (elements) */
  const float* quant_scale;  /* FP8_STATIC: the decode scale (device); NVFP4: the global
                                decode factor (device, NULL: single-level scaling) */
  int variant;          /* -1: the planner picks; else an index into mlops_norm_variants */
} mlops_norm_args;

typedef struct mlops_norm_variant {
  int index;
  int warps_per_row;   /* 1, 2, 4, 8 (16 at most); 0: hidden / (256 * units_in_registers) */
  int rows_per_cta;    /* 8 / warps_per_row: a CTA is 256 threads */
  int units_in_registers; /* units of 256 a warp keeps in registers; longer rows re-read x */
  const char* name;    /* "w1", "w2", "w4", "w8" */
} mlops_norm_variant;

/* Returns the number of variants; writes min(n, capacity) of them. */
int mlops_norm_variants(mlops_norm_variant* out, int capacity);

/* The variant the planner picks for a shape on this device (sm = major*10+minor, sms = SM count). */
int mlops_norm_plan(int64_t rows, int64_t hidden, int sm, int sms);

/* GPU: enqueues on stream (a cudaStream_t; NULL = the legacy default stream). */
mlops_status mlops_norm(const mlops_norm_args* args, void* stream);

/* Host emulation on host pointers; the same bits as mlops_norm for the same args. */
mlops_status mlops_norm_host(const mlops_norm_args* args);

/* Only validates; what both calls do first. */
mlops_status mlops_norm_check(const mlops_norm_args* args);

/* The message of the last failed call on this thread ("" if none). */
const char* mlops_norm_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
