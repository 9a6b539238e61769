// Python bindings of the C API. No PyTorch header: tensors cross as data pointers with
// shapes and strides (the Python layer reads them off torch), the stream as an integer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cuda_runtime.h>

#include <vector>

#include "mlops/norm.h"
#include "norm_math.h"
#include "norm_plan.h"

namespace nb = nanobind;

namespace {

void* ptr(uintptr_t p) { return reinterpret_cast<void*>(p); }

// Positional, flat: the fastest call nanobind can parse (measured in bench/bench_overhead.py).
void run(bool device, uintptr_t stream, int64_t rows, int64_t hidden, int64_t group, int kind, int gate_mode, int order,
         int quant, float eps, float weight_offset, int x_dtype, uintptr_t x, int64_t x_stride, uintptr_t residual,
         int64_t residual_stride, uintptr_t residual_out, int64_t residual_out_stride, uintptr_t gate,
         int64_t gate_stride, int w_dtype, uintptr_t weight, uintptr_t bias, uintptr_t y, int64_t y_stride, uintptr_t q,
         int64_t q_stride, uintptr_t q_scale, int64_t q_scale_stride, uintptr_t quant_scale, int variant) {
  mlops_norm_args a{};
  a.rows = rows; a.hidden = hidden; a.group_size = group;
  a.kind = mlops_norm_kind(kind); a.gate_mode = mlops_norm_gate(gate_mode);
  a.order = mlops_norm_order(order); a.quant = mlops_norm_quant(quant);
  a.eps = eps; a.weight_offset = weight_offset;
  a.x_dtype = mlops_dtype(x_dtype); a.x = ptr(x); a.x_stride = x_stride;
  a.residual = ptr(residual); a.residual_stride = residual_stride;
  a.residual_out = ptr(residual_out); a.residual_out_stride = residual_out_stride;
  a.gate = ptr(gate); a.gate_stride = gate_stride;
  a.w_dtype = mlops_dtype(w_dtype); a.weight = ptr(weight); a.bias = ptr(bias);
  a.y = ptr(y); a.y_stride = y_stride;
  a.q = ptr(q); a.q_stride = q_stride; a.q_scale = ptr(q_scale); a.q_scale_stride = q_scale_stride;
  a.quant_scale = static_cast<const float*>(ptr(quant_scale));
  a.variant = variant;
  mlops_status st = device ? mlops_norm(&a, ptr(stream)) : mlops_norm_host(&a);
  if (st == MLOPS_ERR_INVALID_ARGUMENT) throw nb::value_error(mlops_norm_last_error());
  if (st != MLOPS_OK) throw std::runtime_error(std::string(mlops_status_string(st)) + ": " + mlops_norm_last_error());
}

// The eager fast path of a plain call on a CUDA device (contiguous rows: every stride is H;
// optional weight, residual): 13 arguments instead of run's 31 (nanobind converts each), and
// x's device compared with the current one here rather than by torch.cuda.current_device() in
// Python. Returns false without launching when they differ (the general path switches).
bool run_plain(int device, uintptr_t stream, int64_t rows, int64_t hidden, int kind, float eps, float weight_offset,
               int x_dtype, uintptr_t x, int w_dtype, uintptr_t weight, uintptr_t residual, uintptr_t residual_out,
               uintptr_t y) {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device) {
    cudaGetLastError();
    return false;
  }
  mlops_norm_args a{};
  a.rows = rows; a.hidden = hidden;
  a.kind = mlops_norm_kind(kind);
  a.order = (kind == MLOPS_NORM_RMS && weight_offset == 0.0f) ? MLOPS_ORDER_HF : MLOPS_ORDER_SINGLE;
  a.eps = eps; a.weight_offset = weight_offset;
  a.x_dtype = mlops_dtype(x_dtype); a.x = ptr(x); a.x_stride = hidden;
  a.residual = ptr(residual); a.residual_stride = hidden;
  a.residual_out = ptr(residual_out); a.residual_out_stride = hidden;
  a.w_dtype = mlops_dtype(w_dtype); a.weight = ptr(weight);
  a.y = ptr(y); a.y_stride = hidden;
  a.variant = -1;
  mlops_status st = mlops_norm(&a, ptr(stream));
  if (st == MLOPS_ERR_INVALID_ARGUMENT) throw nb::value_error(mlops_norm_last_error());
  if (st != MLOPS_OK) throw std::runtime_error(std::string(mlops_status_string(st)) + ": " + mlops_norm_last_error());
  return true;
}

