// Element access shared by the RoPE kernels (rope_kernel.cuh, rope_kernel_early.cuh): 16-byte
// vectors when the caller proved the alignment, scalar accesses otherwise.
#pragma once
#include "rope_launch.h"

namespace mlops::rope {

template <class T, int N>
struct alignas(N * sizeof(T)) Vec {
  T v[N];
};

// One access of N elements when the caller proved 16-byte alignment (VEC), else N scalar ones.
template <class T, int N, bool VEC>
__device__ __forceinline__ Vec<T, N> ldv(const T* p) {
  if constexpr (VEC) {
    return *reinterpret_cast<const Vec<T, N>*>(p);
  } else {
    Vec<T, N> v;
#pragma unroll
    for (int e = 0; e < N; ++e) v.v[e] = p[e];
    return v;
  }
}
template <class T, int N, bool VEC>
__device__ __forceinline__ void stv(T* p, const Vec<T, N>& v) {
  if constexpr (VEC) {
    *reinterpret_cast<Vec<T, N>*>(p) = v;
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) p[e] = v.v[e];
  }
}

// 16 bytes from global to shared memory without passing through registers (the stage variants):
// cp.async.cg from sm_80 (the load stays in flight in the LSU, not in a register; .cg: L2 only,
// the data is read once). Before sm_80 and on the host (the kernel-on-host runner) an ordinary
// copy: the same bytes, synchronously.
constexpr int kSlotStride = kCtaThreads * 16;  // bytes between a thread's consecutive 16-byte slots
__device__ __forceinline__ void cp_async16(void* s, const void* g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(unsigned(__cvta_generic_to_shared(s))), "l"(g)
               : "memory");
#else
  *reinterpret_cast<Vec<u32, 4>*>(s) = *reinterpret_cast<const Vec<u32, 4>*>(g);
#endif
}
// The thread's cp.async copies have landed and are visible to it (not to other threads: a thread
// reads back only its own slots, so no barrier is needed for them).
__device__ __forceinline__ void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

template <class T, int LAYOUT, bool VEC>
struct Geometry {
  static constexpr int E = VEC ? int(16 / sizeof(T)) : 1;          // elements a 16-byte access holds
  static constexpr int P = LAYOUT == kNeox ? E : (VEC ? E / 2 : 1); // pairs a rotation chunk holds
  static constexpr int TE = E;                                      // elements a tail chunk holds
};

// n floats of shared memory into v: 16-byte (or 8-byte) loads when VEC proved the alignment
// (the chunk start j and half are multiples of P, and P is 4 / 8 for NeoX, 2 / 4 for GPT-J).
template <int N, bool VEC>
__device__ __forceinline__ void lds_floats(const float* s, float* v) {
  if constexpr (VEC && N % 4 == 0) {
#pragma unroll
    for (int k = 0; k < N / 4; ++k) {
      const Vec<float, 4> q = *reinterpret_cast<const Vec<float, 4>*>(s + 4 * k);
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * k + e] = q.v[e];
    }
  } else if constexpr (VEC && N == 2) {
    const Vec<float, 2> q = *reinterpret_cast<const Vec<float, 2>*>(s);
    v[0] = q.v[0];
    v[1] = q.v[1];
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = s[e];
  }
}

template <class T> constexpr bool kIsBf16 = false;
template <> constexpr bool kIsBf16<bf16> = true;

