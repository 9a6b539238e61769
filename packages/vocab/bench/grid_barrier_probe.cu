// What a barrier of G CTAs through global memory costs on this GPU, against a thread-block cluster's
// barrier: the question behind a sampler whose row runs on more SMs than a cluster holds (16 at most
// on sm_90). Each round publishes one 64-bit value a CTA and reads the G values back after the barrier
// (the exchange a sampler round needs: max, kept sums, histogram totals), so a round is a release, an
// arrival, a wait and the reads. Times by %globaltimer inside the kernel (rounds / call) and by events
// around a graph of one launch (what a caller sees). Not part of the package; built and run by hand:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/gbp packages/vocab/bench/grid_barrier_probe.cu && /tmp/gbp
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include <cooperative_groups.h>

#include "probe_device.cuh"  // warp_max, gtime, launch_clusters, CK
__device__ __forceinline__ void red_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// G CTAs a group (blockIdx.y a group: rows of a batch), `rounds` exchanges; counter[group] zero at launch.
// pub[group][round % 2][G]: the double buffer lets a fast CTA write round r+1 while a slow one reads r.
__global__ void grid_rounds(unsigned* counter, uint64_t* pub, int G, int rounds, uint64_t* out_ns, uint64_t* sink) {
  __shared__ uint64_t s_val;
  const int g = blockIdx.y, b = blockIdx.x, tid = threadIdx.x;
  unsigned* ctr = counter + g;
  uint64_t acc = b + 1;
  const uint64_t t0 = gtime();
  for (int r = 0; r < rounds; ++r) {
    uint64_t* buf = pub + (size_t(g) * 2 + (r & 1)) * G;
    __syncthreads();
    if (tid == 0) {
      buf[b] = acc;
      red_release(ctr, 1u);  // release: the value above is visible to whoever acquires the count
      const unsigned target = unsigned(G) * unsigned(r + 1);
      while (ld_acquire(ctr) < target) {
      }
    }
    __syncthreads();
    if (tid < 32) {  // warp 0 reads the G values (the exchange), reduces, publishes to the CTA
      uint64_t m = 0;
      for (int i = tid; i < G; i += 32) {
        const uint64_t v = __ldcg(buf + i);
        m = v > m ? v : m;
      }
      m = warp_max(m);
      if (tid == 0) s_val = m;
    }
    __syncthreads();
    acc = s_val + 1;
  }
  if (tid == 0 && b == 0) out_ns[g] = gtime() - t0;
  if (tid == 0 && acc == 0) *sink = acc;
}

// The same rounds in a cluster of C CTAs: probe_device.cuh's cluster_value_rounds<false> (cooperative_groups' cluster
// barrier, arrive.release / wait.acquire; lane r of warp 0 reads CTA r's value through distributed shared memory).

static int run_grid(int G, int rows, int threads, int rounds, unsigned* ctr, uint64_t* pub, uint64_t* ns,
                    uint64_t* sink, double* per_round_us, double* graph_us) {
  // in-kernel time per round: one launch of `rounds`, minus one of 1 round
  uint64_t h[2];
  for (int k = 0; k < 2; ++k) {
    const int n = k == 0 ? 1 : rounds;
    CK(cudaMemset(ctr, 0, sizeof(unsigned) * rows));
    grid_rounds<<<dim3(G, rows), threads>>>(ctr, pub, G, n, ns, sink);
    CK(cudaDeviceSynchronize());
    uint64_t v[128];
    CK(cudaMemcpy(v, ns, sizeof(uint64_t) * rows, cudaMemcpyDeviceToHost));
    uint64_t mx = 0;
    for (int r = 0; r < rows; ++r) mx = v[r] > mx ? v[r] : mx;
    h[k] = mx;
  }
  *per_round_us = double(h[1] - h[0]) / double(rounds - 1) / 1e3;
  // a graph of one launch of 4 rounds (memset of the counters + the kernel), events around its replay, median of 200
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaGraph_t gr;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemsetAsync(ctr, 0, sizeof(unsigned) * rows, s));
  grid_rounds<<<dim3(G, rows), threads, 0, s>>>(ctr, pub, G, 4, ns, sink);
  CK(cudaStreamEndCapture(s, &gr));
  CK(cudaGraphInstantiate(&ge, gr, 0));
  float t[200];
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 20; ++i) CK(cudaGraphLaunch(ge, s));
  for (int i = 0; i < 200; ++i) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&t[i], e0, e1));
  }
  for (int i = 0; i < 200; ++i)  // insertion sort for the median
    for (int j = i; j > 0 && t[j] < t[j - 1]; --j) {
      const float x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  *graph_us = t[100] * 1e3;
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(gr));
  CK(cudaStreamDestroy(s));
  return 0;
}

static int run_cluster(int C, int rows, int threads, int rounds, uint64_t* ns, uint64_t* sink, double* per_round_us) {
  uint64_t h[2];
  for (int k = 0; k < 2; ++k) {
    if (launch_clusters(cluster_value_rounds<false>, C, rows, threads, 0, k == 0 ? 1 : rounds, ns, sink)) return 1;
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&h[k], ns, sizeof(uint64_t), cudaMemcpyDeviceToHost));
  }
  *per_round_us = double(h[1] - h[0]) / double(rounds - 1) / 1e3;
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  unsigned* ctr;
  uint64_t *pub, *ns, *sink;
  CK(cudaMalloc(&ctr, 256 * sizeof(unsigned)));
  CK(cudaMalloc(&pub, 256 * 2 * 256 * sizeof(uint64_t)));
  CK(cudaMalloc(&ns, 256 * sizeof(uint64_t)));
  CK(cudaMalloc(&sink, sizeof(uint64_t) * 64 * 16));  // the cluster rounds write each CTA's value (64 x 8 at most)
  const int rounds = 201;
  std::printf("global-memory barrier + exchange of G values (%d rounds), 512 threads a CTA:\n", rounds - 1);
  std::printf("  G  rows  us/round  graph-of-one(4 rounds) us\n");
  const int cases[][2] = {{8, 1}, {16, 1}, {32, 1}, {64, 1}, {128, 1}, {132, 1}, {16, 8}, {64, 2}, {2, 64}, {4, 32}};
  for (const auto& c : cases) {
    double pr = 0, gu = 0;
    if (run_grid(c[0], c[1], 512, rounds, ctr, pub, ns, sink, &pr, &gu)) return 1;
    std::printf("%4d %4d  %7.3f  %7.2f\n", c[0], c[1], pr, gu);
  }
  std::printf("cluster barrier + DSMEM exchange, 512 threads a CTA:\n  C  rows  us/round\n");
  const int ccases[][2] = {{8, 1}, {16, 1}, {16, 8}, {8, 64}};
  for (const auto& c : ccases) {
    double pr = 0;
    if (run_cluster(c[0], c[1], 512, rounds, ns, sink, &pr)) return 1;
    std::printf("%4d %4d  %7.3f\n", c[0], c[1], pr);
  }
  return 0;
}
