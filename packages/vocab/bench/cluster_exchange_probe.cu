// How a thread-block cluster's CTAs should exchange a round's values: the question behind the sampler's B = 1 floor
// (session 34's timeline: the max exchange 1.1 - 1.2 us of every mode, and each later round of top-k / top-p pays one
// more). The sampler's way is a cluster barrier (barrier.cluster arrive.release / wait.acquire) and then reads of the
// other CTAs' shared memory (a second trip across the cluster). The alternative timed here pushes instead: each CTA
// writes its value into every CTA's shared memory with st.async (or its 1 KB of counts with one bulk copy a
// destination), each write completing bytes on the destination's mbarrier, and each CTA waits on its own mbarrier: one
// trip, no cluster-wide barrier. Two payloads, the two the sampler exchanges: a 64-bit value (the row max / a mass
// total; the next value is the max + 1) and 256 32-bit counts (a radix round's histogram; the next counts are the sums
// + the bin). Per round in us from %globaltimer (a launch of N rounds less one of 1), and every CTA's result checked
// against the host's. Not part of the package; built and run by hand (sm_90):
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cxp packages/vocab/bench/cluster_exchange_probe.cu && /tmp/cxp
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include <cooperative_groups.h>

#include "probe_device.cuh"  // warp_max, gtime, mapa, lean_cluster_sync, cluster_value_rounds, launch_clusters, CK

namespace cg = cooperative_groups;

constexpr int kMaxC = 16;  // the largest (non-portable) cluster on sm_90
constexpr int kBins = 256;

__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
// This CTA's one arrival of the phase, and the bytes the other CTAs' writes will complete on it.
__device__ __forceinline__ void mbar_expect(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(smem_u32(b)), "r"(parity)
                 : "memory");
}
// v into the shared::cluster address dst, its 8 bytes completed on the mbarrier at the shared::cluster address bar.
__device__ __forceinline__ void st_async_u64(uint32_t dst, uint64_t v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(dst), "l"(v), "r"(bar)
               : "memory");
}
// `bytes` of this CTA's shared memory at src into the shared::cluster address dst, completed on bar (there).
__device__ __forceinline__ void bulk_to_cluster(uint32_t dst, const void* src, unsigned bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "r"(smem_u32(src)), "r"(bytes), "r"(bar)
               : "memory");
}

__device__ __forceinline__ uint32_t ld_cluster_u32(const uint32_t* local, unsigned rank) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(mapa(smem_u32(local), rank)) : "memory");
  return v;
}

