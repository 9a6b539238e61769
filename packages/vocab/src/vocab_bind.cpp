// Python bindings of the C API. No PyTorch header: tensors cross as data pointers with sizes
// and strides (the Python layer reads them off torch), the stream as an integer.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

#include "mlops/vocab.h"

namespace nb = nanobind;

namespace {

template <class T = void>
T* ptr(uintptr_t p) { return reinterpret_cast<T*>(p); }

void raise(mlops_status st) {
  if (st == MLOPS_ERR_INVALID_ARGUMENT) throw nb::value_error(mlops_vocab_last_error());
  if (st != MLOPS_OK) throw std::runtime_error(std::string(mlops_status_string(st)) + ": " + mlops_vocab_last_error());
}

// Positional and flat: the cheapest call nanobind parses.
void embed(bool device, uintptr_t stream, int64_t tokens, int64_t hidden, int64_t vocab, int id_dtype, uintptr_t ids,
           int table_dtype, uintptr_t table, int64_t table_stride, uintptr_t out, int64_t out_stride, int w_dtype,
           uintptr_t norm_weight, uintptr_t xw, int64_t xw_stride, uintptr_t unit_sumsq, int64_t unit_sumsq_stride,
           uintptr_t rms_r, float eps, uintptr_t oov_flag, int variant) {
  mlops_embed_args a{};
  a.tokens = tokens; a.hidden = hidden; a.vocab = vocab;
  a.id_dtype = mlops_dtype(id_dtype); a.ids = ptr(ids);
  a.table_dtype = mlops_dtype(table_dtype); a.table = ptr(table); a.table_stride = table_stride;
  a.out = ptr<float>(out); a.out_stride = out_stride;
  a.norm_weight_dtype = mlops_dtype(w_dtype); a.norm_weight = ptr(norm_weight);
  a.xw = ptr<uint16_t>(xw); a.xw_stride = xw_stride;
  a.unit_sumsq = ptr<float>(unit_sumsq); a.unit_sumsq_stride = unit_sumsq_stride;
  a.rms_r = ptr<float>(rms_r); a.eps = eps;
  a.oov_flag = ptr<int32_t>(oov_flag);
  a.variant = variant;
  raise(device ? mlops_embed(&a, ptr(stream)) : mlops_embed_host(&a));
}

void lm_head(bool device, uintptr_t stream, int64_t tokens, int64_t hidden, int64_t vocab, uintptr_t x, int64_t x_stride,
             uintptr_t weight, int64_t weight_stride, uintptr_t logits, int64_t logits_stride, uintptr_t row_scale,
             float logit_scale, uintptr_t best, uintptr_t key_hist, int variant) {
  mlops_lm_head_args a{};
  a.tokens = tokens; a.hidden = hidden; a.vocab = vocab;
  a.x = ptr<const uint16_t>(x); a.x_stride = x_stride;
  a.weight = ptr<const uint16_t>(weight); a.weight_stride = weight_stride;
  a.logits = ptr<float>(logits); a.logits_stride = logits_stride;
  a.row_scale = ptr<const float>(row_scale); a.logit_scale = logit_scale;
  a.best = ptr<uint64_t>(best); a.key_hist = ptr<uint32_t>(key_hist);
  a.variant = variant;
  raise(device ? mlops_lm_head(&a, ptr(stream)) : mlops_lm_head_host(&a));
}

void sample(bool device, uintptr_t stream, int64_t rows, int64_t vocab, uintptr_t logits, int64_t logits_stride,
            uintptr_t configs, uintptr_t seeds, uintptr_t steps, uintptr_t history, int64_t history_stride,
            uintptr_t history_len, uintptr_t penalty_counts, uintptr_t tokens, uintptr_t logprobs, uintptr_t flags,
            uintptr_t stats_best, uintptr_t stats_key_hist, uintptr_t workspace, int variant) {
  mlops_sample_args a{};
  a.rows = rows; a.vocab = vocab;
  a.logits = ptr<float>(logits); a.logits_stride = logits_stride;
  a.configs = ptr<const mlops_sample_config>(configs);
  a.seeds = ptr<const uint64_t>(seeds); a.steps = ptr<int64_t>(steps);
  a.history = ptr<const int32_t>(history); a.history_stride = history_stride;
  a.history_len = ptr<const int32_t>(history_len);
  a.penalty_counts = ptr<int32_t>(penalty_counts);
  a.tokens = ptr<int32_t>(tokens); a.logprobs = ptr<float>(logprobs); a.flags = ptr<int32_t>(flags);
  a.stats_best = ptr<const uint64_t>(stats_best); a.stats_key_hist = ptr<const uint32_t>(stats_key_hist);
  a.workspace = ptr(workspace);
  a.variant = variant;
  raise(device ? mlops_sample(&a, ptr(stream)) : mlops_sample_host(&a));
}

// Configurations as seen on the host (the Python layer packs them): validated here, named errors.
void check_configs(uintptr_t configs, int64_t rows) {
  raise(mlops_sample_check_configs(ptr<const mlops_sample_config>(configs), rows));
}

uint64_t row_weights(uintptr_t logits, int64_t vocab, uintptr_t config, uintptr_t weights) {
  return mlops_sample_row_weights_host(ptr<const float>(logits), vocab, ptr<const mlops_sample_config>(config),
                                       ptr<uint32_t>(weights));
}

nb::list embed_variants() {
  mlops_embed_variant v[16];
  const int n = mlops_embed_variants(v, 16);
  nb::list out;
  for (int i = 0; i < n && i < 16; ++i) {
    nb::dict d;
    d["index"] = v[i].index;
    d["name"] = v[i].name;
    d["warps_per_token"] = v[i].warps_per_token;
    out.append(d);
  }
  return out;
}

nb::list lm_head_variants() {
  mlops_lm_head_variant v[32];
  const int n = mlops_lm_head_variants(v, 32);
  nb::list out;
  for (int i = 0; i < n && i < 32; ++i) {
    nb::dict d;
    d["index"] = v[i].index;
    d["name"] = v[i].name;
    d["kind"] = v[i].kind == MLOPS_LM_HEAD_CUDA_CORE ? "cuda_core"
                : v[i].kind == MLOPS_LM_HEAD_MMA_BF16_K16 ? "mma_m16n8k16_bf16"
                : v[i].kind == MLOPS_LM_HEAD_MMA_F16_K8   ? "mma_m16n8k8_f16"
                : v[i].kind == MLOPS_LM_HEAD_MMA_F16_K4   ? "mma_m8n8k4_f16"
                                                          : "mma_m16n8k16_bf16_pipe";
    d["min_sm"] = v[i].min_sm;
    d["ctas_per_sm"] = v[i].ctas_per_sm;
    d["bitwise_host"] = v[i].kind == MLOPS_LM_HEAD_CUDA_CORE;
    out.append(d);
  }
  return out;
}

nb::list sample_variants() {
  mlops_sample_variant v[32];
  const int n = mlops_sample_variants(v, 32);
  nb::list out;
  for (int i = 0; i < n && i < 32; ++i) {
    nb::dict d;
    d["index"] = v[i].index;
    d["name"] = v[i].name;
    d["threads"] = v[i].threads;
    d["split"] = bool(v[i].split);
    d["cluster"] = v[i].cluster;
    out.append(d);
  }
  return out;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "mlops-vocab native module (C API bindings)";
  m.def("embed", &embed);
  m.def("lm_head", &lm_head);
  m.def("sample", &sample);
  m.def("check_configs", &check_configs);
  m.def("row_weights", &row_weights);
  m.def("embed_variants", &embed_variants);
  m.def("lm_head_variants", &lm_head_variants);
  m.def("lm_head_decode_best", [](uintptr_t stream, uintptr_t best, int64_t rows, uintptr_t mx, uintptr_t am) {
    raise(mlops_lm_head_decode_best(ptr<const uint64_t>(best), rows, ptr<float>(mx), ptr<int64_t>(am), ptr(stream)));
  });
  m.def("sample_variants", &sample_variants);
  m.def("embed_plan", &mlops_embed_plan);
  m.def("lm_head_plan", &mlops_lm_head_plan);
  m.def("lm_head_variant_runs", &mlops_lm_head_variant_runs);
  m.def("sample_plan", &mlops_sample_plan);
  m.def("sample_plan_configs", [](int64_t rows, int64_t vocab, int sm, int sms, uintptr_t configs, bool has_stats,
                                  bool has_history) {
    return mlops_sample_plan_configs(rows, vocab, sm, sms, ptr<const mlops_sample_config>(configs), has_stats,
                                     has_history);
  });
  m.def("sample_variant_runs", &mlops_sample_variant_runs);
  m.def("sample_variant_runs_as", &mlops_sample_variant_runs_as);
  m.def("sample_workspace_bytes", &mlops_sample_workspace_bytes);
}
