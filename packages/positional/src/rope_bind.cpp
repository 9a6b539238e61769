// Python bindings of the C API. No PyTorch header: tensors cross as data pointers with
// strides (the Python layer reads them off torch), the stream as an integer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

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
  m.def("cache", &cache);
  m.def("plan", [](int64_t tokens, int64_t heads, int64_t rotary_dim, int sms, int variant) {
    int tpc = 0, hpc = 0, used = 0;
    mlops_rope_plan_variant(variant, tokens, heads, rotary_dim, sms, &tpc, &hpc, &used);
    return nb::make_tuple(tpc, hpc, used);
  }, nb::arg("tokens"), nb::arg("heads"), nb::arg("rotary_dim"), nb::arg("sms"), nb::arg("variant") = 0);
  m.def("variants", [] {
    mlops_rope_variant v[16];
    const int n = mlops_rope_variants(v, 16);
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
