// The "r" variants: one warp a row, no shared memory, no CTA barrier.
//
// Why (ncu run 13, docs/perf/ncu-h200-run13.txt): w8c2 spreads a 4096 row over a whole CTA;
// each warp has 2 loads of 16 bytes a lane in flight, then every warp of the CTA waits at a
// barrier for the row's sum before it stores, so the SM's loads in flight drop to zero once a
// row and DRAM runs at 52 %. Here a warp owns its row: a lane issues the 16-byte loads of all
// its units (16 for H = 4096: 8 KB a warp in flight), sums with shuffles only and stores; the
// other warps of the SM are not held by it, so loads stay in flight while it computes.
// The arithmetic and its order are those of fixed_sum.h and norm_math.h (per unit: lane folds
// of 8, the xor butterfly; units folded left to right; the epilogue of the lean kernel), so
// the bits are the host emulation's.
#pragma once
#include "norm_kernel.cuh"

namespace mlops::norm {

constexpr int kRowWarps = 4;                 // rows a CTA (small CTAs: a finished row frees its
constexpr int kRowThreads = 32 * kRowWarps;  // slot sooner than a 256-thread CTA would)

// 16-byte global accesses with cache hints. The x / residual loads are read once: on sm_70+
// they skip L1 (L1::no_allocate) so the weights, which every row re-reads, stay there.
// asm volatile keeps them in program order with the stores below, which matters when y or
// residual_out alias x or residual (each address is read by the lane that later writes it).
__device__ __forceinline__ uint4 ld_stream16(const void* ptr) {
  uint4 r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(ptr));
#else
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(ptr));
#endif
  return r;
}
// Weights and bias: L1-cached, and not volatile: the compiler may hoist a unit's weight loads
// above the previous unit's y stores (nothing writes them), so they need not wait in turn.
__device__ __forceinline__ uint4 ld_const16(const void* ptr) {
  uint4 r;
  asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(ptr));
  return r;
}
// kCs: st.global.cs (streaming, evict-first in L1 and L2) for y, which nothing in the kernel
// reads again; else a plain store.
template <bool kCs>
__device__ __forceinline__ void st16(void* ptr, uint4 v) {
  if constexpr (kCs)
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(ptr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  else
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(ptr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

template <class T>
__device__ __forceinline__ void ld_row8(const T* p, Raw8<T>& r) {
#pragma unroll
  for (int j = 0; j < int(sizeof(T)) / 2; ++j) r.q[j] = ld_stream16(reinterpret_cast<const uint4*>(p) + j);
}
template <bool kCs, class T>
__device__ __forceinline__ void st_row8(T* p, const Raw8<T>& r) {
#pragma unroll
  for (int j = 0; j < int(sizeof(T)) / 2; ++j) st16<kCs>(reinterpret_cast<uint4*>(p) + j, r.q[j]);
}

// Packs 8 floats that are already values of T (rounded) into T's storage: exact.
template <class T>
__device__ __forceinline__ void pack8(const float v[8], Raw8<T>& r) {
  uint32_t* w = reinterpret_cast<uint32_t*>(&r);
  if constexpr (std::is_same_v<T, bf16>) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = f32x2_to_bf16x2(v[2 * i], v[2 * i + 1]);
  } else if constexpr (std::is_same_v<T, f16>) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = uint32_t(f32_to_f16(v[2 * i])) | (uint32_t(f32_to_f16(v[2 * i + 1])) << 16);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = __float_as_uint(v[i]);
  }
}

// Rounds 8 floats to T (round to nearest even) and returns the rounded values as floats and
// the packed bits: Elem<T>::round per element, but for bf16 one cvt.rn.bf16x2 a pair.
template <class T>
__device__ __forceinline__ void round8(float v[8], Raw8<T>& r) {
  pack8<T>(v, r);  // pack8 rounds: cvt.rn (bf16x2 / f16) is round-to-nearest-even per element
  unpack8(r, v);
}

// Weights / bias of 8 columns, dtype a run-time (uniform) value: one branch a unit.
__device__ __forceinline__ void ld_w8(const void* base, int wdt, int col0, float out[8]) {
  if (wdt == MLOPS_DTYPE_FP32) {
    Raw8<float> r;
    r.q[0] = ld_const16(static_cast<const float*>(base) + col0);
    r.q[1] = ld_const16(static_cast<const float*>(base) + col0 + 4);
    unpack8(r, out);
  } else if (wdt == MLOPS_DTYPE_BF16) {
    Raw8<bf16> r;
    r.q[0] = ld_const16(static_cast<const bf16*>(base) + col0);
    unpack8(r, out);
  } else {
    Raw8<f16> r;
    r.q[0] = ld_const16(static_cast<const f16*>(base) + col0);
    unpack8(r, out);
  }
}

// Quantized output of one lane's 8 values, the kind fixed at compile time (quant_unit of
// norm_kernel.cuh without its run-time branches; same codes, same stores).
template <int kQuant>
__device__ __forceinline__ void quant8(const Params& p, int64_t row, int col0, const float y[8], float row_inv) {
  const int lane = threadIdx.x & 31;
  uint8_t* qrow = static_cast<uint8_t*>(p.q) + row * p.q_stride;
  if constexpr (kQuant == MLOPS_QUANT_INT8 || kQuant == MLOPS_QUANT_NVFP4) {
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(y[i]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));  // lanes 2k, 2k+1: a block of 16
    const bool lead = (lane & 1) == 0;
    const int blk = col0 / 16;
    if constexpr (kQuant == MLOPS_QUANT_INT8) {
      const float s = int8_scale(amax), inv = int8_inv(amax);
      uint32_t c[2] = {0, 0};
#pragma unroll
      for (int i = 0; i < 8; ++i) c[i / 4] |= uint32_t(uint8_t(int8_code(y[i], inv))) << (8 * (i % 4));
      *reinterpret_cast<uint2*>(qrow + col0) = make_uint2(c[0], c[1]);
      if (lead) (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[blk] = s;
    } else {
      const Nvfp4Block b = nvfp4_block(amax, p.quant_scale);
      uint32_t c = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i)
        c |= uint32_t(nvfp4_code(y[2 * i], b.mul) | (nvfp4_code(y[2 * i + 1], b.mul) << 4)) << (8 * i);
      *reinterpret_cast<uint32_t*>(qrow + col0 / 2) = c;
      if (lead) (static_cast<uint8_t*>(p.q_scale) + row * p.q_scale_stride)[blk] = b.scale_code;
    }
  } else {  // FP8, static or dynamic: row_inv = 1 / the decode scale
    uint32_t c[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 8; ++i) c[i / 4] |= uint32_t(fp8_code(y[i], row_inv)) << (8 * (i % 4));
    *reinterpret_cast<uint2*>(qrow + col0) = make_uint2(c[0], c[1]);
  }
}

