// The norm kernel family. One CTA is 256 threads (8 warps); WARPS warps share a row, so a
// CTA holds 8 / WARPS rows. A row's units of 256 elements go round-robin to its warps; a
// warp keeps its first kCap units in registers and re-reads the rest (rows longer than
// WARPS * kCap units), which costs bandwidth but never changes a bit: every value is
// recomputed by the same code. Sums follow mlops/common/fixed_sum.h.
#pragma once
#include <cuda_runtime.h>
#include <type_traits>
#include "norm_math.h"

namespace mlops::norm {

constexpr int kCtaThreads = 256;

// ---- 8 consecutive elements of a lane -----------------------------------------------------
template <class T>
__device__ __forceinline__ void load8(const T* row, int col0, int64_t n, bool vec, float out[8]) {
  if (vec && col0 + 8 <= n) {
    if constexpr (sizeof(T) == 2) {
      uint4 r = *reinterpret_cast<const uint4*>(row + col0);
      const uint16_t* h = reinterpret_cast<const uint16_t*>(&r);
#pragma unroll
      for (int i = 0; i < 8; ++i) out[i] = Elem<T>::load(T{h[i]});
    } else {
      float4 a = *reinterpret_cast<const float4*>(row + col0);
      float4 b = *reinterpret_cast<const float4*>(row + col0 + 4);
      out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
      out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = (col0 + i < n) ? Elem<T>::load(row[col0 + i]) : 0.0f;
  }
}

template <class T>
__device__ __forceinline__ void store8(T* row, int col0, int64_t n, bool vec, const float v[8]) {
  if (vec && col0 + 8 <= n) {
    if constexpr (sizeof(T) == 2) {
      uint4 r;
      uint32_t* w = reinterpret_cast<uint32_t*>(&r);
      if constexpr (std::is_same_v<T, bf16>) {
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = f32x2_to_bf16x2(v[2 * i], v[2 * i + 1]);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          w[i] = uint32_t(f32_to_f16(v[2 * i])) | (uint32_t(f32_to_f16(v[2 * i + 1])) << 16);
      }
      *reinterpret_cast<uint4*>(row + col0) = r;
    } else {
      *reinterpret_cast<float4*>(row + col0) = make_float4(v[0], v[1], v[2], v[3]);
      *reinterpret_cast<float4*>(row + col0 + 4) = make_float4(v[4], v[5], v[6], v[7]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (col0 + i < n) row[col0 + i] = Elem<T>::store(v[i]);
  }
}

// A lane's 8 raw elements, loaded now and converted later: issuing every unit's loads before
// the first use keeps several 16-byte loads in flight a lane (without it a warp waits a DRAM
// round trip per unit: 20 % of the copy bandwidth, measured on the H200).
template <class T> struct Raw8 { uint4 q[sizeof(T) / 2]; };  // 8 elements as stored: 16 or 32 bytes

template <class T>
__device__ __forceinline__ void load_raw8(const T* row, int col0, int64_t n, bool vec, Raw8<T>& r) {
  if (vec && col0 + 8 <= n) {
#pragma unroll
    for (int j = 0; j < int(sizeof(T)) / 2; ++j) r.q[j] = reinterpret_cast<const uint4*>(row + col0)[j];
  } else {  // guarded element loads; missing elements are +0 (all-zero bits in every type)
    T* e = reinterpret_cast<T*>(&r);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (col0 + i < n) e[i] = row[col0 + i];
      else memset(&e[i], 0, sizeof(T));
    }
  }
}

template <class T>
__device__ __forceinline__ void unpack8(const Raw8<T>& r, float out[8]) {
  const T* e = reinterpret_cast<const T*>(&r);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = Elem<T>::load(e[i]);
}

// Weight and bias: their dtype is a run-time value (a uniform branch), not a template
// parameter, which divides the instances to compile by three.
__device__ __forceinline__ void load8_w(const void* base, int wdt, int col0, int64_t n, bool vec, float out[8]) {
  if (wdt == MLOPS_DTYPE_BF16) load8(static_cast<const bf16*>(base), col0, n, vec, out);
  else if (wdt == MLOPS_DTYPE_FP16) load8(static_cast<const f16*>(base), col0, n, vec, out);
  else load8(static_cast<const float*>(base), col0, n, vec, out);
}

template <class T>
__device__ __forceinline__ const T* row_ptr(const void* base, int64_t row, int64_t stride) {
  return static_cast<const T*>(base) + row * stride;
}

// Step 1 of a unit: v = x (+ residual, stored to residual_out) (* silu(gate) before).
// `reread`: the unit was seen before; x + residual is read back from residual_out, since
// residual_out may alias residual or x.
template <class XT>
__device__ __forceinline__ void input_unit(const Params& p, int64_t row, int col0, bool reread, float v[8]) {
  const int64_t H = p.hidden;
  if (p.residual && reread) {
    load8(row_ptr<XT>(p.residual_out, row, p.residual_out_stride), col0, H, p.vec_ok, v);
  } else {
    load8(row_ptr<XT>(p.x, row, p.x_stride), col0, H, p.vec_ok, v);
    if (p.residual) {
      float r[8];
      load8(row_ptr<XT>(p.residual, row, p.residual_stride), col0, H, p.vec_ok, r);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = Elem<XT>::round(v[i] + r[i]);
      store8(static_cast<XT*>(p.residual_out) + row * p.residual_out_stride, col0, H, p.vec_ok, v);
    }
  }
  if (p.gate_mode == MLOPS_GATE_BEFORE) {
    float z[8];
    load8(row_ptr<XT>(p.gate, row, p.gate_stride), col0, H, p.vec_ok, z);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = (col0 + i < H) ? gate_before(v[i], z[i]) : 0.0f;
  }
}

// Quantized output of one lane's 8 values. Lanes 2k and 2k+1 hold one block of 16.
template <class XT>
__device__ __forceinline__ void quant_unit(const Params& p, int64_t row, int col0, const float y[8],
                                           float row_inv) {
  const int lane = threadIdx.x & 31;
  const int64_t H = p.hidden;
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(y[i]));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  const bool full = col0 + 8 <= H;
  const bool lead = (lane & 1) == 0;
  const int64_t blk = col0 / 16;
  uint8_t* qrow = static_cast<uint8_t*>(p.q) + row * p.q_stride;
  if (p.quant == MLOPS_QUANT_INT8) {
    const float s = int8_scale(amax), inv = int8_inv(amax);
    uint8_t c[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i] = uint8_t(int8_code(y[i], inv));
    if (full && p.vec_ok) *reinterpret_cast<uint2*>(qrow + col0) = *reinterpret_cast<uint2*>(c);
    else for (int i = 0; i < 8; ++i) if (col0 + i < H) qrow[col0 + i] = c[i];
    if (lead && col0 < H) (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[blk] = s;
  } else if (p.quant == MLOPS_QUANT_NVFP4) {
    Nvfp4Block b = nvfp4_block(amax, p.quant_scale);
    uint8_t c[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      c[i] = uint8_t(nvfp4_code(y[2 * i], b.mul) | (nvfp4_code(y[2 * i + 1], b.mul) << 4));
    if (full && p.vec_ok) *reinterpret_cast<uint32_t*>(qrow + col0 / 2) = *reinterpret_cast<uint32_t*>(c);
    else for (int i = 0; i < 4; ++i) if (col0 + 2 * i < H) qrow[col0 / 2 + i] = c[i];
    if (lead && col0 < H) (static_cast<uint8_t*>(p.q_scale) + row * p.q_scale_stride)[blk] = b.scale_code;
  } else {  // FP8 static or dynamic: row_inv is 1 / the decode scale
    uint8_t c[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i] = fp8_code(y[i], row_inv);
    if (full && p.vec_ok) *reinterpret_cast<uint2*>(qrow + col0) = *reinterpret_cast<uint2*>(c);
    else for (int i = 0; i < 8; ++i) if (col0 + i < H) qrow[col0 + i] = c[i];
  }
}

// Folds the unit values of each group of a row into one value a group (thread-parallel over
// groups, each fold sequential in unit order), then applies `finish`.
template <class F>
__device__ __forceinline__ void fold_groups(const Params& p, const float* units, float* groups, int tid_in_row,
                                            int threads_in_row, F finish) {
  for (int g = tid_in_row; g < p.groups; g += threads_in_row) {
    float s = 0.0f;
    for (int k = 0; k < p.units_per_group; ++k) s = s + units[g * p.units_per_group + k];
    groups[g] = finish(s);
  }
}

// WARPS: warps a row; kCap: units a warp keeps in registers (8 floats a lane each);
// kMinCtas: CTAs an SM must hold (caps registers at 64K / (256 * kMinCtas)). Fewer kept units
// and more resident CTAs trade register reuse for loads in flight; bench/bench_norm.py
// --variants measures which wins where, and the planner follows it.
template <class XT, int WARPS, int kCap, int kMinCtas>
__global__ void __launch_bounds__(kCtaThreads, kMinCtas) norm_kernel(Params p) {
  constexpr int kRows = 8 / WARPS;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int slot = warp / WARPS, wr = warp % WARPS;
  const int64_t row = int64_t(blockIdx.x) * kRows + slot;
  const bool active = row < p.rows;
  const int U = p.units;
  const int64_t H = p.hidden;
  const int tid_in_row = wr * 32 + lane;
  const bool is_layer = p.kind == MLOPS_NORM_LAYER;
  extern __shared__ float smem[];
  float* unit_sums = smem + slot * U;              // [kRows][U]
  float* mean_of = smem + (kRows + slot) * U;      // [kRows][U]: a group's mean (LayerNorm)
  float* r_of = smem + (2 * kRows + slot) * U;     // [kRows][U]: a group's 1/sqrt(var + eps)
  float* warp_amax = smem + 3 * kRows * U;         // [kRows][WARPS]
  auto col_of = [&](int u) { return u * kUnit + lane * 8; };
  auto mine = [&](int k) { return active && wr + k * WARPS < U; };  // unit k of this warp exists

  // Code size matters as much as loads in flight: every phase's arithmetic exists once (the
  // unit loops are not unrolled), and only the loads are unrolled, so they are all issued
  // before the first is used. The warp's units k < kCap (unit wr + k * WARPS) live in v;
  // register arrays are indexed by unrolled constants only (sel/put), since a run-time index
  // would move them to local memory. Units past kCap * WARPS are re-read (L2 hits).
  float v[kCap][8];
  auto sel = [&](const float (&a)[kCap][8], int it, float (&e)[8]) {
#pragma unroll
    for (int k = 0; k < kCap; ++k)
      if (k == it)
#pragma unroll
        for (int i = 0; i < 8; ++i) e[i] = a[k][i];
  };
  auto put = [&](float (&a)[kCap][8], int it, const float (&e)[8]) {
#pragma unroll
    for (int k = 0; k < kCap; ++k)
      if (k == it)
#pragma unroll
        for (int i = 0; i < 8; ++i) a[k][i] = e[i];
  };
  auto fetch = [&](int it, int u, float (&e)[8]) {
    if (it < kCap) sel(v, it, e);
    else input_unit<XT>(p, row, col_of(u), true, e);
  };
  auto unit_sum = [&](int u, const float (&e)[8], bool squares) {
    const float s = warp_butterfly32(squares ? lane_sumsq8(e) : lane_sum8(e));
    if (lane == 0) unit_sums[u] = s;
  };

  // Phase A: the loads of the kept units (x, residual), then per unit x (+ residual)
  // (* silu(gate) before) and the unit sums of v (LayerNorm) or v^2 (RMSNorm).
  {
    Raw8<XT> rx[kCap], rr[kCap];  // as stored (16-bit types: 4 registers a unit, not 8)
    auto sel_raw = [&](const Raw8<XT> (&a)[kCap], int it, float (&e)[8]) {
#pragma unroll
      for (int k = 0; k < kCap; ++k)
        if (k == it) unpack8(a[k], e);
    };
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
      if (mine(k)) {
        const int c = col_of(wr + k * WARPS);
        load_raw8(row_ptr<XT>(p.x, row, p.x_stride), c, H, p.vec_ok, rx[k]);
        if (p.residual) load_raw8(row_ptr<XT>(p.residual, row, p.residual_stride), c, H, p.vec_ok, rr[k]);
      }
    }
#pragma unroll 1
    for (int it = 0, u = wr; active && u < U; ++it, u += WARPS) {
      const int c = col_of(u);
      float e[8];
      if (it < kCap) {
        sel_raw(rx, it, e);
        if (p.residual) {
          float r[8];
          sel_raw(rr, it, r);
#pragma unroll
          for (int i = 0; i < 8; ++i) e[i] = Elem<XT>::round(e[i] + r[i]);
          store8(static_cast<XT*>(p.residual_out) + row * p.residual_out_stride, c, H, p.vec_ok, e);
        }
        if (p.gate_mode == MLOPS_GATE_BEFORE) {
          float z[8];
          load8(row_ptr<XT>(p.gate, row, p.gate_stride), c, H, p.vec_ok, z);
#pragma unroll
          for (int i = 0; i < 8; ++i) e[i] = (c + i < H) ? gate_before(e[i], z[i]) : 0.0f;
        }
        put(v, it, e);
      } else {
        input_unit<XT>(p, row, c, false, e);
      }
      unit_sum(u, e, !is_layer);
    }
  }
  __syncthreads();
  if (active) {
    if (is_layer)
      fold_groups(p, unit_sums, mean_of, tid_in_row, WARPS * 32, [&](float s) { return s / float(p.group); });
    else
      fold_groups(p, unit_sums, r_of, tid_in_row, WARPS * 32, [&](float s) { return rms_r(s, p.group, p.eps); });
  }
  __syncthreads();

  // Phase B (LayerNorm): unit sums of (v - mean)^2, then r.
  if (is_layer) {
#pragma unroll 1
    for (int it = 0, u = wr; active && u < U; ++it, u += WARPS) {
      float e[8];
      fetch(it, u, e);
      const float mean = mean_of[u / p.units_per_group];
      const int c = col_of(u);
#pragma unroll
      for (int i = 0; i < 8; ++i) e[i] = (c + i < H) ? e[i] - mean : 0.0f;
      unit_sum(u, e, true);
    }
    __syncthreads();
    if (active)
      fold_groups(p, unit_sums, r_of, tid_in_row, WARPS * 32, [&](float s) { return rms_r(s, p.group, p.eps); });
    __syncthreads();
  }

  // Phase C: y and the quantized output. FP8 with a per-row scale runs it twice: the first
  // pass only finds the row's amax (the values are recomputed, not stored).
  const bool fp8_dyn = p.quant == MLOPS_QUANT_FP8_DYNAMIC;
  float row_inv = (p.quant == MLOPS_QUANT_FP8_STATIC) ? 1.0f / *p.quant_scale : 1.0f;
#pragma unroll 1
  for (int pass = fp8_dyn ? 0 : 1; pass < 2; ++pass) {
    float amax = 0.0f;
    float wv[kCap][8];  // the weights of the kept units, loaded before any is used
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
#pragma unroll
      for (int i = 0; i < 8; ++i) wv[k][i] = 0.0f;
      if (mine(k) && p.weight) load8_w(p.weight, p.w_dtype, col_of(wr + k * WARPS), H, p.vec_ok, wv[k]);
    }
#pragma unroll 1
    for (int it = 0, u = wr; active && u < U; ++it, u += WARPS) {
      const int c = col_of(u);
      float e[8], w[8] = {}, b[8] = {}, z[8] = {}, y[8];
      fetch(it, u, e);
      if (it < kCap) sel(wv, it, w);
      else if (p.weight) load8_w(p.weight, p.w_dtype, c, H, p.vec_ok, w);
      const int g = u / p.units_per_group;
      const float mean = is_layer ? mean_of[g] : 0.0f;
      const float r = r_of[g];
      if (p.bias) load8_w(p.bias, p.w_dtype, c, H, p.vec_ok, b);
      if (p.gate_mode == MLOPS_GATE_AFTER) load8(row_ptr<XT>(p.gate, row, p.gate_stride), c, H, p.vec_ok, z);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float n = is_layer ? (e[i] - mean) * r : e[i] * r;
        y[i] = (c + i < H) ? epilogue<XT>(p, n, w[i], b[i], z[i]) : 0.0f;
        amax = fmaxf(amax, fabsf(y[i]));
      }
      if (pass == 1) {
        if (p.y) store8(static_cast<XT*>(p.y) + row * p.y_stride, c, H, p.vec_ok, y);
        if (p.quant != MLOPS_QUANT_NONE) quant_unit<XT>(p, row, c, y, row_inv);
      }
    }
    if (pass == 0) {  // the row's amax; max is exact, so any order gives the same bits
#pragma unroll
      for (int off = 16; off >= 1; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
      if (lane == 0) warp_amax[slot * WARPS + wr] = amax;
      __syncthreads();
      float m = 0.0f;
      for (int k = 0; k < WARPS; ++k) m = fmaxf(m, warp_amax[slot * WARPS + k]);
      row_inv = fp8_row_inv(m);
      if (active && tid_in_row == 0) (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[0] = fp8_row_scale(m);
    }
  }
}

// The common call, lean: RMSNorm or LayerNorm, optional residual, weight (any dtype, + offset)
// and bias, one group, no gate, no quantized output, whole units, 16-byte aligned rows, and a
// row that fits the variant's registers (units <= WARPS * kCap). Fully unrolled with every
// branch hoisted out of the element loops: the general kernel spends ~90 instructions an
// element on run-time flags and register selects (ncu on the H200: SM throughput 53-61 %,
// DRAM 15-25 %), this one a handful. Same arithmetic, same order: the same bits
// (tests/test_norm_gpu.py runs both against the host emulation).
template <class XT, int WARPS, int kCap, int kMinCtas>
__global__ void __launch_bounds__(kCtaThreads, kMinCtas) norm_simple_kernel(Params p) {
  constexpr int kRows = 8 / WARPS;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int slot = warp / WARPS, wr = warp % WARPS;
  const int64_t row = int64_t(blockIdx.x) * kRows + slot;
  const bool active = row < p.rows;
  const int U = p.units;
  const bool is_layer = p.kind == MLOPS_NORM_LAYER;
  extern __shared__ float smem[];
  float* unit_sums = smem + slot * U;
  float* stats = smem + kRows * U + slot * 2;  // [kRows][2]: mean, r
  const XT* xr = static_cast<const XT*>(p.x) + row * p.x_stride;
  float v[kCap][8];
  Raw8<XT> raw[kCap], rres[kCap];
#pragma unroll
  for (int k = 0; k < kCap; ++k) {
    const int u = wr + k * WARPS;
    if (active && u < U) {
      raw[k].q[0] = reinterpret_cast<const uint4*>(xr + u * kUnit + lane * 8)[0];
      if constexpr (sizeof(XT) == 4) raw[k].q[1] = reinterpret_cast<const uint4*>(xr + u * kUnit + lane * 8)[1];
      if (p.residual) {
        const XT* rr = static_cast<const XT*>(p.residual) + row * p.residual_stride + u * kUnit + lane * 8;
        rres[k].q[0] = reinterpret_cast<const uint4*>(rr)[0];
        if constexpr (sizeof(XT) == 4) rres[k].q[1] = reinterpret_cast<const uint4*>(rr)[1];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kCap; ++k) {
    const int u = wr + k * WARPS;
    if (active && u < U) {
      unpack8(raw[k], v[k]);
      if (p.residual) {
        float r[8];
        unpack8(rres[k], r);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[k][i] = Elem<XT>::round(v[k][i] + r[i]);
        store8(static_cast<XT*>(p.residual_out) + row * p.residual_out_stride, u * kUnit + lane * 8, p.hidden, true,
               v[k]);
      }
      const float s = warp_butterfly32(is_layer ? lane_sum8(v[k]) : lane_sumsq8(v[k]));
      if (lane == 0) unit_sums[u] = s;
    }
  }
  __syncthreads();
  if (active && wr == 0 && lane == 0) {  // fold in unit order (fixed_sum.h)
    float s = 0.0f;
    for (int u = 0; u < U; ++u) s = s + unit_sums[u];
    if (is_layer) stats[0] = s / float(p.group);
    else stats[1] = rms_r(s, p.group, p.eps);
  }
  __syncthreads();
  float mean = 0.0f;
  if (is_layer) {
    mean = stats[0];
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
      const int u = wr + k * WARPS;
      if (active && u < U) {
        float d[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) d[i] = v[k][i] - mean;
        const float s = warp_butterfly32(lane_sumsq8(d));
        if (lane == 0) unit_sums[u] = s;
      }
    }
    __syncthreads();
    if (active && wr == 0 && lane == 0) {
      float s = 0.0f;
      for (int u = 0; u < U; ++u) s = s + unit_sums[u];
      stats[1] = rms_r(s, p.group, p.eps);
    }
    __syncthreads();
  }
  const float r = stats[1];
  const bool hf = p.order == MLOPS_ORDER_HF, has_w = p.weight != nullptr, has_b = p.bias != nullptr;
  float w[kCap][8], b[kCap][8];
#pragma unroll
  for (int k = 0; k < kCap; ++k) {
    const int u = wr + k * WARPS;
    if (active && u < U) {
      if (has_w) load8_w(p.weight, p.w_dtype, u * kUnit + lane * 8, p.hidden, true, w[k]);
      if (has_b) load8_w(p.bias, p.w_dtype, u * kUnit + lane * 8, p.hidden, true, b[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < kCap; ++k) {
    const int u = wr + k * WARPS;
    if (!(active && u < U)) continue;
    float y[8];
    // epilogue<XT>() with its flags hoisted: the same operations in the same order
    if (hf) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float t = Elem<XT>::round((v[k][i] - mean) * r);
        float o = has_w ? (w[k][i] + p.weight_offset) * t : t;
        y[i] = has_b ? o + b[k][i] : o;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float n = (v[k][i] - mean) * r;
        float o = has_w ? n * (w[k][i] + p.weight_offset) : n;
        y[i] = has_b ? o + b[k][i] : o;
      }
    }
    store8(static_cast<XT*>(p.y) + row * p.y_stride, u * kUnit + lane * 8, p.hidden, true, y);
  }
}

// Unit sums, group means and group r for each row of the CTA, plus the warps' amax.
inline size_t norm_smem_bytes(int warps, int units) {
  return sizeof(float) * (3 * size_t(8 / warps) * size_t(units) + 8);
}

}  // namespace mlops::norm
