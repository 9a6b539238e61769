// The C API of mlops-optimizers: the table builder, validation (before any launch), the
// GPU entry points and their host emulations, the dynamic quantization map.
#include <cuda_runtime.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "mlops/common/api_error.h"
#include "mlops/optimizers.h"
#include "optim_host.h"
#include "optim_launch.h"
#include "optim_layout.h"

namespace mlops::optim {
namespace {
using common::aligned16;

thread_local common::ErrorSlot g_err;  // this package's last error (api_error.h)

int64_t chunks_of(int64_t numel) { return (numel + MLOPS_OPTIM_CHUNK - 1) / MLOPS_OPTIM_CHUNK; }

bool is_param_dtype(int32_t t) {
  return t == MLOPS_DTYPE_BF16 || t == MLOPS_DTYPE_FP16 || t == MLOPS_DTYPE_FP32;
}

mlops_status check_args(const mlops_optim_args* a) {
  g_err.clear();
  if (!a) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "args: NULL");
  if (a->algo != MLOPS_OPTIM_ADAM && a->algo != MLOPS_OPTIM_SGD && a->algo != MLOPS_OPTIM_LION)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "algo: expected adam (0), sgd (1) or lion (2), got %d", int(a->algo));
  if (!is_param_dtype(a->dtype))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "dtype: expected bfloat16, float16 or float32, got %s",
                      mlops_dtype_name(a->dtype));
  if (!a->lr_device && !(a->lr >= 0.0))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "lr: expected >= 0, got %g", a->lr);
  if (!(a->weight_decay >= 0.0))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "weight_decay: expected >= 0, got %g", a->weight_decay);
  if (a->algo == MLOPS_OPTIM_SGD) {
    if (!(a->beta1 >= 0.0)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "momentum: expected >= 0, got %g", a->beta1);
    if (a->nesterov && (a->beta1 <= 0.0 || a->beta2 != 0.0))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "nesterov: needs momentum > 0 and dampening 0");
  } else {
    if (!(a->beta1 >= 0.0 && a->beta1 < 1.0))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "beta1: expected a value in [0, 1), got %g", a->beta1);
    if (!(a->beta2 >= 0.0 && a->beta2 < 1.0))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "beta2: expected a value in [0, 1), got %g", a->beta2);
  }
  if (a->algo == MLOPS_OPTIM_ADAM && !(a->eps >= 0.0))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "eps: expected >= 0, got %g", a->eps);
  if (a->state_8bit) {
    if (a->algo != MLOPS_OPTIM_ADAM || a->amsgrad)
      return g_err.fail(MLOPS_ERR_UNSUPPORTED, "state_8bit: only Adam / AdamW without amsgrad has 8-bit states");
    if (!a->qmap1 || !a->qmap2) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "qmap1/qmap2: 8-bit states need both maps");
  }
  if (a->stochastic_rounding && a->dtype != MLOPS_DTYPE_BF16)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "stochastic_rounding: only for bfloat16 parameters, not %s",
                      mlops_dtype_name(a->dtype));
  if (a->num_tensors < 0 || a->num_chunks < 0)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "num_tensors/num_chunks: expected >= 0");
  if (a->num_chunks > 0x7fffffff)
    return g_err.fail(MLOPS_ERR_UNSUPPORTED, "num_chunks: %lld chunks exceed one grid", (long long)a->num_chunks);
  if (a->num_tensors > 0 && !a->table) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table: NULL");
  if (a->variant < -1 || a->variant >= MLOPS_OPTIM_NUM_VARIANTS)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: expected -1 or an index below %d, got %d",
                      MLOPS_OPTIM_NUM_VARIANTS, a->variant);
  return MLOPS_OK;
}

mlops_status cuda_fail(cudaError_t err, const char* what) {
  return g_err.fail(MLOPS_ERR_CUDA, "%s failed: %s", what, cudaGetErrorString(err));
}

}  // namespace
}  // namespace mlops::optim

using namespace mlops::optim;

