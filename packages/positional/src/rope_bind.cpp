// Python bindings of the C API. No PyTorch header: tensors cross as data pointers with
// strides (the Python layer reads them off torch), the stream as an integer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cuda_runtime.h>

#include <string>

#include "mlops/rope.h"

namespace nb = nanobind;

namespace {

void* ptr(uintptr_t p) { return reinterpret_cast<void*>(p); }

void raise(mlops_status st) {
  if (st == MLOPS_ERR_INVALID_ARGUMENT) throw nb::value_error(mlops_rope_last_error());
  throw std::runtime_error(std::string(mlops_status_string(st)) + ": " + mlops_rope_last_error());
}

// Positional and flat: the cheapest call nanobind parses (eager decode is launch-bound).
// side = (x, out, heads, bs, ss, hs, obs, oss, ohs) for q then k.
void run(bool device, uintptr_t stream, int64_t batch, int64_t seq, int64_t head_dim, int64_t rotary_dim, int layout,
         int dtype, uintptr_t qx, uintptr_t qo, int64_t qh, int64_t qbs, int64_t qss, int64_t qhs, int64_t qobs,
         int64_t qoss, int64_t qohs, uintptr_t kx, uintptr_t ko, int64_t kh, int64_t kbs, int64_t kss, int64_t khs,
         int64_t kobs, int64_t koss, int64_t kohs, int pos_dtype, uintptr_t positions, int64_t pos_row_stride,
         int s0, int s1, int s2, uintptr_t cache, int64_t max_positions, uintptr_t inv_freq, float scaling,
         uintptr_t flag, int tokens_per_cta, int heads_per_cta, int variant) {
  mlops_rope_args a{};
  a.batch = batch; a.seq = seq; a.head_dim = head_dim; a.rotary_dim = rotary_dim;
  a.layout = mlops_rope_layout(layout); a.dtype = mlops_dtype(dtype);
  a.q = mlops_rope_tensor{ptr(qx), ptr(qo), qh, qbs, qss, qhs, qobs, qoss, qohs};
  a.k = mlops_rope_tensor{ptr(kx), ptr(ko), kh, kbs, kss, khs, kobs, koss, kohs};
  a.pos_dtype = mlops_dtype(pos_dtype); a.positions = ptr(positions); a.pos_row_stride = pos_row_stride;
  a.mrope_section[0] = s0; a.mrope_section[1] = s1; a.mrope_section[2] = s2;
  a.cos_sin_cache = static_cast<const float*>(ptr(cache)); a.max_positions = max_positions;
  a.inv_freq = static_cast<const float*>(ptr(inv_freq)); a.attention_scaling = scaling;
  a.out_of_range = static_cast<int32_t*>(ptr(flag));
  a.tokens_per_cta = tokens_per_cta;
  a.heads_per_cta = heads_per_cta;
  a.variant = variant;
  mlops_status st = device ? mlops_rope(&a, ptr(stream)) : mlops_rope_host(&a);
  if (st != MLOPS_OK) raise(st);
}

// The eager fast path of the common call (apply_rope's _fast): CUDA, [T, H, D] q and k (strided
// views of a fused qkv are fine), one position row, no split nor variant. 24 arguments instead of
// run's 39 (nanobind converts each), out-of-place outputs contiguous (their strides follow from H
// and D), and the device check here instead of torch.cuda.current_device() in Python. Returns
// false without launching when q's device is not the current one (the general path switches).
bool run_fast(int device, uintptr_t stream, int64_t tokens, int64_t head_dim, int64_t rotary_dim, int layout,
              int dtype, uintptr_t qx, uintptr_t qo, int64_t qh, int64_t qss, int64_t qhs, uintptr_t kx, uintptr_t ko,
              int64_t kh, int64_t kss, int64_t khs, int pos_dtype, uintptr_t positions, uintptr_t cache,
              int64_t max_positions, uintptr_t inv_freq, float scaling, uintptr_t flag) {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device) {
    cudaGetLastError();
    return false;
  }
  mlops_rope_args a{};
  a.batch = 1; a.seq = tokens; a.head_dim = head_dim; a.rotary_dim = rotary_dim;
  a.layout = mlops_rope_layout(layout); a.dtype = mlops_dtype(dtype);
  // qo / ko = 0: in place; else a contiguous [T, H, D] output
  a.q = qo ? mlops_rope_tensor{ptr(qx), ptr(qo), qh, 0, qss, qhs, 0, qh * head_dim, head_dim}
           : mlops_rope_tensor{ptr(qx), ptr(qx), qh, 0, qss, qhs, 0, qss, qhs};
  a.k = ko ? mlops_rope_tensor{ptr(kx), ptr(ko), kh, 0, kss, khs, 0, kh * head_dim, head_dim}
           : mlops_rope_tensor{ptr(kx), ptr(kx), kh, 0, kss, khs, 0, kss, khs};
  a.pos_dtype = mlops_dtype(pos_dtype); a.positions = ptr(positions);
  a.cos_sin_cache = static_cast<const float*>(ptr(cache)); a.max_positions = max_positions;
  a.inv_freq = static_cast<const float*>(ptr(inv_freq)); a.attention_scaling = scaling;
  a.out_of_range = static_cast<int32_t*>(ptr(flag));
  mlops_status st = mlops_rope(&a, ptr(stream));
  if (st != MLOPS_OK) raise(st);
  return true;
}

void cache(bool device, uintptr_t stream, uintptr_t inv_freq, int64_t half, float scaling, int64_t max_positions,
           uintptr_t out) {
  const float* f = static_cast<const float*>(ptr(inv_freq));
  float* o = static_cast<float*>(ptr(out));
  mlops_status st = device ? mlops_rope_cache(f, half, scaling, max_positions, o, ptr(stream))
                           : mlops_rope_cache_host(f, half, scaling, max_positions, o);
  if (st != MLOPS_OK) raise(st);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "mlops-positional native module (C API bindings)";
  m.def("run", &run);
  m.def("run_fast", &run_fast);
  m.def("cache", &cache);
  m.def("plan", [](int64_t tokens, int64_t heads, int64_t rotary_dim, int sms, int variant, bool on_the_fly) {
    int tpc = 0, hpc = 0, used = 0;
    mlops_rope_plan_path(variant, on_the_fly, tokens, heads, rotary_dim, sms, &tpc, &hpc, &used);
    return nb::make_tuple(tpc, hpc, used);
  }, nb::arg("tokens"), nb::arg("heads"), nb::arg("rotary_dim"), nb::arg("sms"), nb::arg("variant") = 0,
     nb::arg("on_the_fly") = false);
  m.def("variants", [] {
    mlops_rope_variant v[32];
    const int n = mlops_rope_variants(v, 32);
    nb::list out;
    for (int i = 0; i < n && i < 16; ++i) {
      nb::dict d;
      d["id"] = v[i].id;
      d["name"] = v[i].name;
      d["items_per_thread"] = v[i].items_per_thread;
      d["early"] = bool(v[i].early);
      d["pipe"] = bool(v[i].pipe);
      out.append(d);
    }
    return out;
  });
}
