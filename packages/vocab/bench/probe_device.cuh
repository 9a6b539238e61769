// Device helpers and a cluster launch shared by the bench probes (grid_barrier_probe.cu, cluster_exchange_probe.cu,
// sample_timeline_probe.cu, cluster_occupancy_probe.cu): a warp's maximum, the global timer, distributed shared memory
// as the sampler reads it, the value rounds of a cluster, and one launch of a kernel in clusters of C CTAs (rows of
// blockIdx.y). Built with the probes only (sm_90), never with the package.
#pragma once
#include <cstdint>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "probe_check.h"

// The largest of a warp's 32 values, in every lane.
__device__ __forceinline__ uint64_t warp_max(uint64_t m) {
  for (int o = 16; o; o >>= 1) {
    const uint64_t x = __shfl_xor_sync(0xffffffffu, m, o);
    m = x > m ? x : m;
  }
  return m;
}

__device__ __forceinline__ uint64_t gtime() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The launch configuration of a grid (C, rows) in clusters of C CTAs; `at` (the caller's) holds its one attribute.
static cudaLaunchConfig_t cluster_config(cudaLaunchAttribute* at, int C, int rows, int threads, size_t smem) {
  cudaLaunchConfig_t cfg = {};
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = C;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(C, rows);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cfg;
}

// kernel<<<(C, rows) in clusters of C, threads, smem>>>(args...); 1 on a CUDA error (CK's contract).
template <class... KArgs, class... Args>
static int launch_clusters(void (*kernel)(KArgs...), int C, int rows, int threads, size_t smem, Args... args) {
  cudaLaunchAttribute at[1];
  const cudaLaunchConfig_t cfg = cluster_config(at, C, rows, threads, smem);
  if (C > 8) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
  return 0;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
// The shared::cluster address of the same variable in CTA `rank`.
__device__ __forceinline__ uint32_t mapa(uint32_t a, unsigned rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
// The sampler's lean forms' side of an exchange (sample_cluster_shared.cuh: cluster_sync_smem, remote_load): the
// barrier releasing this CTA's shared memory only (nvcc >= 12.8), and reads through mapa + ld.shared::cluster.
__device__ __forceinline__ void lean_cluster_sync() {
  asm volatile("fence.release.sync_restrict::shared::cta.cluster;\n barrier.cluster.arrive.relaxed;\n"
               " barrier.cluster.wait;" ::: "memory");
}
__device__ __forceinline__ uint64_t ld_cluster_u64(const uint64_t* local, unsigned rank) {
  uint64_t v;
  asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(mapa(smem_u32(local), rank)) : "memory");
  return v;
}

// `rounds` exchanges of a 64-bit value a CTA in a cluster: the value in shared memory, the cluster barrier, lane r of
// warp 0 reads CTA r's value; the max + 1 is every CTA's next value (C + rounds at the end, into result[CTA]). kLean:
// the sampler's lean barrier and reads (above); else cooperative_groups' sync (arrive.release / wait.acquire of every
// state space) and map_shared_rank (grid_barrier_probe.cu's, run 185). out_ns: the launch's first CTA's time.
template <bool kLean>
__global__ void cluster_value_rounds(int rounds, uint64_t* out_ns, uint64_t* result) {
  namespace cg = cooperative_groups;
  __shared__ uint64_t pubv[2];
  __shared__ uint64_t s_val;
  cg::cluster_group cl = cg::this_cluster();
  const int tid = threadIdx.x;
  const unsigned C = cl.num_blocks();
  uint64_t acc = cl.block_rank() + 1;
  const uint64_t t0 = gtime();
  for (int r = 0; r < rounds; ++r) {
    if (tid == 0) pubv[r & 1] = acc;
    if constexpr (kLean) lean_cluster_sync();
    else cl.sync();
    if (tid < 32) {
      uint64_t m = 0;
      if (unsigned(tid) < C) m = kLean ? ld_cluster_u64(&pubv[r & 1], tid) : *cl.map_shared_rank(&pubv[r & 1], tid);
      m = warp_max(m);
      if (tid == 0) s_val = m;
    }
    __syncthreads();
    acc = s_val + 1;
  }
  cl.sync();  // no CTA leaves while another may still read its shared memory
  if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0) out_ns[0] = gtime() - t0;
  if (tid == 0) result[blockIdx.y * C + cl.block_rank()] = acc;
}
