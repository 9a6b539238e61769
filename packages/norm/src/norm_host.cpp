// Host emulation of the norm kernels: the same element arithmetic (norm_math.h) in the
// same order (units of 256, lanes of 8, the warp butterfly, groups folded in unit order),
// so mlops_norm_host gives the bits mlops_norm gives on any GPU. Slow by design: it is the
// reference, and the CPU path of the Python API.
#include <algorithm>
#include <vector>

#include "norm_dispatch.h"
#include "norm_math.h"

namespace mlops::norm {
namespace {

template <class T>
const T* crow(const void* base, int64_t row, int64_t stride) {
  return static_cast<const T*>(base) + row * stride;
}

template <class T>
float ld(const T* row, int64_t i, int64_t n) {
  return i < n ? Elem<T>::load(row[i]) : 0.0f;
}

// Sum over a unit as the warp does it: lanes fold 8 values in order, then the butterfly.
template <class F>
float unit_value(const float* vals /* 256, zero-padded */, F lane_fold) {
  float lanes[32];
  for (int l = 0; l < 32; ++l) lanes[l] = lane_fold(vals + 8 * l);
  return host_butterfly32(lanes);
}

template <class XT, class WT>
void norm_row(const Params& p, int64_t row) {
  const int64_t H = p.hidden;
  const int U = p.units;
  std::vector<float> v(size_t(U) * kUnit, 0.0f);
  // Step 1: x (+ residual) (* silu(gate) before the norm).
  {
    const XT* x = crow<XT>(p.x, row, p.x_stride);
    for (int64_t i = 0; i < H; ++i) v[i] = Elem<XT>::load(x[i]);
    if (p.residual) {
      const XT* r = crow<XT>(p.residual, row, p.residual_stride);
      XT* ro = static_cast<XT*>(p.residual_out) + row * p.residual_out_stride;
      for (int64_t i = 0; i < H; ++i) {
        v[i] = Elem<XT>::round(v[i] + Elem<XT>::load(r[i]));
        ro[i] = Elem<XT>::store(v[i]);
      }
    }
    if (p.gate_mode == MLOPS_GATE_BEFORE) {
      const XT* z = crow<XT>(p.gate, row, p.gate_stride);
      for (int64_t i = 0; i < H; ++i) v[i] = gate_before(v[i], Elem<XT>::load(z[i]));
    }
  }
  const bool is_layer = p.kind == MLOPS_NORM_LAYER;
  std::vector<float> units(U), mean(p.groups, 0.0f), r(p.groups);
  auto fold = [&](std::vector<float>& out, auto finish) {
    for (int g = 0; g < p.groups; ++g) {
      float s = 0.0f;
      for (int k = 0; k < p.units_per_group; ++k) s = s + units[g * p.units_per_group + k];
      out[g] = finish(s);
    }
  };
  for (int u = 0; u < U; ++u)
    units[u] = unit_value(&v[size_t(u) * kUnit], is_layer ? lane_sum8 : lane_sumsq8);
  if (is_layer) {
    fold(mean, [&](float s) { return s / float(p.group); });
    std::vector<float> d(kUnit);
    for (int u = 0; u < U; ++u) {
      const float m = mean[u / p.units_per_group];
      for (int i = 0; i < kUnit; ++i) {
        const int64_t c = int64_t(u) * kUnit + i;
        d[i] = c < H ? v[c] - m : 0.0f;
      }
      units[u] = unit_value(d.data(), lane_sumsq8);
    }
  }
  fold(r, [&](float s) { return rms_r(s, p.group, p.eps); });

  // Step 3: y, then the quantized output from y.
  std::vector<float> y(size_t(U) * kUnit, 0.0f);
  const XT* z = p.gate_mode == MLOPS_GATE_AFTER ? crow<XT>(p.gate, row, p.gate_stride) : nullptr;
  for (int64_t i = 0; i < H; ++i) {
    const int g = int(i / p.group);
    const float n = is_layer ? (v[i] - mean[g]) * r[g] : v[i] * r[g];
    const float w = p.weight ? Elem<WT>::load(static_cast<const WT*>(p.weight)[i]) : 0.0f;
    const float b = p.bias ? Elem<WT>::load(static_cast<const WT*>(p.bias)[i]) : 0.0f;
    y[i] = epilogue<XT>(p, n, w, b, z ? Elem<XT>::load(z[i]) : 0.0f);
  }
  if (p.y) {
    XT* out = static_cast<XT*>(p.y) + row * p.y_stride;
    for (int64_t i = 0; i < H; ++i) out[i] = Elem<XT>::store(y[i]);
  }
  if (p.quant == MLOPS_QUANT_NONE) return;
  uint8_t* q = static_cast<uint8_t*>(p.q) + row * p.q_stride;
  if (p.quant == MLOPS_QUANT_FP8_STATIC || p.quant == MLOPS_QUANT_FP8_DYNAMIC) {
    float inv;
    if (p.quant == MLOPS_QUANT_FP8_STATIC) {
      inv = 1.0f / *p.quant_scale;
    } else {
      float amax = 0.0f;
      for (int64_t i = 0; i < H; ++i) amax = std::max(amax, std::fabs(y[i]));
      inv = fp8_row_inv(amax);
      (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[0] = fp8_row_scale(amax);
    }
    for (int64_t i = 0; i < H; ++i) q[i] = fp8_code(y[i], inv);
    return;
  }
  for (int64_t b0 = 0; b0 < H; b0 += 16) {
    float amax = 0.0f;
    for (int64_t i = b0; i < b0 + 16; ++i) amax = std::max(amax, std::fabs(y[i]));  // padded with 0
    if (p.quant == MLOPS_QUANT_INT8) {
      const float s = int8_scale(amax), inv = int8_inv(amax);
      for (int64_t i = b0; i < std::min(b0 + 16, H); ++i) q[i] = uint8_t(int8_code(y[i], inv));
      (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[b0 / 16] = s;
    } else {
      const Nvfp4Block blk = nvfp4_block(amax, p.quant_scale);
      for (int64_t i = b0; i < std::min(b0 + 16, H); i += 2)
        q[i / 2] = uint8_t(nvfp4_code(y[i], blk.mul) | (nvfp4_code(y[i + 1], blk.mul) << 4));
      (static_cast<uint8_t*>(p.q_scale) + row * p.q_scale_stride)[b0 / 16] = blk.scale_code;
    }
  }
}

template <class XT, class WT>
void norm_rows(const Params& p) {
  for (int64_t row = 0; row < p.rows; ++row) norm_row<XT, WT>(p, row);
}

}  // namespace

void run_host(const Params& p, mlops_dtype xt, mlops_dtype wt) {
  dispatch_types(xt, wt, [&](auto xtag, auto wtag) {
    norm_rows<typename decltype(xtag)::type, typename decltype(wtag)::type>(p);
  });
}

}  // namespace mlops::norm
