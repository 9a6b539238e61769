// How many thread-block clusters of C CTAs (512 threads) the device runs at once, for the shared memory a CTA of the
// staged sampler takes (its slice of V = 151936 fp32 logits, ceil(V / C) * 4 bytes, beside the 31.36 KB of static
// shared memory that GPU run 196's ncu reported), and so in how many rounds a batch of B rows runs (one cluster a row).
// Why (session 36): run 196 found Max Active Clusters 30 for the planner's B = 64 launches (clusters of 8 at 2 CTAs an
// SM: 264 CTA slots, but a cluster must fit in one GPC's free slots), so B = 64 runs in three rounds (30 + 30 + 4),
// not the two that 264 slots suggest. cudaOccupancyMaxActiveClusters answers for other cluster sizes and footprints.
// Not part of the package; built and run by hand on an sm_90 GPU:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cop packages/vocab/bench/cluster_occupancy_probe.cu && /tmp/cop
#include <cstdio>

#include "probe_device.cuh"  // cluster_config, CK

// 512 threads; registers as the sampler's (64: __launch_bounds__(512, 2) caps them there), shared memory all dynamic
// (the occupancy calculator adds static and dynamic alike).
__global__ void __launch_bounds__(512, 2) probe_kernel(float* out) {
  extern __shared__ float s[];
  s[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  if (out) out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

// rounds of B rows (one cluster a row) at `active` clusters in flight
static int rounds(int B, int active) { return active > 0 ? (B + active - 1) / active : -1; }

static int clusters(int C, size_t smem, int* per_sm, int* active) {
  CK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  if (C > 8) CK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, probe_kernel, 512, smem));
  cudaLaunchAttribute at[1];
  const cudaLaunchConfig_t cfg = cluster_config(at, C, 64, 512, smem);
  CK(cudaOccupancyMaxActiveClusters(active, probe_kernel, &cfg));
  return 0;
}

int main() {
  cudaDeviceProp d;
  CK(cudaGetDeviceProperties(&d, 0));
  std::printf("device %s, %d SMs, %zu KB shared memory an SM, %zu KB a block at most (opt-in)\n", d.name,
              d.multiProcessorCount, d.sharedMemPerMultiprocessor / 1024, d.sharedMemPerBlockOptin / 1024);
  const long V = 151936;
  const size_t kStatic = 32113;  // 31.36 KB: run 196's static shared memory a CTA
  std::printf("   C  static  slice KB  CTA KB  CTAs/SM  clusters  rounds B=64  B=32  B=8\n");
  const int Cs[] = {2, 3, 4, 5, 6, 7, 8, 16};
  // the staged sampler's footprint, then the same with 4 KB less static memory, then no slice (an unstaged form)
  const size_t statics[] = {kStatic, kStatic - 4096};
  for (size_t st : statics)
    for (int C : Cs) {
      const size_t slice = size_t((V + C - 1) / C) * 4, smem = st + slice;
      if (smem > d.sharedMemPerBlockOptin) {
        std::printf("  %2d  %6.2f  %8.1f  %6.1f  (over a block's limit)\n", C, st / 1024.0, slice / 1024.0, smem / 1024.0);
        continue;
      }
      int per_sm = 0, active = 0;
      if (clusters(C, smem, &per_sm, &active)) return 1;
      std::printf("  %2d  %6.2f  %8.1f  %6.1f  %7d  %8d  %11d  %4d  %3d\n", C, st / 1024.0, slice / 1024.0,
                  smem / 1024.0, per_sm, active, rounds(64, active), rounds(32, active), rounds(8, active));
    }
  // an unstaged form (no slice): 2 CTAs an SM, as the sampler's 64 registers a thread allow; this probe kernel needs
  // few registers, so 100 KB of shared memory stands in for that limit (3 CTAs an SM would need <= ~77 KB each)
  for (int C : Cs) {
    int per_sm = 0, active = 0;
    if (clusters(C, 100 * 1024, &per_sm, &active)) return 1;
    std::printf("  %2d  unstaged, 2 an SM  %7d  %8d  %11d  %4d  %3d\n", C, per_sm, active, rounds(64, active),
                rounds(32, active), rounds(8, active));
  }
  return 0;
}
