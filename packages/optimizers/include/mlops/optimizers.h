/* mlops-optimizers: multi-tensor AdamW / Adam, SGD and Lion updates, and a fused global
 * gradient norm, one launch for any number of tensors of any sizes.
 *
 * Plain C. The tensors of one call are described by a table (mlops_optim_tensor rows plus
 * a chunk map) that mlops_optim_table_build writes into caller memory; the caller copies
 * it to the device once per layout (parameters, gradients and states that do not move
 * keep their table). Every call validates before launching; a failure returns a status and
 * mlops_optim_last_error() names the argument. No call allocates or synchronizes.
 *
 * mlops_optim_step (GPU) and mlops_optim_step_host (host emulation, host pointers) run the
 * same arithmetic (src/optim_math.h) and give the same bits. */
#ifndef MLOPS_OPTIMIZERS_H
#define MLOPS_OPTIMIZERS_H

#include <stdint.h>
#include "mlops/common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLOPS_OPTIM_ABI_VERSION 1
/* Elements a CTA updates: tensors are cut into chunks of this many elements. */
#define MLOPS_OPTIM_CHUNK 16384
/* 8-bit states: one fp32 absmax per block of this many elements. */
#define MLOPS_OPTIM_QBLOCK 256

typedef enum mlops_optim_algo {
  MLOPS_OPTIM_ADAM = 0, /* Adam / AdamW (decoupled), amsgrad; states: exp_avg, exp_avg_sq, max_exp_avg_sq */
  MLOPS_OPTIM_SGD = 1,  /* momentum, dampening, nesterov; state1: momentum_buffer */
  MLOPS_OPTIM_LION = 2  /* Chen et al. 2023; state1: exp_avg */
} mlops_optim_algo;

/* One tensor. Pointers are device pointers for mlops_optim_step, host pointers for _host.
 * state1/state2 are fp32, or uint8 codes with the absmax arrays for 8-bit states. */
typedef struct mlops_optim_tensor {
  void* param;          /* dtype: BF16, FP16, FP32 */
  const void* grad;     /* same dtype as param */
  void* state1;         /* exp_avg / momentum_buffer */
  void* state2;         /* exp_avg_sq (Adam) */
  float* state3;        /* max_exp_avg_sq (amsgrad) */
  float* master;        /* fp32 master weights (BF16 / FP16 params), or NULL */
  float* absmax1;       /* 8-bit: ceil(numel / 256) floats for state1 */
  float* absmax2;       /* 8-bit: the same for state2 */
  float* step;          /* one fp32 counter, incremented by the step call */
  int64_t numel;
  int64_t first_chunk;  /* written by mlops_optim_table_build */
  uint32_t id;          /* stochastic rounding stream of this tensor (e.g. its index) */
  int32_t dtype;        /* mlops_dtype of param and grad */
  uint32_t flags;       /* written by mlops_optim_table_build (bit 0: 16-byte aligned) */
  uint32_t reserved;
} mlops_optim_tensor;

typedef struct mlops_optim_args {
  mlops_optim_algo algo;
  mlops_dtype dtype;       /* every tensor of the table has it */
  int decoupled;           /* Adam: 1 = AdamW (p *= 1 - lr*wd), 0 = L2 (g += wd*p) */
  int amsgrad;             /* Adam */
  int maximize;
  int nesterov;            /* SGD */
  int state_8bit;          /* Adam: block-wise 8-bit exp_avg / exp_avg_sq (qmap1 / qmap2) */
  int stochastic_rounding; /* BF16 params without master weights */
  uint32_t seed;
  double lr;               /* used when lr_device is NULL */
  const float* lr_device;  /* a device (host for _host) float: the learning rate, capturable */
  double beta1, beta2;     /* Adam, Lion; SGD: momentum = beta1, dampening = beta2 */
  double eps, weight_decay;
  const float* grad_scale; /* optional: g /= *grad_scale */
  const float* found_inf;  /* optional: nonzero -> nothing changes, steps included */
  const float* clip_coef;  /* optional: g *= *clip_coef (mlops_optim_grad_norm's output) */
  const float* qmap1;      /* 8-bit: 256 ascending values (signed dynamic map) */
  const float* qmap2;      /* 8-bit: 256 ascending values (unsigned dynamic map) */
  const void* table;       /* mlops_optim_table_build's output (device memory for _step) */
  int64_t num_tensors, num_chunks;
  int variant;             /* -1: the planner's; 0: "occ3", 1: "occ2" (MLOPS_OPTIM_VARIANT_*); same bits */
} mlops_optim_args;

/* Kernel variants (the same arithmetic, so the same bits): how many 256-thread CTAs an SM
 * must hold, which caps registers. occ3: 3 (<= 85 registers, 24 warps an SM); occ2: no cap
 * (Adam 90-102 registers, 2 CTAs an SM). */
#define MLOPS_OPTIM_VARIANT_OCC3 0
#define MLOPS_OPTIM_VARIANT_OCC2 1
#define MLOPS_OPTIM_NUM_VARIANTS 2
/* The variant the planner picks (algo: mlops_optim_algo, state_8bit: 0/1). */
int mlops_optim_plan(int algo, int state_8bit);

/* Bytes of the table for n tensors and the chunks they need. */
int64_t mlops_optim_table_bytes(const mlops_optim_tensor* tensors, int64_t n, int64_t* num_chunks);

/* Writes the table (rows with first_chunk / flags filled, then the int32 chunk map) into
 * out (out_bytes >= mlops_optim_table_bytes). Validates the rows. */
mlops_status mlops_optim_table_build(const mlops_optim_tensor* tensors, int64_t n, void* out, int64_t out_bytes,
                                     int64_t* num_chunks);

/* GPU: increments every step counter (unless *found_inf), then updates; two launches on stream. */
mlops_status mlops_optim_step(const mlops_optim_args* args, void* stream);
/* Host emulation of mlops_optim_step on host pointers: the same bits. */
mlops_status mlops_optim_step_host(const mlops_optim_args* args);
mlops_status mlops_optim_check(const mlops_optim_args* args);

/* Global L2 norm of every grad of a table, in a fixed order (units of 256 as
 * mlops/common/fixed_sum.h, units folded left to right into one value a chunk, chunk values
 * folded by a fixed tree), so the bits depend on the data alone. partials has one float per
 * chunk of all tables: call _partials once per table (offset: where its chunks go), then
 * _finalize once. finalize writes norm[0] = sqrt(sum) / (*grad_scale if given) and
 * coef[0] = min(1, max_norm / (norm + 1e-6)) (coef may be NULL). */
mlops_status mlops_optim_grad_norm_partials(const void* table, int64_t num_tensors, int64_t num_chunks,
                                            float* partials, int64_t offset, void* stream);
mlops_status mlops_optim_grad_norm_finalize(const float* partials, int64_t total_chunks, double max_norm,
                                            const float* grad_scale, float* norm, float* coef, void* stream);
mlops_status mlops_optim_grad_norm_partials_host(const void* table, int64_t num_tensors, int64_t num_chunks,
                                                 float* partials, int64_t offset);
mlops_status mlops_optim_grad_norm_finalize_host(const float* partials, int64_t total_chunks, double max_norm,
                                                 const float* grad_scale, float* norm, float* coef);

/* bitsandbytes' dynamic map (create_dynamic_map(signed), 8 bits, 7 exponent bits): 256
 * ascending values in [-1, 1] (signed) or [0, 1]. */
void mlops_optim_dynamic_map(int is_signed, float out[256]);

const char* mlops_optim_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