// Both mbarriers (a round's parity picks one) counted for one local arrival, and visible to the cluster before any
// CTA pushes (the cluster barrier after the init's fence).
__device__ __forceinline__ void init_bars(uint64_t (&bar)[2], cg::cluster_group& cl) {
  if (threadIdx.x == 0) {
    mbar_init(&bar[0], 1);
    mbar_init(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cl.sync();
}

// ---- a 64-bit value a CTA: the max of the C values, + 1, is every CTA's next value (C + rounds at the end)
// The sampler's way: probe_device.cuh's cluster_value_rounds<true> (the lean cluster barrier, then lane r of warp 0
// reads CTA r's value).

// Pushed: lane q of warp 0 st.async's the value into CTA q's slot[round parity][my rank]; warp 0 waits for the C
// values on this CTA's mbarrier of that parity. A slot of parity b is written again two rounds later, by a CTA that
// has seen this CTA's next push, which it sends after the reads below (so no slot is overwritten while read).
__global__ void value_push(int rounds, uint64_t* out_ns, uint64_t* result) {
  __shared__ uint64_t slot[2][kMaxC];
  __shared__ alignas(8) uint64_t bar[2];
  __shared__ uint64_t s_val;
  cg::cluster_group cl = cg::this_cluster();
  const int tid = threadIdx.x;
  const unsigned C = cl.num_blocks(), me = cl.block_rank();
  init_bars(bar, cl);
  uint64_t acc = me + 1;
  const uint64_t t0 = gtime();
  for (int r = 0; r < rounds; ++r) {
    const int b = r & 1;
    if (tid < 32) {
      if (tid == 0) mbar_expect(&bar[b], 8u * C);
      if (unsigned(tid) < C) st_async_u64(mapa(smem_u32(&slot[b][me]), tid), acc, mapa(smem_u32(&bar[b]), tid));
      mbar_wait(&bar[b], unsigned(r >> 1) & 1u);
      const uint64_t m = warp_max(unsigned(tid) < C ? slot[b][tid] : 0);
      if (tid == 0) s_val = m;
    }
    __syncthreads();
    acc = s_val + 1;
  }
  cl.sync();
  if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0) out_ns[0] = gtime() - t0;
  if (tid == 0) result[blockIdx.y * C + me] = acc;
}

// ---- 256 counts a CTA: thread i < 256 holds bin i; the next count is (the C counts' sum + i) mod 2^16
__device__ __forceinline__ uint32_t first_count(unsigned rank, int i) { return (rank * 7u + unsigned(i)) & 255u; }
__device__ __forceinline__ uint32_t next_count(uint32_t sum, int i) { return (sum + unsigned(i)) & 0xffffu; }

// The sampler's way (its first top-k round): counts in shared memory, the lean cluster barrier, thread i reads bin i
// of the C CTAs.
__global__ void hist_pull(int rounds, uint64_t* out_ns, uint64_t* result) {
  __shared__ uint32_t cnt[2][kBins];
  cg::cluster_group cl = cg::this_cluster();
  const int tid = threadIdx.x;
  const unsigned C = cl.num_blocks(), me = cl.block_rank();
  uint32_t x = tid < kBins ? first_count(me, tid) : 0;
  const uint64_t t0 = gtime();
  for (int r = 0; r < rounds; ++r) {
    const int b = r & 1;
    if (tid < kBins) cnt[b][tid] = x;
    lean_cluster_sync();
    if (tid < kBins) {
      uint32_t s = 0;
      for (unsigned q = 0; q < C; ++q) s += ld_cluster_u32(&cnt[b][tid], q);
      x = next_count(s, tid);
    }
  }
  cl.sync();
  if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0) out_ns[0] = gtime() - t0;
  if (tid < kBins) result[(size_t(blockIdx.y) * C + me) * kBins + tid] = x;
}

// Pushed: the counts into outbox[parity] (then the generic-proxy writes fenced for the async proxy), thread q < C
// bulk-copies the 1 KB into CTA q's inbox[parity][my rank], completing on its mbarrier; every counting thread waits on
// this CTA's mbarrier and sums the C inboxes. outbox / inbox of parity b are written again two rounds later, after
// every CTA has pushed the round between (so after these reads, and after these copies have landed).
__global__ void hist_push(int rounds, uint64_t* out_ns, uint64_t* result) {
  extern __shared__ __align__(128) uint32_t dyn[];
  uint32_t(*inbox)[kMaxC][kBins] = reinterpret_cast<uint32_t(*)[kMaxC][kBins]>(dyn);  // [2][kMaxC][kBins]
  __shared__ __align__(16) uint32_t outbox[2][kBins];
  __shared__ alignas(8) uint64_t bar[2];
  cg::cluster_group cl = cg::this_cluster();
  const int tid = threadIdx.x;
  const unsigned C = cl.num_blocks(), me = cl.block_rank();
  init_bars(bar, cl);
  uint32_t x = tid < kBins ? first_count(me, tid) : 0;
  const uint64_t t0 = gtime();
  for (int r = 0; r < rounds; ++r) {
    const int b = r & 1;
    if (tid < kBins) outbox[b][tid] = x;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the writes above, seen by the bulk copies
    __syncthreads();
    if (tid == 0) mbar_expect(&bar[b], unsigned(sizeof(outbox[0])) * C);
    if (unsigned(tid) < C)
      bulk_to_cluster(mapa(smem_u32(&inbox[b][me][0]), tid), &outbox[b][0], unsigned(sizeof(outbox[0])),
                      mapa(smem_u32(&bar[b]), tid));
    if (tid < kBins) {
      mbar_wait(&bar[b], unsigned(r >> 1) & 1u);
      uint32_t s = 0;
      for (unsigned q = 0; q < C; ++q) s += inbox[b][q][tid];
      x = next_count(s, tid);
    }
  }
  cl.sync();
  if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0) out_ns[0] = gtime() - t0;
  if (tid < kBins) result[(size_t(blockIdx.y) * C + me) * kBins + tid] = x;
}

