// Host emulation: the kernels' arithmetic (optim_math.h, optim_norm_math.h) over host
// pointers, element by element, in the same order, so it gives the kernels' bits.
#include <vector>

#include "optim_host.h"
#include "optim_norm_math.h"

namespace mlops::optim {
namespace {

template <class PT, int ALGO>
void update_tensor(const mlops_optim_args& a, const mlops_optim_tensor& t) {
  const double lr = a.lr_device ? double(*a.lr_device) : a.lr;
  const float step = *t.step;
  const Scalars s = make_scalars(a, lr, double(step));
  const uint32_t key = sr_key(a.seed, uint32_t(step), t.id);
  const bool q8 = a.state_8bit != 0;
  const bool has_m = ALGO != MLOPS_OPTIM_SGD || a.beta1 != 0.0;
  const bool sr = a.stochastic_rounding != 0 && !t.master;
  const PT* param_in = static_cast<const PT*>(t.param);
  const PT* grad = static_cast<const PT*>(t.grad);
  Elem x[kUnitElems];
  for (int64_t base = 0; base < t.numel; base += kUnitElems) {
    const int cnt = int(t.numel - base < kUnitElems ? t.numel - base : kUnitElems);
    const int64_t blk = base / MLOPS_OPTIM_QBLOCK;
    for (int k = 0; k < cnt; ++k) {
      const int64_t i = base + k;
      Elem& e = x[k];
      e.p = t.master ? t.master[i] : to_f32(param_in[i]);
      e.g = prep_grad(to_f32(grad[i]), a.grad_scale, a.clip_coef, a.maximize != 0);
      e.m = e.v = e.vm = 0.0f;
      if (has_m)
        e.m = q8 ? a.qmap1[static_cast<const uint8_t*>(t.state1)[i]] * t.absmax1[blk]
                 : static_cast<const float*>(t.state1)[i];
      if (ALGO == MLOPS_OPTIM_ADAM) {
        e.v = q8 ? a.qmap2[static_cast<const uint8_t*>(t.state2)[i]] * t.absmax2[blk]
                 : static_cast<const float*>(t.state2)[i];
        if (a.amsgrad) e.vm = t.state3[i];
      }
      update_elem<ALGO>(a, s, e, a.amsgrad != 0);
    }
    float am1 = 0.0f, am2 = 0.0f;
    if (q8) {
      for (int k = 0; k < cnt; ++k) {
        am1 = fabs_max(am1, x[k].m);
        am2 = fabs_max(am2, x[k].v);
      }
      t.absmax1[blk] = am1;
      if (ALGO == MLOPS_OPTIM_ADAM) t.absmax2[blk] = am2;
    }
    const float r1 = qrecip(am1), r2 = qrecip(am2);
    for (int k = 0; k < cnt; ++k) {
      const int64_t i = base + k;
      const Elem& e = x[k];
      from_f32(e.p, static_cast<PT*>(t.param)[i], sr, sr ? sr_bits(key, i) : 0u);
      if (t.master) t.master[i] = e.p;
      if (has_m) {
        if (q8) static_cast<uint8_t*>(t.state1)[i] = quantize_nearest(a.qmap1, qnormalize(e.m, am1, r1));
        else static_cast<float*>(t.state1)[i] = e.m;
      }
      if (ALGO == MLOPS_OPTIM_ADAM) {
        if (q8) static_cast<uint8_t*>(t.state2)[i] = quantize_nearest(a.qmap2, qnormalize(e.v, am2, r2));
        else static_cast<float*>(t.state2)[i] = e.v;
        if (a.amsgrad) t.state3[i] = e.vm;
      }
    }
  }
}

template <class PT>
void update_all(const mlops_optim_args& a) {
  const auto* tab = static_cast<const mlops_optim_tensor*>(a.table);
  for (int64_t i = 0; i < a.num_tensors; ++i) {
    switch (a.algo) {
      case MLOPS_OPTIM_ADAM: update_tensor<PT, MLOPS_OPTIM_ADAM>(a, tab[i]); break;
      case MLOPS_OPTIM_SGD: update_tensor<PT, MLOPS_OPTIM_SGD>(a, tab[i]); break;
      case MLOPS_OPTIM_LION: update_tensor<PT, MLOPS_OPTIM_LION>(a, tab[i]); break;
    }
  }
}

}  // namespace

void step_host(const mlops_optim_args& a) {
  if (a.found_inf && *a.found_inf != 0.0f) return;
  const auto* tab = static_cast<const mlops_optim_tensor*>(a.table);
  for (int64_t i = 0; i < a.num_tensors; ++i) *tab[i].step = *tab[i].step + 1.0f;
  switch (a.dtype) {
    case MLOPS_DTYPE_BF16: update_all<bf16_t>(a); break;
    case MLOPS_DTYPE_FP16: update_all<f16_t>(a); break;
    default: update_all<float>(a); break;
  }
}

void norm_partials_host(const void* table, int64_t num_tensors, int64_t num_chunks, float* partials) {
  const auto* tab = static_cast<const mlops_optim_tensor*>(table);
  const int32_t* chunk_map = chunk_map_of(table, num_tensors);
  for (int64_t c = 0; c < num_chunks; ++c) {
    const mlops_optim_tensor& t = tab[chunk_map[c]];
    const int64_t chunk_start = (c - t.first_chunk) * int64_t(MLOPS_OPTIM_CHUNK);
    float s = 0.0f;
    for (int u = 0; u < kUnitsPerChunk; ++u) {
      const int64_t ubase = chunk_start + int64_t(u) * kUnitElems;
      if (ubase >= t.numel) break;
      float lanes[32];
      for (int l = 0; l < 32; ++l) {
        float v[kLaneElems];
        for (int e = 0; e < kLaneElems; ++e) {
          const int64_t i = ubase + kLaneElems * l + e;
          v[e] = i < t.numel ? grad_to_f32(t.grad, t.dtype, i) : 0.0f;
        }
        lanes[l] = lane_sumsq8(v);
      }
      const float uv = host_butterfly32(lanes);
      s = u == 0 ? uv : s + uv;
    }
    partials[c] = s;
  }
}

void norm_finalize_host(const float* partials, int64_t total, float max_norm, const float* grad_scale, float* norm,
                        float* coef) {
  const int64_t seg = finalize_segment(total);
  float seg_vals[kFinalizeThreads];
  for (int k = 0; k < kFinalizeThreads; ++k) {
    float s = 0.0f;
    for (int64_t i = k * seg; i < (k + 1) * seg && i < total; ++i) s = s + partials[i];
    seg_vals[k] = s;
  }
  float tot = seg_vals[0];
  for (int k = 1; k < kFinalizeThreads; ++k) tot = tot + seg_vals[k];
  finish_norm(tot, max_norm, grad_scale, norm, coef);
}

}  // namespace mlops::optim
