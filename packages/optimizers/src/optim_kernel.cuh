// The multi-tensor update kernel: one CTA a chunk of MLOPS_OPTIM_CHUNK elements of one
// tensor (the chunk map says which), each warp a unit of 256 elements at a time, each lane
// elements 4l..4l+3 and 128+4l..128+4l+3 of the unit (so every 4-wide load is coalesced).
// A unit is also an 8-bit quantization block: its absmax is a warp max.
#pragma once
#include <cuda_runtime.h>

#include "optim_layout.h"
#include "optim_math.h"
#include "optim_quant.h"

namespace mlops::optim {

template <int BYTES> struct RawVec;
template <> struct RawVec<16> { using type = uint4; };
template <> struct RawVec<8> { using type = uint2; };
template <> struct RawVec<4> { using type = uint32_t; };

// Four consecutive elements (vec: one aligned load; else guarded scalar loads, 0 past n).
template <class T>
__device__ __forceinline__ void ld4(const T* p, int64_t i, int64_t n, bool vec, T out[4]) {
  if (vec) {
    using V = typename RawVec<sizeof(T) * 4>::type;
    const V v = __ldg(reinterpret_cast<const V*>(p + i));
    memcpy(out, &v, sizeof v);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (i + e < n) out[e] = p[i + e];
      else memset(&out[e], 0, sizeof(T));
    }
  }
}

template <class T>
__device__ __forceinline__ void st4(T* p, int64_t i, int64_t n, bool vec, const T in[4]) {
  if (vec) {
    using V = typename RawVec<sizeof(T) * 4>::type;
    V v;
    memcpy(&v, in, sizeof v);
    *reinterpret_cast<V*>(p + i) = v;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (i + e < n) p[i + e] = in[e];
  }
}

template <class T>
__device__ __forceinline__ void load8(const T* p, int64_t base, int lane, int64_t n, bool vec, float out[8]) {
  T raw[8];
  ld4(p, base + 4 * lane, n, vec, raw);
  ld4(p, base + 128 + 4 * lane, n, vec, raw + 4);
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = to_f32(raw[e]);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = o > v ? o : v;
  }
  return v;
}

// An L2 prefetch hint (no register, no fault on a valid address; nothing on the host).
__device__ __forceinline__ void prefetch_l2(const void* ptr) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(ptr));
#else
  (void)ptr;
#endif
}

// The 8-bit kernel asks L2 for a warp's next unit while it works on this one: its loads then
// wait on L2, not on DRAM, and more DRAM requests stay in flight than the loads alone keep (an
// 8-bit unit moves 16 B an element against ~100 instructions: its warps spend most of their
// time issuing). One 128-byte line a lane: what the unit [base, base + 256) reads (the fp32
// master or the param, the grad, both code arrays); the caller checks it lies in the tensor.
template <class PT>
__device__ __forceinline__ void prefetch_unit_q8(const mlops_optim_tensor& t, int64_t base, int lane) {
  constexpr int kLinesG = int(kUnitElems * sizeof(PT)) / 128;  // 8 (fp32) or 4 (bf16 / fp16)
  const int lines_p = t.master ? 8 : kLinesG;
  const char* p0 = t.master ? reinterpret_cast<const char*>(t.master + base)
                            : reinterpret_cast<const char*>(static_cast<const PT*>(t.param) + base);
  const char* ptr = nullptr;
  int k = lane;
  if (k < lines_p) ptr = p0 + 128 * k;
  else if ((k -= lines_p) < kLinesG)
    ptr = reinterpret_cast<const char*>(static_cast<const PT*>(t.grad) + base) + 128 * k;
  else if ((k -= kLinesG) < 2) ptr = static_cast<const char*>(t.state1) + base + 128 * k;
  else if ((k -= 2) < 2) ptr = static_cast<const char*>(t.state2) + base + 128 * k;
  if (ptr) prefetch_l2(ptr);
}