// One row held by one warp: raw[k] is unit k (k < U <= kCap) as stored, after the residual add
// when there is one. Computes the statistics and writes y / the quantized output.
template <class XT, int kCap, int kQuant, bool kCs>
__device__ __forceinline__ void row_finish(const Params& p, int64_t row, Raw8<XT> (&raw)[kCap]) {
  const int lane = threadIdx.x & 31;
  const int U = p.units;
  const int c0 = lane * 8;
  const bool is_layer = p.kind == MLOPS_NORM_LAYER;
  // Unit sums (lane fold of 8, butterfly), folded in unit order in every lane.
  float us[kCap];
#pragma unroll
  for (int k = 0; k < kCap; ++k) {
    if (k < U) {
      float e[8];
      unpack8(raw[k], e);
      us[k] = warp_butterfly32(is_layer ? lane_sum8(e) : lane_sumsq8(e));
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kCap; ++k)
    if (k < U) s = s + us[k];
  float mean = 0.0f, r;
  if (is_layer) {
    mean = s / float(p.group);
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
      if (k < U) {
        float d[8];
        unpack8(raw[k], d);
#pragma unroll
        for (int i = 0; i < 8; ++i) d[i] = d[i] - mean;
        us[k] = warp_butterfly32(lane_sumsq8(d));
      }
    }
    float s2 = 0.0f;
#pragma unroll
    for (int k = 0; k < kCap; ++k)
      if (k < U) s2 = s2 + us[k];
    r = rms_r(s2, p.group, p.eps);
  } else {
    r = rms_r(s, p.group, p.eps);
  }
  // y = epilogue<XT>() with its flags hoisted (as norm_simple_kernel): same operations, same order.
  const bool hf = p.order == MLOPS_ORDER_HF, has_w = p.weight != nullptr, has_b = p.bias != nullptr;
  auto y_unit = [&](int k, float (&y)[8], Raw8<XT>& packed) {
    const int col = k * kUnit + c0;
    float e[8], w[8], b[8];
    unpack8(raw[k], e);
    if (has_w) ld_w8(p.weight, p.w_dtype, col, w);
    if (has_b) ld_w8(p.bias, p.w_dtype, col, b);
    if (hf) {
#pragma unroll
      for (int i = 0; i < 8; ++i) y[i] = (e[i] - mean) * r;
      Raw8<XT> t;
      round8<XT>(y, t);  // t = round_x((v - mean) * r)
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float o = has_w ? (w[i] + p.weight_offset) * y[i] : y[i];
        y[i] = has_b ? o + b[i] : o;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float n = (e[i] - mean) * r;
        const float o = has_w ? n * (w[i] + p.weight_offset) : n;
        y[i] = has_b ? o + b[i] : o;
      }
    }
    round8<XT>(y, packed);  // y as the output type's values, packed its bits
  };
  XT* yrow = static_cast<XT*>(p.y) + row * p.y_stride + c0;
  if constexpr (kQuant == MLOPS_QUANT_NONE) {
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
      if (k < U) {
        float y[8];
        Raw8<XT> o;
        y_unit(k, y, o);
        st_row8<kCs>(yrow + k * kUnit, o);
      }
    }
  } else {
    float row_inv = 1.0f;
    if constexpr (kQuant == MLOPS_QUANT_FP8_STATIC) row_inv = 1.0f / *p.quant_scale;
    if constexpr (kQuant == MLOPS_QUANT_FP8_DYNAMIC) {  // the row's amax first; y is recomputed
      float amax = 0.0f;
#pragma unroll
      for (int k = 0; k < kCap; ++k) {
        if (k < U) {
          float y[8];
          Raw8<XT> o;
          y_unit(k, y, o);
#pragma unroll
          for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(y[i]));
        }
      }
#pragma unroll
      for (int off = 16; off >= 1; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
      row_inv = fp8_row_inv(amax);
      if (lane == 0) (static_cast<float*>(p.q_scale) + row * p.q_scale_stride)[0] = fp8_row_scale(amax);
    }
    const bool want_y = p.y != nullptr;
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
      if (k < U) {
        float y[8];
        Raw8<XT> o;
        y_unit(k, y, o);
        if (want_y) st_row8<kCs>(yrow + k * kUnit, o);
        quant8<kQuant>(p, row, k * kUnit + c0, y, row_inv);
      }
    }
  }
}