extern "C" {

int64_t mlops_optim_table_bytes(const mlops_optim_tensor* tensors, int64_t n, int64_t* num_chunks) {
  int64_t chunks = 0;
  for (int64_t i = 0; i < n; ++i) chunks += chunks_of(tensors[i].numel < 0 ? 0 : tensors[i].numel);
  if (num_chunks) *num_chunks = chunks;
  return n * int64_t(sizeof(mlops_optim_tensor)) + chunks * int64_t(sizeof(int32_t));
}

mlops_status mlops_optim_table_build(const mlops_optim_tensor* tensors, int64_t n, void* out, int64_t out_bytes,
                                     int64_t* num_chunks) {
  g_err.clear();
  if (n < 0 || (n > 0 && !tensors)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "tensors: NULL or a negative count");
  if (n > 0x7fffffff) return g_err.fail(MLOPS_ERR_UNSUPPORTED, "tensors: at most 2^31 - 1 a table");
  for (int64_t i = 0; i < n; ++i) {
    const mlops_optim_tensor& t = tensors[i];
    if (t.numel < 0) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "tensors[%lld].numel: negative", (long long)i);
    if (!is_param_dtype(t.dtype))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "tensors[%lld].dtype: expected bfloat16, float16 or float32, got %s",
                        (long long)i, mlops_dtype_name(mlops_dtype(t.dtype)));
    if (t.numel > 0 && (!t.param || !t.grad || !t.step))
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "tensors[%lld]: param, grad and step are required", (long long)i);
  }
  int64_t chunks = 0;
  const int64_t need = mlops_optim_table_bytes(tensors, n, &chunks);
  if (!out || out_bytes < need)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "out: needs %lld bytes, got %lld", (long long)need, (long long)out_bytes);
  auto* rows = static_cast<mlops_optim_tensor*>(out);
  auto* chunk_map = reinterpret_cast<int32_t*>(rows + n);
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) {
    mlops_optim_tensor t = tensors[i];
    const bool al = aligned16(t.param) && aligned16(t.grad) && aligned16(t.state1) && aligned16(t.state2) &&
                    aligned16(t.state3) && aligned16(t.master);
    t.flags = al ? kFlagAligned : 0u;
    t.first_chunk = c;
    for (int64_t k = chunks_of(t.numel); k > 0; --k) chunk_map[c++] = int32_t(i);
    std::memcpy(&rows[i], &t, sizeof t);
  }
  if (num_chunks) *num_chunks = chunks;
  return MLOPS_OK;
}

mlops_status mlops_optim_check(const mlops_optim_args* args) { return check_args(args); }

// occ3 (3 CTAs an SM: 24 warps to hide DRAM latency) for every algorithm: with amsgrad and
// 8-bit states as compile-time instances no common path spills there (ptxas -v, nvcc 13.0,
// sm_90: Adam fp32 80 registers, 0 spills; amsgrad / 8-bit 4-8 bytes). occ2 stays for the
// bench to compare (bench/bench_optimizers.py times both); not yet measured on the H200.
int mlops_optim_plan(int algo, int state_8bit) {
  (void)algo;
  (void)state_8bit;
  return MLOPS_OPTIM_VARIANT_OCC3;
}

mlops_status mlops_optim_step(const mlops_optim_args* args, void* stream) {
  mlops_status st = check_args(args);
  if (st != MLOPS_OK) return st;
  if (args->num_tensors == 0) return MLOPS_OK;
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t err = launch_increment_steps(*args, s);
  if (err != cudaSuccess) return cuda_fail(err, "step counter launch");
  if (args->num_chunks == 0) return MLOPS_OK;
  const int variant = args->variant >= 0 ? args->variant : mlops_optim_plan(args->algo, args->state_8bit);
  err = launch_step(*args, variant, s);
  if (err != cudaSuccess) return cuda_fail(err, "update launch");
  return MLOPS_OK;
}

mlops_status mlops_optim_step_host(const mlops_optim_args* args) {
  mlops_status st = check_args(args);
  if (st != MLOPS_OK) return st;
  step_host(*args);
  return MLOPS_OK;
}