// N elements of T in registers, read and written as floats. The 16-byte path holds them as 32-bit
// words, two 16-bit values a register: nvcc 13.0 (sm_90) gives each element of a Vec<bf16, 8> its
// own register, and the early kernels with 4 / 8 items a thread spilled (216 / 532 bytes).
// Element e of a word is its low half for even e (little-endian, as the host emulation's memory).
template <class T, int N, bool VEC, bool WORDS = VEC && (N * sizeof(T)) % 4 == 0>
struct Regs {
  Vec<T, N> x;
  __device__ __forceinline__ void load(const T* p) { x = ldv<T, N, VEC>(p); }
  __device__ __forceinline__ void store(T* p) const { stv<T, N, VEC>(p, x); }
  __device__ __forceinline__ float get(int e) const { return Elem<T>::load(x.v[e]); }
  __device__ __forceinline__ void set(int e, float f) { x.v[e] = Elem<T>::store(f); }
};
template <class T, int N, bool VEC>
struct Regs<T, N, VEC, true> {
  static constexpr int W = int(N * sizeof(T) / 4);
  Vec<u32, W> w;
  __device__ __forceinline__ void load(const T* p) { w = *reinterpret_cast<const Vec<u32, W>*>(p); }
  __device__ __forceinline__ void store(T* p) const { *reinterpret_cast<Vec<u32, W>*>(p) = w; }
  __device__ __forceinline__ float get(int e) const {
    if constexpr (sizeof(T) == 4) {
      return u2f(w.v[e]);
    } else {
      T h;
      h.bits = u16(w.v[e >> 1] >> (16 * (e & 1)));
      return Elem<T>::load(h);
    }
  }
  __device__ __forceinline__ void set(int e, float f) {
    if constexpr (sizeof(T) == 4) {
      w.v[e] = f2u(f);
    } else {
      const u32 b = Elem<T>::store(f).bits, sh = 16 * (e & 1);
      w.v[e >> 1] = (w.v[e >> 1] & ~(0xffffu << sh)) | (b << sh);
    }
  }
  // Elements e (even) and e + 1 of a 16-bit T at once: the bits of set(e, lo), set(e + 1, hi)
  // (the stage kernels; bf16 by one cvt.rn.bf16x2.f32 from sm_80, the instruction set() uses for
  // one element, instead of two conversions and the masks that merge them).
  __device__ __forceinline__ void set2(int e, float lo, float hi) {
    static_assert(sizeof(T) == 2, "two 16-bit elements a word");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kIsBf16<T>) {
      u32 r;
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // a -> upper half, b -> lower
      w.v[e >> 1] = r;
      return;
    }
#endif
    w.v[e >> 1] = u32(Elem<T>::store(lo).bits) | (u32(Elem<T>::store(hi).bits) << 16);
  }
};

// One item's P pairs rotated in registers with the cos / sin in cv / sv: NeoX pairs element e of xa
// with element e of ya, GPT-J elements 2e and 2e + 1 of xa. PACK2 (16-bit T, the 16-byte path):
// two outputs a conversion (Regs::set2, the bits of two set()). The early, stage, flat and dec
// kernels share it (one copy of the arithmetic the host emulation mirrors).
template <int LAYOUT, int P, bool PACK2, class RX, class RY>  // RY: GPT-J kernels keep a 1-element dummy
__device__ __forceinline__ void rotate_item(RX& xa, RY& ya, const float* cv, const float* sv) {
  if constexpr (PACK2) {
    if constexpr (LAYOUT == kNeox) {
#pragma unroll
      for (int e = 0; e < P; e += 2) {
        float ox0, oy0, ox1, oy1;
        rotate(xa.get(e), ya.get(e), cv[e], sv[e], &ox0, &oy0);
        rotate(xa.get(e + 1), ya.get(e + 1), cv[e + 1], sv[e + 1], &ox1, &oy1);
        xa.set2(e, ox0, ox1);
        ya.set2(e, oy0, oy1);
      }
    } else {
#pragma unroll
      for (int e = 0; e < P; ++e) {
        float ox, oy;
        rotate(xa.get(2 * e), xa.get(2 * e + 1), cv[e], sv[e], &ox, &oy);
        xa.set2(2 * e, ox, oy);
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < P; ++e) {
      float ox, oy;
      if constexpr (LAYOUT == kNeox) {
        rotate(xa.get(e), ya.get(e), cv[e], sv[e], &ox, &oy);
        xa.set(e, ox);
        ya.set(e, oy);
      } else {
        rotate(xa.get(2 * e), xa.get(2 * e + 1), cv[e], sv[e], &ox, &oy);
        xa.set(2 * e, ox);
        xa.set(2 * e + 1, oy);
      }
    }
  }
}

// The item's registers back to its head row (out = the head's first element, j = the item's first
// pair): NeoX both halves, GPT-J the interleaved pairs.
template <int LAYOUT, class RX, class RY, class T>
__device__ __forceinline__ void store_item(const RX& xa, const RY& ya, T* out, int j, int half) {
  if constexpr (LAYOUT == kNeox) {
    xa.store(out + j);
    ya.store(out + half + j);
  } else {
    xa.store(out + 2 * j);
  }
}

}  // namespace mlops::rope
