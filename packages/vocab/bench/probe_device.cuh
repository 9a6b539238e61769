// Device helpers and a cluster launch shared by the exchange probes (grid_barrier_probe.cu, cluster_exchange_probe.cu):
// a warp's maximum, the global timer, and one launch of a kernel in clusters of C CTAs (C rows of blockIdx.y). Built
// with the probes only (sm_90), never with the package.
#pragma once
#include <cstdint>

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

// kernel<<<(C, rows) in clusters of C, threads, smem>>>(args...); 1 on a CUDA error (CK's contract).
template <class... KArgs, class... Args>
static int launch_clusters(void (*kernel)(KArgs...), int C, int rows, int threads, size_t smem, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = C;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(C, rows);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  if (C > 8) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
  return 0;
}