static mlops_status check_norm(const void* table, int64_t num_tensors, int64_t num_chunks, const float* partials,
                               int64_t offset) {
  g_err.clear();
  if (num_tensors < 0 || num_chunks < 0 || offset < 0)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "num_tensors/num_chunks/offset: expected >= 0");
  if (num_chunks > 0x7fffffff) return g_err.fail(MLOPS_ERR_UNSUPPORTED, "num_chunks: exceeds one grid");
  if (num_chunks > 0 && (!table || !partials)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "table/partials: NULL");
  return MLOPS_OK;
}

mlops_status mlops_optim_grad_norm_partials(const void* table, int64_t num_tensors, int64_t num_chunks,
                                            float* partials, int64_t offset, void* stream) {
  mlops_status st = check_norm(table, num_tensors, num_chunks, partials, offset);
  if (st != MLOPS_OK || num_chunks == 0) return st;
  cudaError_t err = launch_norm_partials(table, num_tensors, num_chunks, partials + offset,
                                         static_cast<cudaStream_t>(stream));
  return err == cudaSuccess ? MLOPS_OK : cuda_fail(err, "norm launch");
}

mlops_status mlops_optim_grad_norm_partials_host(const void* table, int64_t num_tensors, int64_t num_chunks,
                                                 float* partials, int64_t offset) {
  mlops_status st = check_norm(table, num_tensors, num_chunks, partials, offset);
  if (st != MLOPS_OK || num_chunks == 0) return st;
  norm_partials_host(table, num_tensors, num_chunks, partials + offset);
  return MLOPS_OK;
}

static mlops_status check_finalize(const float* partials, int64_t total, double max_norm, const float* norm) {
  g_err.clear();
  if (total < 0 || (total > 0 && !partials)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "partials: NULL or negative count");
  if (!norm) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "norm: NULL");
  if (!(max_norm > 0.0)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "max_norm: expected > 0, got %g", max_norm);
  return MLOPS_OK;
}

mlops_status mlops_optim_grad_norm_finalize(const float* partials, int64_t total, double max_norm,
                                            const float* grad_scale, float* norm, float* coef, void* stream) {
  mlops_status st = check_finalize(partials, total, max_norm, norm);
  if (st != MLOPS_OK) return st;
  cudaError_t err = launch_norm_finalize(partials, total, float(max_norm), grad_scale, norm, coef,
                                         static_cast<cudaStream_t>(stream));
  return err == cudaSuccess ? MLOPS_OK : cuda_fail(err, "norm finalize launch");
}

mlops_status mlops_optim_grad_norm_finalize_host(const float* partials, int64_t total, double max_norm,
                                                 const float* grad_scale, float* norm, float* coef) {
  mlops_status st = check_finalize(partials, total, max_norm, norm);
  if (st != MLOPS_OK) return st;
  norm_finalize_host(partials, total, float(max_norm), grad_scale, norm, coef);
  return MLOPS_OK;
}

// bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): for exponent
// i = 0..6, the midpoints of linspace(0.1, 1, items_i) scaled by 10^(i-6) (and negated when
// signed), plus 0 and 1, sorted. Computed in double, rounded to float once (bitsandbytes
// rounds its float32 linspace on the way; the values agree to a float ulp).
void mlops_optim_dynamic_map(int is_signed, float out[256]) {
  std::vector<float> v;
  for (int i = 0; i < 7; ++i) {
    const int items = is_signed ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    const double scale = std::pow(10.0, double(i - 6));
    for (int j = 0; j + 1 < items; ++j) {
      const double b0 = 0.1 + 0.9 * j / (items - 1), b1 = 0.1 + 0.9 * (j + 1) / (items - 1);
      const double mean = (b0 + b1) / 2.0;
      v.push_back(float(scale * mean));
      if (is_signed) v.push_back(float(-scale * mean));
    }
  }
  v.push_back(0.0f);
  v.push_back(1.0f);
  while (v.size() < 256) v.push_back(0.0f);
  std::sort(v.begin(), v.end());
  for (int i = 0; i < 256; ++i) out[i] = v[size_t(i)];
}

const char* mlops_optim_last_error(void) { return g_err.message(); }

}  // extern "C"
