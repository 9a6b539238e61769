// CUDA device code on the host, for tests: each emulated GPU thread is a fiber (mlops/common/testing/fibers.h: one OS
// thread runs them all, a barrier yields until its last thread arrives), its threadIdx / blockIdx / cluster rank set by
// the scheduler before it resumes. __shared__ arrays are statics (blocks run one after another, except the blocks of a
// thread-block cluster, which run together: kernels written for clusters take their shared memory from
// host_block_shared<T>(), one instance a block of the cluster), __syncthreads is a barrier of the block's threads, a
// shuffle / ballot meets the 32 threads of its warp at a barrier, cluster_sync() is a barrier of the cluster's threads,
// an atomic is a plain read-modify-write (one OS thread: nothing runs between its read and its write). Include before
// the kernel header. Used by the kernel-on-host runners of vocab (tests/c/*_kernel_on_host.cpp) and optimizers
// (tests/c/kernel_on_host.cpp); like check.h it is not installed (cmake/mlops.cmake). Build with -U_FORTIFY_SOURCE
// (fibers.h says why).
#pragma once
#include <cuda_runtime.h>
#include <device_launch_parameters.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "mlops/common/testing/fibers.h"

#define MLOPS_CUDA_ON_HOST 1
#undef __launch_bounds__
#define __launch_bounds__(...)
// The running fiber's place, set by run_blocks' resume hook (the fibers share one OS thread, so thread_local would
// not tell them apart).
static uint3 tl_threadIdx;
static uint3 tl_blockIdx;
static int tl_slot;  // the block's place in the blocks running together (its cluster rank)
static dim3 g_blockDim, g_gridDim;
#define threadIdx tl_threadIdx
#define blockIdx tl_blockIdx
#define blockDim g_blockDim
#define gridDim g_gridDim
#undef __shared__
#define __shared__ static

namespace host_fibers = mlops::testing::fibers;
constexpr int kHostMaxSlots = 16;  // blocks that run together (a cluster)
constexpr int kHostMaxThreads = 1024;  // a block's threads
static host_fibers::Barrier g_block_barrier[kHostMaxSlots];
static host_fibers::Barrier g_warp_barrier[kHostMaxSlots][32];
static host_fibers::Barrier g_cluster_barrier;
static uint64_t g_slots[kHostMaxSlots][32][32];
static int g_or[kHostMaxSlots];
static unsigned g_cluster_arrival[kHostMaxSlots][kHostMaxThreads];  // cluster_arrive_smem's generation, a thread
static uint64_t g_launch = 0;  // run_blocks' launches so far: host_thread_local's storage is fresh at each

