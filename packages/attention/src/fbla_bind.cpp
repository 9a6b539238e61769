// Python bindings of the C API. No PyTorch header: tensors cross as data pointers with strides
// (the Python layer reads them off torch), the stream as an integer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <string>

#include "fbla_math.h"
#include "mlops/fbla.h"

namespace nb = nanobind;

namespace {

template <typename T>
T* ptr(uintptr_t p) { return reinterpret_cast<T*>(p); }

void raise(mlops_status st) {
  if (st == MLOPS_ERR_INVALID_ARGUMENT) throw nb::value_error(mlops_fbla_last_error());
  throw std::runtime_error(std::string(mlops_status_string(st)) + ": " + mlops_fbla_last_error());
}

// cache = (batch, kv_heads, capacity, head_dim, mode, slots, record_bytes,
//          records, sink_k, sink_v, tail_k, tail_v, lengths, flags)
mlops_fbla_cache cache_of(const nb::tuple& t) {
  mlops_fbla_cache c{};
  c.batch = nb::cast<int32_t>(t[0]);
  c.kv_heads = nb::cast<int32_t>(t[1]);
  c.capacity = nb::cast<int32_t>(t[2]);
  c.head_dim = nb::cast<int32_t>(t[3]);
  c.mode = mlops_fbla_mode(nb::cast<int>(t[4]));
  c.slots = nb::cast<int32_t>(t[5]);
  c.record_bytes = nb::cast<int64_t>(t[6]);
  c.records = ptr<uint8_t>(nb::cast<uintptr_t>(t[7]));
  c.sink_k = ptr<uint16_t>(nb::cast<uintptr_t>(t[8]));
  c.sink_v = ptr<uint16_t>(nb::cast<uintptr_t>(t[9]));
  c.tail_k = ptr<uint16_t>(nb::cast<uintptr_t>(t[10]));
  c.tail_v = ptr<uint16_t>(nb::cast<uintptr_t>(t[11]));
  c.lengths = ptr<int32_t>(nb::cast<uintptr_t>(t[12]));
  c.flags = ptr<int32_t>(nb::cast<uintptr_t>(t[13]));
  return c;
}

void append(bool device, uintptr_t stream, const nb::tuple& cache, uintptr_t k, int64_t kbs, int64_t khs, int64_t kts,
            uintptr_t v, int64_t vbs, int64_t vhs, int64_t vts, uintptr_t counts, int32_t count, int32_t max_count) {
  const mlops_fbla_cache c = cache_of(cache);
  mlops_fbla_kv kv{};
  kv.k = ptr<const uint16_t>(k);
  kv.v = ptr<const uint16_t>(v);
  kv.batch_stride = kbs; kv.head_stride = khs; kv.token_stride = kts;
  kv.v_batch_stride = vbs; kv.v_head_stride = vhs; kv.v_token_stride = vts;
  kv.counts = ptr<const int32_t>(counts);
  kv.count = count;
  kv.max_count = max_count;
  mlops_status st = device ? mlops_fbla_append(&c, &kv, ptr<void>(stream)) : mlops_fbla_append_host(&c, &kv);
  if (st != MLOPS_OK) raise(st);
}

void decode(bool device, uintptr_t stream, const nb::tuple& cache, uintptr_t q, int64_t qbs, int64_t qhs, int32_t q_heads,
            uintptr_t out, int out_dtype, float scale, int exact, float gap, int ctas, uintptr_t scratch,
            size_t scratch_bytes, int variant, int pv) {
  const mlops_fbla_cache c = cache_of(cache);
  mlops_fbla_decode_args a{};
  a.q = ptr<const uint16_t>(q);
  a.q_batch_stride = qbs;
  a.q_head_stride = qhs;
  a.q_heads = q_heads;
  a.out = ptr<void>(out);
  a.out_dtype = mlops_dtype(out_dtype);
  a.scale = scale;
  a.exact = exact;
  a.gap = gap;
  a.ctas = ctas;
  a.variant = variant;
  a.pv = pv;
  mlops_status st = device ? mlops_fbla_decode(&c, &a, ptr<void>(scratch), scratch_bytes, ptr<void>(stream))
                           : mlops_fbla_decode_host(&c, &a, ptr<void>(scratch), scratch_bytes);
  if (st != MLOPS_OK) raise(st);
}

size_t scratch_bytes(const nb::tuple& cache, int32_t q_heads) {
  const mlops_fbla_cache c = cache_of(cache);
  return mlops_fbla_decode_scratch_bytes(&c, q_heads);
}

nb::dict record_layout(int head_dim, int mode) {
  if ((head_dim != 64 && head_dim != 128) || (mode != 0 && mode != 1))
    throw nb::value_error("head_dim: expected 64 or 128 and mode 0 (3+3) or 1 (4+2)");
  const mlops::fbla::Layout l = mlops::fbla::layout(head_dim, mode);
  nb::dict d;
  d["k_min"] = l.kmin; d["k_scale"] = l.kscale; d["v_min"] = l.vmin; d["v_scale"] = l.vscale;
  d["k_coarse"] = l.kc; d["k_fine"] = l.kf; d["v_codes"] = l.v; d["bytes"] = l.bytes;
  d["coarse_bits"] = l.cb; d["fine_bits"] = l.fb;
  return d;
}

// offsetof / sizeof of the C structs, so a test checks them against the documented layout.
nb::dict struct_layout() {
  nb::dict d;
#define F(s, f) d[#s "." #f] = nb::make_tuple(offsetof(s, f), sizeof(static_cast<s*>(nullptr)->f))
  F(mlops_fbla_cache, batch); F(mlops_fbla_cache, kv_heads); F(mlops_fbla_cache, capacity);
  F(mlops_fbla_cache, head_dim); F(mlops_fbla_cache, mode); F(mlops_fbla_cache, slots);
  F(mlops_fbla_cache, record_bytes); F(mlops_fbla_cache, records); F(mlops_fbla_cache, sink_k);
  F(mlops_fbla_cache, sink_v); F(mlops_fbla_cache, tail_k); F(mlops_fbla_cache, tail_v);
  F(mlops_fbla_cache, lengths); F(mlops_fbla_cache, flags);
#undef F
  d["sizeof(mlops_fbla_cache)"] = sizeof(mlops_fbla_cache);
  d["MLOPS_FBLA_GROUP"] = MLOPS_FBLA_GROUP;
  d["MLOPS_FBLA_BLOCK"] = MLOPS_FBLA_BLOCK;
  d["MLOPS_FBLA_RECORD_VERSION"] = MLOPS_FBLA_RECORD_VERSION;
  d["MLOPS_FBLA_CHUNK_GROUPS"] = MLOPS_FBLA_CHUNK_GROUPS;
  return d;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "mlops-attention native module (C API bindings)";
  m.def("append", &append);
  m.def("decode", &decode);
  m.def("scratch_bytes", &scratch_bytes);
  m.def("decode_variants", [] {
    nb::list out;
    mlops_fbla_decode_variant v[16];
    const int n = mlops_fbla_decode_variants(v, 16);
    for (int i = 0; i < n && i < 16; ++i) {
      nb::dict d;
      d["index"] = i;
      d["name"] = v[i].name;
      d["min_sm"] = v[i].min_sm;
      d["pv"] = v[i].pv == MLOPS_FBLA_PV_DIGITS ? "digits" : "chains";
      d["planner"] = i == mlops_fbla_decode_planner_variant_for(v[i].pv);  // the planner's pick for its form
      out.append(d);
    }
    return out;
  });
  m.def("record_bytes", [](int head_dim) { return mlops_fbla_record_bytes(head_dim); });
  m.def("record_layout", &record_layout);
  m.def("struct_layout", &struct_layout);
}