// The 8-bit maps as a CTA holds them in shared memory (or the host test passes them).
struct QView {
  const float* map1;        // qmap1 (signed), as given
  const float* map2;        // qmap2 (unsigned)
  const float* thr1;        // the table quantizer's thresholds and buckets (optim_quant.h)
  const float* thr2;
  const uint8_t* bucket1;
  const uint8_t* bucket2;
  bool table;               // both maps are the standard ones: the table quantizer is exact
};

// 8-bit state of one unit: codes -> values (load), values -> absmax, codes (store).
__device__ __forceinline__ void load8_q(const uint8_t* q, const float* absmax, const float* map, int64_t base,
                                        int lane, int64_t n, bool vec, float out[8]) {
  uint8_t raw[8];
  ld4(q, base + 4 * lane, n, vec, raw);
  ld4(q, base + 128 + 4 * lane, n, vec, raw + 4);
  const float am = absmax[base / MLOPS_OPTIM_QBLOCK];
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = map[raw[e]] * am;
}

// Codes: the table quantizer where it is exact (standard maps, |x| < 1.0078125, not NaN),
// else (any other map, or a lane with such a value: rare) quantize_nearest: the same codes.
template <bool SIGNED>
__device__ __forceinline__ void store8_q(uint8_t* q, float* absmax, const float* map, const float* thr,
                                         const uint8_t* bucket, bool table, int64_t base, int lane, int64_t n,
                                         bool vec, const float in[8]) {
  float am = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e)  // vec: a whole unit (no index test)
    if (vec || base + unit_pos(lane, e) < n) am = fabs_max(am, in[e]);
  am = warp_max(am);
  // qnormalize(in[e], am, r) for the 8 values, its common case (a product) out of the loop
  const float r = qrecip(am);
  float x[8];
  if (am > 0.0f && qrecip_finite(r)) {
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] = in[e] * r;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] = qnormalize(in[e], am, r);
  }
  uint8_t raw[8];
  bool bad = !table;
  if (table) {
#pragma unroll
    for (int e = 0; e < 8; ++e) raw[e] = uint8_t(quantize_table<SIGNED>(x[e], bucket, thr, bad));
  }
  if (bad) {
#pragma unroll
    for (int e = 0; e < 8; ++e) raw[e] = quantize_nearest(map, x[e]);
  }
  st4(q, base + 4 * lane, n, vec, raw);
  st4(q, base + 128 + 4 * lane, n, vec, raw + 4);
  if (lane == 0) absmax[base / MLOPS_OPTIM_QBLOCK] = am;
}

