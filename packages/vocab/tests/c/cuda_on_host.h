// CUDA device code on the host, for tests: each emulated GPU thread is a host thread (its threadIdx
// thread-local, blockIdx set before a block's threads start), __shared__ arrays are statics (blocks
// run one after another), __syncthreads is a barrier of the block's threads, a shuffle meets the 32
// threads of its warp at a barrier, atomics take one lock. Include before the kernel header.
#pragma once
#include <cuda_runtime.h>
#include <device_launch_parameters.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#undef __launch_bounds__
#define __launch_bounds__(...)
static thread_local uint3 tl_threadIdx;
static uint3 g_blockIdx;
static dim3 g_blockDim, g_gridDim;
#define threadIdx tl_threadIdx
#define blockIdx g_blockIdx
#define blockDim g_blockDim
#define gridDim g_gridDim
#undef __shared__
#define __shared__ static

static std::barrier<>* g_block_barrier = nullptr;
static std::barrier<>* g_warp_barrier[32] = {};
static uint64_t g_slots[32][32];
static std::atomic<int> g_or{0};
static std::mutex g_atomic_mu;

static inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
static inline int __syncthreads_or(int v) {
  if (v) g_or.fetch_or(1);
  g_block_barrier->arrive_and_wait();
  const int r = g_or.load();
  g_block_barrier->arrive_and_wait();
  if (tl_threadIdx.x == 0) g_or.store(0);
  g_block_barrier->arrive_and_wait();
  return r;
}
template <class T>
static inline T __shfl_xor_sync(unsigned, T v, int off) {
  static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  g_slots[w][l] = bits;
  g_warp_barrier[w]->arrive_and_wait();
  bits = g_slots[w][l ^ unsigned(off)];
  g_warp_barrier[w]->arrive_and_wait();
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}
template <class T>
static inline T atomicAdd(T* p, T v) {
  std::lock_guard<std::mutex> g(g_atomic_mu);
  const T old = *p;
  *p = old + v;
  return old;
}
static inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  std::lock_guard<std::mutex> g(g_atomic_mu);
  const unsigned long long old = *p;
  if (v > old) *p = v;
  return old;
}
static inline int atomicOr(int* p, int v) {
  std::lock_guard<std::mutex> g(g_atomic_mu);
  const int old = *p;
  *p = old | v;
  return old;
}
static inline int atomicExch(int* p, int v) {
  std::lock_guard<std::mutex> g(g_atomic_mu);
  const int old = *p;
  *p = v;
  return old;
}
static inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
template <class T>
static inline T __ldg(const T* p) {
  return *p;
}
// mlops/common/fixed_sum.h defines the device butterfly only under nvcc: the same code here.
namespace mlops {
static inline float warp_butterfly32(float v) {
  for (int off = 16; off >= 1; off >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
}  // namespace mlops

// One CTA: `threads` host threads running fn().
template <class F>
static void run_block(uint3 block, dim3 grid, int threads, F fn) {
  g_blockIdx = block;
  g_gridDim = grid;
  g_blockDim = dim3(unsigned(threads), 1, 1);
  std::barrier<> block_bar(threads);
  std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
  for (int w = 0; w < threads / 32; ++w) {
    warp_bars.emplace_back(new std::barrier<>(32));
    g_warp_barrier[w] = warp_bars.back().get();
  }
  g_block_barrier = &block_bar;
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&, i] {
      tl_threadIdx = uint3{unsigned(i), 0, 0};
      fn();
    });
  for (auto& t : ts) t.join();
  for (auto& b : g_warp_barrier) b = nullptr;
  g_block_barrier = nullptr;
}

template <class F>
static void run_grid(dim3 grid, int threads, F fn) {
  for (unsigned y = 0; y < grid.y; ++y)
    for (unsigned x = 0; x < grid.x; ++x) run_block(uint3{x, y, 0}, grid, threads, fn);
}