// Loads unit k < U of a row (x, and residual: then x + residual is rounded, written to
// residual_out and kept in raw).
template <class XT, int kCap, bool kRes>
__device__ __forceinline__ void row_load(const Params& p, int64_t row, Raw8<XT> (&raw)[kCap],
                                         Raw8<XT> (&res)[kRes ? kCap : 1]) {
  const int c0 = (threadIdx.x & 31) * 8;
  const XT* xr = static_cast<const XT*>(p.x) + row * p.x_stride + c0;
#pragma unroll
  for (int k = 0; k < kCap; ++k)
    if (k < p.units) ld_row8(xr + k * kUnit, raw[k]);
  if constexpr (kRes) {
    const XT* rr = static_cast<const XT*>(p.residual) + row * p.residual_stride + c0;
#pragma unroll
    for (int k = 0; k < kCap; ++k)
      if (k < p.units) ld_row8(rr + k * kUnit, res[k]);
  }
}

// x + residual of a lane's 8 columns, rounded to XT (the host's Elem<XT>::round(x + r)), kept as XT bits in raw.
template <class XT>
__device__ __forceinline__ void add_residual8(Raw8<XT>& raw, const Raw8<XT>& res) {
  float a[8], b[8];
  unpack8(raw, a);
  unpack8(res, b);
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = a[i] + b[i];
  round8<XT>(a, raw);
}

template <class XT, int kCap, bool kRes>
__device__ __forceinline__ void row_add_residual(const Params& p, int64_t row, Raw8<XT> (&raw)[kCap],
                                                 const Raw8<XT> (&res)[kRes ? kCap : 1]) {
  if constexpr (kRes) {
    XT* ro = static_cast<XT*>(p.residual_out) + row * p.residual_out_stride + (threadIdx.x & 31) * 8;
#pragma unroll
    for (int k = 0; k < kCap; ++k) {
      if (k < p.units) {
        add_residual8<XT>(raw[k], res[k]);
        st_row8<false>(ro + k * kUnit, raw[k]);
      }
    }
  }
}

// kMinCtas: CTAs of 128 threads an SM (caps registers at 64K / (128 * kMinCtas)).
template <class XT, int kCap, bool kRes, int kQuant, int kMinCtas, bool kCs>
__global__ void __launch_bounds__(kRowThreads, kMinCtas) norm_row_kernel(Params p) {
  const int64_t row = int64_t(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  if (row >= p.rows) return;  // a whole warp leaves: no barrier and no shuffle is left waiting
  Raw8<XT> raw[kCap];
  Raw8<XT> res[kRes ? kCap : 1];
  row_load<XT, kCap, kRes>(p, row, raw, res);
  row_add_residual<XT, kCap, kRes>(p, row, raw, res);
  row_finish<XT, kCap, kQuant, kCs>(p, row, raw);
}

// Persistent: gridDim.x CTAs (a few an SM) walk the rows with a stride of all their warps;
// a warp issues the loads of its next row before it reduces and stores the current one, so
// its 16-byte loads stay in flight while it computes (two row buffers in registers: the loop
// is unrolled by two so each buffer is a fixed set of registers).
template <class XT, int kCap, int kMinCtas, bool kCs>
__global__ void __launch_bounds__(kRowThreads, kMinCtas) norm_row_persistent_kernel(Params p) {
  const int64_t stride = int64_t(gridDim.x) * kRowWarps;
  int64_t row = int64_t(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  if (row >= p.rows) return;
  Raw8<XT> a[kCap], b[kCap], none[1];
  row_load<XT, kCap, false>(p, row, a, none);
  for (;;) {
    if (row + stride < p.rows) row_load<XT, kCap, false>(p, row + stride, b, none);
    row_finish<XT, kCap, MLOPS_QUANT_NONE, kCs>(p, row, a);
    row += stride;
    if (row >= p.rows) break;
    if (row + stride < p.rows) row_load<XT, kCap, false>(p, row + stride, a, none);
    row_finish<XT, kCap, MLOPS_QUANT_NONE, kCs>(p, row, b);
    row += stride;
    if (row >= p.rows) break;
  }
}

}  // namespace mlops::norm