template <class PT, int ALGO, bool Q8, bool AMS>
__device__ __forceinline__ void update_unit(const mlops_optim_args& a, const Scalars& s, const mlops_optim_tensor& t,
                                            int64_t base, int lane, bool vec, uint32_t key, const QView& qv) {
  const int64_t n = t.numel;
  constexpr bool q8 = Q8;  // a template argument: the fp32-state path carries no 8-bit registers
  float p[8], g[8], m[8], v[8], vm[8];
  if (t.master) load8(t.master, base, lane, n, vec, p);
  else load8(static_cast<const PT*>(t.param), base, lane, n, vec, p);
  load8(static_cast<const PT*>(t.grad), base, lane, n, vec, g);
  const bool has_m = ALGO != MLOPS_OPTIM_SGD || a.beta1 != 0.0;
  if (has_m) {
    if (q8) load8_q(static_cast<const uint8_t*>(t.state1), t.absmax1, qv.map1, base, lane, n, vec, m);
    else load8(static_cast<const float*>(t.state1), base, lane, n, vec, m);
  }
  if (ALGO == MLOPS_OPTIM_ADAM) {
    if (q8) load8_q(static_cast<const uint8_t*>(t.state2), t.absmax2, qv.map2, base, lane, n, vec, v);
    else load8(static_cast<const float*>(t.state2), base, lane, n, vec, v);
    if (AMS) load8(t.state3, base, lane, n, vec, vm);
  }
  // 8-bit AdamW in its common configuration (decoupled decay, weight_decay != 0,
  // |1 - beta1| < 0.5, no maximize, no grad_scale): the general loop's operations with those
  // options as constants (the general loop re-tests them for every element: ~20 of its ~60
  // instructions an element, ptxas sm_90; it matters where the 8-bit kernel is issue-bound).
  if (Q8 && ALGO == MLOPS_OPTIM_ADAM && !AMS && a.decoupled != 0 && s.has_wd && s.lerp_small && a.maximize == 0 &&
      a.grad_scale == nullptr) {
    Scalars c = s;
    c.has_wd = true;
    c.lerp_small = true;
    float unused = 0.0f;
    if (a.clip_coef) {
      const float clip = *a.clip_coef;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        adam_elem(c, true, false, p[e], prep_grad(g[e], nullptr, &clip, false), m[e], v[e], unused);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        adam_elem(c, true, false, p[e], prep_grad(g[e], nullptr, nullptr, false), m[e], v[e], unused);
    }
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      Elem x{p[e], prep_grad(g[e], a.grad_scale, a.clip_coef, a.maximize != 0), has_m ? m[e] : 0.0f,
             ALGO == MLOPS_OPTIM_ADAM ? v[e] : 0.0f, AMS ? vm[e] : 0.0f};
      update_elem<ALGO>(a, s, x, AMS);
      p[e] = x.p; m[e] = x.m; v[e] = x.v; vm[e] = x.vm;
    }
  }
  // stores
  PT out[8];
  const bool sr = a.stochastic_rounding != 0 && !t.master;
#pragma unroll
  for (int e = 0; e < 8; ++e) from_f32(p[e], out[e], sr, sr ? sr_bits(key, base + unit_pos(lane, e)) : 0u);
  st4(static_cast<PT*>(t.param), base + 4 * lane, n, vec, out);
  st4(static_cast<PT*>(t.param), base + 128 + 4 * lane, n, vec, out + 4);
  if (t.master) {
    st4(t.master, base + 4 * lane, n, vec, p);
    st4(t.master, base + 128 + 4 * lane, n, vec, p + 4);
  }
  if (has_m) {
    if (q8)
      store8_q<true>(static_cast<uint8_t*>(t.state1), t.absmax1, qv.map1, qv.thr1, qv.bucket1, qv.table, base, lane,
                     n, vec, m);
    else {
      st4(static_cast<float*>(t.state1), base + 4 * lane, n, vec, m);
      st4(static_cast<float*>(t.state1), base + 128 + 4 * lane, n, vec, m + 4);
    }
  }
  if (ALGO == MLOPS_OPTIM_ADAM) {
    if (q8)
      store8_q<false>(static_cast<uint8_t*>(t.state2), t.absmax2, qv.map2, qv.thr2, qv.bucket2, qv.table, base, lane,
                      n, vec, v);
    else {
      st4(static_cast<float*>(t.state2), base + 4 * lane, n, vec, v);
      st4(static_cast<float*>(t.state2), base + 128 + 4 * lane, n, vec, v + 4);
    }
    if (AMS) {
      st4(t.state3, base + 4 * lane, n, vec, vm);
      st4(t.state3, base + 128 + 4 * lane, n, vec, vm + 4);
    }
  }
}

// The shared memory of an 8-bit CTA: the maps as given, and the table quantizer's data.
struct alignas(16) QSmem {
  float map[2][256];
  float thr[2][256];
  uint8_t bucket_s[kQBucketBytesS];
  uint8_t bucket_u[kQBucketBytesU];
};