// rms_norm's eager fast path (y alone, RMSNorm, HF order, no residual): run_plain with kind,
// weight_offset and the residual pair fixed and the element count n (rows = n / hidden here):
// 10 arguments for nanobind to convert instead of 14. Returns false without launching when x is
// not on the current device.
bool run_rms(int device, uintptr_t stream, int64_t n, int64_t hidden, float eps, int x_dtype, uintptr_t x, int w_dtype,
             uintptr_t weight, uintptr_t y) {
  return run_plain(device, stream, hidden > 0 ? n / hidden : 0, hidden, MLOPS_NORM_RMS, eps, 0.0f, x_dtype, x, w_dtype,
                   weight, 0, 0, y);
}

// Test hook: the variant mlops_norm picks for a call of this shape (plan_call), no launch; sm: the
// device's compute capability as 10 * major + minor (90 unless given).
int plan_call(int64_t rows, int64_t hidden, int kind, int x_dtype, bool residual, int quant, int sms, int sm) {
  mlops_norm_args a{};
  a.rows = rows; a.hidden = hidden;
  a.kind = mlops_norm_kind(kind); a.quant = mlops_norm_quant(quant);
  a.x_dtype = mlops_dtype(x_dtype);
  a.w_dtype = a.x_dtype;  // the common call: a weight in x's dtype, HF order (LayerNorm: single), no bias
  a.weight = ptr(256);    // only compared with NULL
  if (a.kind == MLOPS_NORM_LAYER) a.order = MLOPS_ORDER_SINGLE;
  a.residual = residual ? ptr(256) : nullptr;  // only compared with NULL
  return mlops::norm::plan_call(a, sm, sms);
}

nb::list variants() {
  std::vector<mlops_norm_variant> v(size_t(mlops_norm_variants(nullptr, 0)));  // the count, then the table
  const int n = mlops_norm_variants(v.data(), int(v.size()));
  nb::list out;
  for (int i = 0; i < n && i < int(v.size()); ++i) {
    nb::dict d;
    d["index"] = v[i].index;
    d["name"] = v[i].name;
    d["warps_per_row"] = v[i].warps_per_row;
    d["rows_per_cta"] = v[i].rows_per_cta;
    d["units_in_registers"] = v[i].units_in_registers;
    out.append(d);
  }
  return out;
}

// Test hook: the host side of the element conversions over n values, so the CPU suite can
// check them exhaustively against torch (kind: see the switch).
void convert(int kind, uintptr_t src, uintptr_t dst, int64_t n) {
  using namespace mlops;
  const float* f = reinterpret_cast<const float*>(src);
  const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
  const uint8_t* b = reinterpret_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0: reinterpret_cast<uint16_t*>(dst)[i] = f32_to_bf16_int(f[i]); break;
      case 1: reinterpret_cast<uint16_t*>(dst)[i] = f32_to_f16_int(f[i]); break;
      case 2: reinterpret_cast<float*>(dst)[i] = f16_to_f32_int(h[i]); break;
      case 3: reinterpret_cast<uint8_t*>(dst)[i] = f32_to_e4m3(f[i]); break;
      case 4: reinterpret_cast<float*>(dst)[i] = e4m3_to_f32(b[i]); break;
      case 5: reinterpret_cast<uint8_t*>(dst)[i] = f32_to_e2m1(f[i]); break;
      case 6: reinterpret_cast<float*>(dst)[i] = exp_det(f[i]); break;
      case 7: reinterpret_cast<float*>(dst)[i] = silu_det(f[i]); break;
      default: throw nb::value_error("kind: unknown conversion");
    }
  }
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "mlops-norm native module (C API bindings)";
  m.def("run", &run);
  m.def("run_plain", &run_plain);
  m.def("run_rms", &run_rms);
  m.def("variants", &variants);
  m.def("plan", &mlops_norm_plan);
  m.def("plan_call", &plan_call, nb::arg("rows"), nb::arg("hidden"), nb::arg("kind"), nb::arg("x_dtype"),
        nb::arg("residual"), nb::arg("quant"), nb::arg("sms"), nb::arg("sm") = 90);
  m.def("_convert", &convert);
}
