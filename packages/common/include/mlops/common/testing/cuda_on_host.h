// CUDA device code on the host, for tests: each emulated GPU thread is a host thread (its threadIdx
// and blockIdx thread-local), __shared__ arrays are statics (blocks run one after another, except the
// blocks of a thread-block cluster, which run together: kernels written for clusters take their
// shared memory from host_block_shared<T>(), one instance a block of the cluster), __syncthreads is a
// barrier of the block's threads, a shuffle / ballot meets the 32 threads of its warp at a barrier,
// cluster_sync() is a barrier of the cluster's threads, atomics take one lock. Include before the
// kernel header. Used by the kernel-on-host runners of vocab (tests/c/*_kernel_on_host.cpp) and
// optimizers (tests/c/kernel_on_host.cpp); like check.h it is not installed (cmake/mlops.cmake).
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
#include <optional>
#include <random>
#include <thread>
#include <vector>

#define MLOPS_CUDA_ON_HOST 1
#undef __launch_bounds__
#define __launch_bounds__(...)
static thread_local uint3 tl_threadIdx;
static thread_local uint3 tl_blockIdx;
static thread_local int tl_slot;  // the block's place in the blocks running together (its cluster rank)
static dim3 g_blockDim, g_gridDim;
#define threadIdx tl_threadIdx
#define blockIdx tl_blockIdx
#define blockDim g_blockDim
#define gridDim g_gridDim
#undef __shared__
#define __shared__ static

constexpr int kHostMaxSlots = 16;  // blocks that run together (a cluster)
static std::barrier<>* g_block_barrier[kHostMaxSlots] = {};
static std::barrier<>* g_warp_barrier[kHostMaxSlots][32] = {};
static std::barrier<>* g_cluster_barrier = nullptr;
static uint64_t g_slots[kHostMaxSlots][32][32];
static std::atomic<int> g_or[kHostMaxSlots];
static std::mutex g_atomic_mu;

static inline void __syncthreads() { g_block_barrier[tl_slot]->arrive_and_wait(); }
static inline int __syncthreads_or(int v) {
  std::barrier<>* b = g_block_barrier[tl_slot];
  if (v) g_or[tl_slot].fetch_or(1);
  b->arrive_and_wait();
  const int r = g_or[tl_slot].load();
  b->arrive_and_wait();
  if (tl_threadIdx.x == 0) g_or[tl_slot].store(0);
  b->arrive_and_wait();
  return r;
}
// Every lane publishes 8 bytes, the warp meets, each lane reads the slot of lane src(l), the warp meets.
template <class T, class Src>
static inline T warp_exchange(T v, Src src) {
  static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  g_slots[tl_slot][w][l] = bits;
  g_warp_barrier[tl_slot][w]->arrive_and_wait();
  bits = g_slots[tl_slot][w][src(l)];
  g_warp_barrier[tl_slot][w]->arrive_and_wait();
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
  g_warp_barrier[tl_slot][w]->arrive_and_wait();
  unsigned r = 0;
  for (unsigned i = 0; i < 32; ++i) r |= unsigned(g_slots[tl_slot][w][i]) << i;
  g_warp_barrier[tl_slot][w]->arrive_and_wait();
  return r;
}
static inline unsigned __match_any_sync(unsigned, unsigned v) {  // the lanes holding the same value
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  g_slots[tl_slot][w][l] = v;
  g_warp_barrier[tl_slot][w]->arrive_and_wait();
  unsigned r = 0;
  for (unsigned i = 0; i < 32; ++i) r |= unsigned(g_slots[tl_slot][w][i] == v) << i;
  g_warp_barrier[tl_slot][w]->arrive_and_wait();
  return r;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs(int(x)); }
// Thread-block clusters (sm_90): the rank is the block's slot, map_shared_rank the same object of
// another block of the cluster.
static inline unsigned cluster_rank() { return unsigned(tl_slot); }
static inline void cluster_sync() { g_cluster_barrier->arrive_and_wait(); }
// The halves of a cluster barrier (barrier.cluster.arrive / .wait): a thread arrives, may run on, and
// waits for the phase it arrived at before arriving again.
static thread_local std::optional<std::barrier<>::arrival_token> tl_cluster_token;
static inline void cluster_arrive_smem() { tl_cluster_token.emplace(g_cluster_barrier->arrive()); }
static inline void cluster_wait() {
  g_cluster_barrier->wait(std::move(*tl_cluster_token));
  tl_cluster_token.reset();
}
static inline void cluster_sync_smem() { cluster_sync(); }  // the host has one memory
// The block-shared object of the kernel that runs (one type at a time): remote_load finds a
// field's place in another block's instance from it.
static std::atomic<char*> g_block_shared_base{nullptr};
static std::atomic<size_t> g_block_shared_size{0};
template <class T>
static T& host_block_shared() {
  static T inst[kHostMaxSlots];
  g_block_shared_base.store(reinterpret_cast<char*>(inst), std::memory_order_relaxed);
  g_block_shared_size.store(sizeof(T), std::memory_order_relaxed);
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
  char* const base = g_block_shared_base.load(std::memory_order_relaxed);
  const size_t size = g_block_shared_size.load(std::memory_order_relaxed);
  const size_t off = size_t(reinterpret_cast<const char*>(local) - base) - size_t(tl_slot) * size;
  return *reinterpret_cast<const T*>(base + size_t(rank) * size + off);
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

// `n` CTAs that run together (blocks first .. first + n - 1 along x: a cluster), `threads` host
// threads each running fn().
template <class F>
static void run_blocks(uint3 first, int n, dim3 grid, int threads, F fn) {
  g_gridDim = grid;
  g_blockDim = dim3(unsigned(threads), 1, 1);
  std::barrier<> cluster_bar(n * threads);
  g_cluster_barrier = &cluster_bar;
  std::vector<std::unique_ptr<std::barrier<>>> bars;
  for (int b = 0; b < n; ++b) {
    bars.emplace_back(new std::barrier<>(threads));
    g_block_barrier[b] = bars.back().get();
    g_or[b].store(0);
    for (int w = 0; w < threads / 32; ++w) {
      bars.emplace_back(new std::barrier<>(32));
      g_warp_barrier[b][w] = bars.back().get();
    }
  }
  std::vector<std::thread> ts;
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < threads; ++i)
      ts.emplace_back([&, b, i] {
        tl_slot = b;
        tl_blockIdx = uint3{first.x + unsigned(b), first.y, first.z};
        tl_threadIdx = uint3{unsigned(i), 0, 0};
        fn();
      });
  for (auto& t : ts) t.join();
  for (auto& s : g_warp_barrier)
    for (auto& w : s) w = nullptr;
  for (auto& b : g_block_barrier) b = nullptr;
  g_cluster_barrier = nullptr;
}

// One CTA: `threads` host threads running fn().
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

