// Python bindings of the C API. No PyTorch header: tensors cross as data pointers (the
// Python layer reads them off torch), the stream as an integer. Table rows cross as one list
// per field, the fastest form nanobind converts for 10,000 tensors.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <vector>

#include "mlops/optimizers.h"

namespace nb = nanobind;

namespace {

template <class T = void>
T* ptr(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

void check(mlops_status st) {
  if (st == MLOPS_OK) return;
  if (st == MLOPS_ERR_INVALID_ARGUMENT) throw nb::value_error(mlops_optim_last_error());
  throw std::runtime_error(std::string(mlops_status_string(st)) + ": " + mlops_optim_last_error());
}

using U = std::vector<uintptr_t>;

std::vector<mlops_optim_tensor> rows(int dtype, const U& param, const U& grad, const U& s1, const U& s2, const U& s3,
                                     const U& master, const U& am1, const U& am2, const U& step,
                                     const std::vector<int64_t>& numel, const std::vector<uint32_t>& id) {
  const size_t n = param.size();
  for (const U* v : {&grad, &s1, &s2, &s3, &master, &am1, &am2, &step})
    if (v->size() != n) throw nb::value_error("table: every field needs one entry a tensor");
  if (numel.size() != n || id.size() != n) throw nb::value_error("table: every field needs one entry a tensor");
  std::vector<mlops_optim_tensor> r(n);
  for (size_t i = 0; i < n; ++i) {
    mlops_optim_tensor& t = r[i];
    t.param = ptr(param[i]);
    t.grad = ptr(grad[i]);
    t.state1 = ptr(s1[i]);
    t.state2 = ptr(s2[i]);
    t.state3 = ptr<float>(s3[i]);
    t.master = ptr<float>(master[i]);
    t.absmax1 = ptr<float>(am1[i]);
    t.absmax2 = ptr<float>(am2[i]);
    t.step = ptr<float>(step[i]);
    t.numel = numel[i];
    t.first_chunk = 0;
    t.id = id[i];
    t.dtype = dtype;
    t.flags = 0;
    t.reserved = 0;
  }
  return r;
}

// (bytes, chunks) of the table of tensors with these sizes.
nb::tuple table_size(const std::vector<int64_t>& numel) {
  std::vector<mlops_optim_tensor> r(numel.size());
  for (size_t i = 0; i < numel.size(); ++i) r[i].numel = numel[i];
  int64_t chunks = 0;
  const int64_t bytes = mlops_optim_table_bytes(r.data(), int64_t(r.size()), &chunks);
  return nb::make_tuple(bytes, chunks);
}

int64_t build_table(uintptr_t out, int64_t out_bytes, int dtype, const U& param, const U& grad, const U& s1,
                    const U& s2, const U& s3, const U& master, const U& am1, const U& am2, const U& step,
                    const std::vector<int64_t>& numel, const std::vector<uint32_t>& id) {
  auto r = rows(dtype, param, grad, s1, s2, s3, master, am1, am2, step, numel, id);
  int64_t chunks = 0;
  check(mlops_optim_table_build(r.data(), int64_t(r.size()), ptr(out), out_bytes, &chunks));
  return chunks;
}

void step(bool device, uintptr_t stream, int algo, int dtype, bool decoupled, bool amsgrad, bool maximize,
          bool nesterov, bool q8, bool sr, uint32_t seed, double lr, uintptr_t lr_device, double beta1, double beta2,
          double eps, double weight_decay, uintptr_t grad_scale, uintptr_t found_inf, uintptr_t clip_coef,
          uintptr_t qmap1, uintptr_t qmap2, uintptr_t table, int64_t num_tensors, int64_t num_chunks, int variant) {
  mlops_optim_args a{};
  a.algo = mlops_optim_algo(algo);
  a.dtype = mlops_dtype(dtype);
  a.decoupled = decoupled;
  a.amsgrad = amsgrad;
  a.maximize = maximize;
  a.nesterov = nesterov;
  a.state_8bit = q8;
  a.stochastic_rounding = sr;
  a.seed = seed;
  a.lr = lr;
  a.lr_device = ptr<const float>(lr_device);
  a.beta1 = beta1;
  a.beta2 = beta2;
  a.eps = eps;
  a.weight_decay = weight_decay;
  a.grad_scale = ptr<const float>(grad_scale);
  a.found_inf = ptr<const float>(found_inf);
  a.clip_coef = ptr<const float>(clip_coef);
  a.qmap1 = ptr<const float>(qmap1);
  a.qmap2 = ptr<const float>(qmap2);
  a.table = ptr<const void>(table);
  a.num_tensors = num_tensors;
  a.num_chunks = num_chunks;
  a.variant = variant;
  check(device ? mlops_optim_step(&a, ptr(stream)) : mlops_optim_step_host(&a));
}

void norm_partials(bool device, uintptr_t stream, uintptr_t table, int64_t num_tensors, int64_t num_chunks,
                   uintptr_t partials, int64_t offset) {
  check(device ? mlops_optim_grad_norm_partials(ptr(table), num_tensors, num_chunks, ptr<float>(partials), offset,
                                                ptr(stream))
               : mlops_optim_grad_norm_partials_host(ptr(table), num_tensors, num_chunks, ptr<float>(partials),
                                                     offset));
}

void norm_finalize(bool device, uintptr_t stream, uintptr_t partials, int64_t total, double max_norm,
                   uintptr_t grad_scale, uintptr_t norm, uintptr_t coef) {
  check(device ? mlops_optim_grad_norm_finalize(ptr<const float>(partials), total, max_norm,
                                                ptr<const float>(grad_scale), ptr<float>(norm), ptr<float>(coef),
                                                ptr(stream))
               : mlops_optim_grad_norm_finalize_host(ptr<const float>(partials), total, max_norm,
                                                     ptr<const float>(grad_scale), ptr<float>(norm), ptr<float>(coef)));
}

std::vector<float> dynamic_map(bool is_signed) {
  std::vector<float> v(256);
  mlops_optim_dynamic_map(is_signed ? 1 : 0, v.data());
  return v;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "mlops-optimizers native module (C API bindings)";
  m.attr("CHUNK") = MLOPS_OPTIM_CHUNK;
  m.attr("QBLOCK") = MLOPS_OPTIM_QBLOCK;
  m.def("table_size", &table_size);
  m.def("build_table", &build_table);
  m.def("step", &step);
  m.def("norm_partials", &norm_partials);
  m.def("norm_finalize", &norm_finalize);
  m.def("dynamic_map", &dynamic_map);
  m.def("plan", &mlops_optim_plan);
  m.attr("VARIANTS") = nb::make_tuple("occ3", "occ2");
}
