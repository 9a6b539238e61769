// Stand-in for <cuda_runtime.h> when tests/c/fbla_kernel_emulation.cpp compiles the FBLA kernels
// as host C++: the runtime names the library uses, CUDA's qualifiers as nothing (mlops/common/testing/
// cuda_runtime_stub.h, shared with positional's stand-in), and the warp /
// block intrinsics the kernels call, run by one fiber per CUDA thread (mlops/common/testing/fibers.h; fbla_kernel_emulation.cpp
// defines the functions). __shared__ is `static`: CTAs run one after another, so a kernel's shared
// variable is shared by the running CTA's threads.
#pragma once
#include <cstdint>
#include <cstring>

#include "mlops/common/testing/cuda_runtime_stub.h"

#define __shared__ static

extern dim3 blockDim, gridDim;
int __syncthreads_or(int pred);
uint32_t emu_shfl_xor(uint32_t bits, int off);
uint32_t __ballot_sync(uint32_t mask, int pred);

template <typename T>
inline T __shfl_xor_sync(uint32_t, T v, int off) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b = emu_shfl_xor(b, off);
  T r;
  std::memcpy(&r, &b, 4);
  return r;
}

uint32_t emu_shfl_idx(uint32_t bits, int src);

template <typename T>
inline T __shfl_sync(uint32_t, T v, int src) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b = emu_shfl_idx(b, src);
  T r;
  std::memcpy(&r, &b, 4);
  return r;
}

// prmt.b32 (default mode): byte n of the result = byte s[4n .. 4n+2] of {y, x} (x: bytes 0 .. 3).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = (uint64_t(y) << 32) | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) r |= unsigned((v >> (8 * ((s >> (4 * n)) & 7))) & 0xffu) << (8 * n);
  return r;
}

// The folded combine's count (refine_mma4_kernel<.., true>): CTAs run one after another, so a fence orders nothing more.
inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline void __threadfence() {}

// Dynamic shared memory (extern __shared__ on the GPU): one buffer, refilled with garbage at each launch.
#define MLOPS_FBLA_ON_HOST 1
uint8_t* emu_dyn_smem();

inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) c += int(int8_t(a >> (8 * i))) * int(int8_t(b >> (8 * i)));
  return c;
}