// ---- host
// What every CTA must end with: the value C + rounds, the counts by the same recurrence on the host.
static uint64_t expect_value(int C, int rounds) { return uint64_t(C) + uint64_t(rounds); }
static void expect_hist(int C, int rounds, uint32_t (&x)[kBins]) {
  for (int i = 0; i < kBins; ++i) {
    uint32_t s = 0;
    for (int q = 0; q < C; ++q) s += (uint32_t(q) * 7u + uint32_t(i)) & 255u;
    x[i] = (s + uint32_t(i)) & 0xffffu;  // after round 1 every CTA holds the same counts
  }
  for (int r = 1; r < rounds; ++r)
    for (int i = 0; i < kBins; ++i) x[i] = (uint32_t(C) * x[i] + uint32_t(i)) & 0xffffu;
}

// Per-round us of one kernel (a launch of `rounds` less one of 1) and whether every CTA's result was right.
static int time_kernel(void (*k)(int, uint64_t*, uint64_t*), bool hist, int C, int rows, int rounds, size_t smem,
                       uint64_t* ns, uint64_t* res, double* us, int* bad) {
  uint64_t h[2];
  *bad = 0;
  static uint64_t got[64 * kMaxC * kBins];
  for (int t = 0; t < 2; ++t) {
    const int n = t == 0 ? 1 : rounds;
    if (launch_clusters(k, C, rows, 512, smem, n, ns, res)) return 1;
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&h[t], ns, sizeof(uint64_t), cudaMemcpyDeviceToHost));
    const size_t per = hist ? kBins : 1;
    CK(cudaMemcpy(got, res, sizeof(uint64_t) * size_t(rows) * C * per, cudaMemcpyDeviceToHost));
    uint32_t want[kBins];
    if (hist) expect_hist(C, n, want);
    for (size_t i = 0; i < size_t(rows) * C * per; ++i)
      *bad += got[i] != (hist ? uint64_t(want[i % kBins]) : expect_value(C, n));
  }
  *us = double(h[1] - h[0]) / double(rounds - 1) / 1e3;
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs; clusters of C CTAs of 512 threads, us a round (201 rounds less 1), results checked\n",
              prop.name, prop.multiProcessorCount);
  uint64_t *ns, *res;
  CK(cudaMalloc(&ns, sizeof(uint64_t)));
  CK(cudaMalloc(&res, sizeof(uint64_t) * 64 * kMaxC * kBins));
  const size_t inbox_bytes = sizeof(uint32_t) * 2 * kMaxC * kBins;  // 32 KB of dynamic shared memory
  CK(cudaFuncSetAttribute(hist_push, cudaFuncAttributeMaxDynamicSharedMemorySize, int(inbox_bytes)));
  std::printf("   C  rows  value: pull   push   | 256 counts: pull   push   | wrong results\n");
  const int cases[][2] = {{8, 1}, {16, 1}, {16, 8}, {8, 64}};
  for (const auto& c : cases) {
    double t[4];
    int bad[4];
    if (time_kernel(cluster_value_rounds<true>, false, c[0], c[1], 201, 0, ns, res, &t[0], &bad[0]) ||
        time_kernel(value_push, false, c[0], c[1], 201, 0, ns, res, &t[1], &bad[1]) ||
        time_kernel(hist_pull, true, c[0], c[1], 201, 0, ns, res, &t[2], &bad[2]) ||
        time_kernel(hist_push, true, c[0], c[1], 201, inbox_bytes, ns, res, &t[3], &bad[3]))
      return 1;
    std::printf("%4d %5d  %11.3f %6.3f   | %16.3f %6.3f   | %d %d %d %d\n", c[0], c[1], t[0], t[1], t[2], t[3], bad[0],
                bad[1], bad[2], bad[3]);
  }
  return 0;
}