static inline void __syncthreads() { g_block_barrier[tl_slot].arrive_and_wait(); }
static inline void __syncwarp(unsigned = 0xffffffffu) { g_warp_barrier[tl_slot][tl_threadIdx.x / 32].arrive_and_wait(); }
static inline int __syncthreads_or(int v) {
  host_fibers::Barrier& b = g_block_barrier[tl_slot];
  if (v) g_or[tl_slot] = 1;
  b.arrive_and_wait();
  const int r = g_or[tl_slot];
  b.arrive_and_wait();
  if (tl_threadIdx.x == 0) g_or[tl_slot] = 0;
  b.arrive_and_wait();
  return r;
}
// A value of each emulated thread, value-initialised at each launch: what a `thread_local` meant when each emulated
// thread was an OS thread of its own (lm_head_pipe_kernel.cuh's deferred cp.async groups).
template <class T>
static T& host_thread_local() {
  static std::vector<T> v;
  static uint64_t launch = ~uint64_t(0);
  if (launch != g_launch) {
    v.assign(size_t(kHostMaxSlots) * kHostMaxThreads, T{});
    launch = g_launch;
  }
  return v[size_t(tl_slot) * kHostMaxThreads + tl_threadIdx.x];
}
// Every lane publishes 8 bytes, the warp meets, each lane reads the slot of lane src(l), the warp meets.
template <class T, class Src>
static inline T warp_exchange(T v, Src src) {
  static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  g_slots[tl_slot][w][l] = bits;
  g_warp_barrier[tl_slot][w].arrive_and_wait();
  bits = g_slots[tl_slot][w][src(l)];
  g_warp_barrier[tl_slot][w].arrive_and_wait();
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}
template <class T>
static inline T __shfl_xor_sync(unsigned, T v, int off) {
  return warp_exchange(v, [off](unsigned l) { return l ^ unsigned(off); });
}
template <class T>
static inline T __shfl_sync(unsigned, T v, int src) {
  return warp_exchange(v, [src](unsigned) { return unsigned(src) & 31u; });
}
template <class T>
static inline T __shfl_up_sync(unsigned, T v, unsigned d) {
  return warp_exchange(v, [d](unsigned l) { return l >= d ? l - d : l; });
}
static inline unsigned __ballot_sync(unsigned, int pred) {
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  g_slots[tl_slot][w][l] = pred ? 1u : 0u;
  g_warp_barrier[tl_slot][w].arrive_and_wait();
  unsigned r = 0;
  for (unsigned i = 0; i < 32; ++i) r |= unsigned(g_slots[tl_slot][w][i]) << i;
  g_warp_barrier[tl_slot][w].arrive_and_wait();
  return r;
}
static inline unsigned __match_any_sync(unsigned, unsigned v) {  // the lanes holding the same value
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  g_slots[tl_slot][w][l] = v;
  g_warp_barrier[tl_slot][w].arrive_and_wait();
  unsigned r = 0;
  for (unsigned i = 0; i < 32; ++i) r |= unsigned(g_slots[tl_slot][w][i] == v) << i;
  g_warp_barrier[tl_slot][w].arrive_and_wait();
  return r;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs(int(x)); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
// Thread-block clusters (sm_90): the rank is the block's slot, map_shared_rank the same object of
// another block of the cluster.
static inline unsigned cluster_rank() { return unsigned(tl_slot); }
static inline void cluster_sync() { g_cluster_barrier.arrive_and_wait(); }
// The halves of a cluster barrier (barrier.cluster.arrive / .wait): a thread arrives, may run on, and
// waits for the phase it arrived at before arriving again.
static inline void cluster_arrive_smem() {
  g_cluster_arrival[tl_slot][tl_threadIdx.x] = g_cluster_barrier.arrive();
}
static inline void cluster_wait() { g_cluster_barrier.wait(g_cluster_arrival[tl_slot][tl_threadIdx.x]); }
static inline void cluster_sync_smem() { cluster_sync(); }  // the host has one memory
// The block-shared object of the kernel that runs (one type at a time): remote_load finds a
// field's place in another block's instance from it.
static char* g_block_shared_base = nullptr;
static size_t g_block_shared_size = 0;
template <class T>
static T& host_block_shared() {
  static T inst[kHostMaxSlots];
  g_block_shared_base = reinterpret_cast<char*>(inst);
  g_block_shared_size = sizeof(T);
  return inst[tl_slot];
}
// Dynamic shared memory (extern __shared__): a block's buffer of the size set by
// set_host_dynamic_shared() before the launch (16-byte aligned, as the device's).
static std::vector<float4> g_dyn_shared[kHostMaxSlots];
static inline void set_host_dynamic_shared(size_t bytes) {
  for (auto& b : g_dyn_shared) b.assign((bytes + 15) / 16, float4{});
}
template <class T>
static T* host_dynamic_shared() {
  return reinterpret_cast<T*>(g_dyn_shared[tl_slot].data());
}
template <class T>
static T* cluster_map(T* local, unsigned rank) {
  return local - tl_slot + int(rank);
}
// ld.shared::cluster of mapa(local, rank): the same byte of block `rank`'s block-shared object.
template <class T>
static T remote_load(const T* local, unsigned rank) {
  char* const base = g_block_shared_base;
  const size_t size = g_block_shared_size;
  const size_t off = size_t(reinterpret_cast<const char*>(local) - base) - size_t(tl_slot) * size;
  return *reinterpret_cast<const T*>(base + size_t(rank) * size + off);
}
template <class T>
static inline T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
static inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  if (v > old) *p = v;
  return old;
}
static inline int atomicOr(int* p, int v) {
  const int old = *p;
  *p = old | v;
  return old;
}
static inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
  const unsigned old = *p;
  if (old == cmp) *p = v;
  return old;
}
static inline int atomicExch(int* p, int v) {
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

// `n` CTAs that run together (blocks first .. first + n - 1 along x: a cluster), `threads` fibers
// each running fn().
template <class F>
static void run_blocks(uint3 first, int n, dim3 grid, int threads, F fn) {
  if (n > kHostMaxSlots || threads > kHostMaxThreads || threads % 32 != 0) {
    std::printf("run_blocks: %d blocks of %d threads (at most %d of %d, whole warps)\n", n, threads, kHostMaxSlots,
                kHostMaxThreads);
    std::abort();
  }
  g_gridDim = grid;
  g_blockDim = dim3(unsigned(threads), 1, 1);
  ++g_launch;
  g_cluster_barrier = host_fibers::Barrier(unsigned(n * threads));
  for (int b = 0; b < n; ++b) {
    g_block_barrier[b] = host_fibers::Barrier(unsigned(threads));
    g_or[b] = 0;
    for (int w = 0; w < threads / 32; ++w) g_warp_barrier[b][w] = host_fibers::Barrier(32);
  }
  host_fibers::run(
      n * threads, [&](int) { fn(); },
      [&](int i) {
        tl_slot = i / threads;
        tl_blockIdx = uint3{first.x + unsigned(tl_slot), first.y, first.z};
        tl_threadIdx = uint3{unsigned(i % threads), 0, 0};
      });
}

// One CTA: `threads` fibers running fn().
template <class F>
static void run_block(uint3 block, dim3 grid, int threads, F fn) {
  run_blocks(block, 1, grid, threads, fn);
}

template <class F>
static void run_grid(dim3 grid, int threads, F fn) {
  for (unsigned y = 0; y < grid.y; ++y)
    for (unsigned x = 0; x < grid.x; ++x) run_block(uint3{x, y, 0}, grid, threads, fn);
}

// A grid of clusters of `cluster` CTAs along x (grid.x a multiple of it), a cluster at a time.
template <class F>
static void run_cluster_grid(dim3 grid, int cluster, int threads, F fn) {
  for (unsigned y = 0; y < grid.y; ++y)
    for (unsigned x = 0; x < grid.x; x += unsigned(cluster)) run_blocks(uint3{x, y, 0}, cluster, grid, threads, fn);
}