// Q8: 8-bit states, AMS: amsgrad (compile time: each costs registers the common path must not
// carry). MIN_CTAS: the CTAs an SM must hold (ptxas caps registers to fit them). ptxas -v,
// nvcc 13.0, sm_90, Adam fp32: variant "occ3" (3: <= 80 registers) does not spill without
// amsgrad / 8-bit, which spill ~30-40 bytes; variant "occ2" (1: no cap) uses 90 (amsgrad 116,
// 8-bit ~100) registers, 2 CTAs an SM, no spills. The 8-bit instances (table quantizer,
// 2026-11-30): occ3 78-80 registers, no spills; occ2 101-110; 12960 bytes of shared memory.
// Both are listed in mlops/optimizers.h (MLOPS_OPTIM_VARIANT_*); the bench times both.
template <class PT, int ALGO, bool Q8, bool AMS, int MIN_CTAS>
__global__ void __launch_bounds__(kThreads, MIN_CTAS) step_kernel(const mlops_optim_args a) {
  if (a.found_inf && *a.found_inf != 0.0f) return;  // GradScaler saw inf/nan: change nothing
  const auto* tab = static_cast<const mlops_optim_tensor*>(a.table);
  const int32_t* chunk_map = reinterpret_cast<const int32_t*>(tab + a.num_tensors);
  const int64_t c = blockIdx.x;
  const mlops_optim_tensor t = tab[chunk_map[c]];
  const int64_t chunk_start = (c - t.first_chunk) * int64_t(MLOPS_OPTIM_CHUNK);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  QView qv{};
  if constexpr (Q8) {
    const int64_t first = chunk_start + int64_t(warp) * kUnitElems;  // the warp's first unit: L2 fetches it meanwhile
    if (first + kUnitElems <= t.numel) prefetch_unit_q8<PT>(t, first, lane);
    __shared__ QSmem qs;
    const int k = threadIdx.x;  // kThreads == 256: one entry of each map a thread
    const float m1 = a.qmap1[k], m2 = a.qmap2[k];
    qs.map[0][k] = m1;
    qs.map[1][k] = m2;
    qs.thr[0][k] = bits_f32(kQThrS[k]);
    qs.thr[1][k] = bits_f32(kQThrU[k]);
    for (int w = k; w < kQBucketBytesS / 16; w += kThreads)
      reinterpret_cast<uint4*>(qs.bucket_s)[w] = reinterpret_cast<const uint4*>(kQBucketS)[w];
    for (int w = k; w < kQBucketBytesU / 16; w += kThreads)
      reinterpret_cast<uint4*>(qs.bucket_u)[w] = reinterpret_cast<const uint4*>(kQBucketU)[w];
    const bool standard = f32_bits(m1) == kQMapS[k] && f32_bits(m2) == kQMapU[k];
    const bool table = __syncthreads_and(standard ? 1 : 0) != 0;  // also the barrier for the copies
    qv = QView{qs.map[0], qs.map[1], qs.thr[0], qs.thr[1], qs.bucket_s, qs.bucket_u, table};
  }
  const double lr = a.lr_device ? double(*a.lr_device) : a.lr;
  const float step = *t.step;
  const Scalars s = make_scalars(a, lr, double(step));
  const uint32_t key = sr_key(a.seed, uint32_t(step), t.id);
  const bool aligned = (t.flags & kFlagAligned) != 0;
  for (int u = warp; u < kUnitsPerChunk; u += kThreads / 32) {
    const int64_t base = chunk_start + int64_t(u) * kUnitElems;
    if (base >= t.numel) break;
    if constexpr (Q8) {
      const int64_t next = base + int64_t(kThreads / 32) * kUnitElems;
      if (u + kThreads / 32 < kUnitsPerChunk && next + kUnitElems <= t.numel) prefetch_unit_q8<PT>(t, next, lane);
    }
    update_unit<PT, ALGO, Q8, AMS>(a, s, t, base, lane, aligned && base + kUnitElems <= t.numel, key, qv);
  }
}

}  // namespace mlops::optim
