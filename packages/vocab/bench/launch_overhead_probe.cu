// What a B = 1 sampler call pays outside its CTAs (session 46): the bench reads the targets on CUDA events around a
// graph replay (tools/testing/mlops_bench.py: a ~50 us spin kernel first, so the host has queued the call; then
// event, replay, event; median of 200), and run 222's planned calls read 2.5 - 2.8 us above their CUPTI kernel time
// and CUPTI 1.1 - 2.5 us above the timeline probe's in-kernel span. Here the same measurement of kernels that do
// nothing but what the sampler's launch asks of the GPU: a cluster of 16 CTAs of 512 threads (non-portable), the
// sampler's static shared memory and the staged slice's dynamic bytes, 0 .. 8 cluster barriers; against a plain
// one-CTA kernel. Each line: events (median), the in-kernel span (first CTA's start to last CTA's end, %globaltimer,
// median) and their difference. Not part of the package; built and run by hand on an sm_90 GPU:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/lop packages/vocab/bench/launch_overhead_probe.cu && /tmp/lop
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "probe_device.cuh"  // gtime, lean_cluster_sync, cluster_config, CK

// span[0]: the earliest CTA start, span[1]: the latest CTA end (ns); reset before each timed launch (two memsets before
// the spin kernel: run 224's first form reset it by a memcpy node in the graph, from a host array gone by the replay).
__device__ __forceinline__ void span_start(unsigned long long* span) {
  if (threadIdx.x == 0) atomicMin(&span[0], (unsigned long long)gtime());
}
__device__ __forceinline__ void span_end(unsigned long long* span) {
  if (threadIdx.x == 0) atomicMax(&span[1], (unsigned long long)gtime());
}

// S bytes of static shared memory (the sampler's ClusterShared<512> is 31 360 bytes), touched
// so that ptxas keeps it; `barriers` lean cluster barriers (the sampler's form, sample_cluster_shared.cuh).
template <int S>
__global__ void k_cluster(unsigned long long* span, int barriers, int touch) {
  __shared__ alignas(16) unsigned char st[S];
  extern __shared__ unsigned char dyn[];
  span_start(span);
  if (touch) st[threadIdx.x % S] = dyn[threadIdx.x];
  for (int b = 0; b < barriers; ++b) lean_cluster_sync();
  span_end(span);
}

__global__ void k_plain(unsigned long long* span) {
  span_start(span);
  span_end(span);
}

// The bench's lead: ~50 us of one spinning CTA (torch.cuda._sleep's role).
__global__ void k_spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

struct Case {
  const char* name;
  int C, threads;  // C = 0: k_plain<<<1, 32>>>; C = 1: k_plain<<<16, 512>>> (no cluster)
  size_t dyn;
  int barriers;
};

template <int S>
static int capture(const Case& c, unsigned long long* span, cudaStream_t s, cudaGraphExec_t* exec) {
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (c.C == 0) {
    k_plain<<<1, 32, 0, s>>>(span);
  } else if (c.C == 1) {
    k_plain<<<16, 512, 0, s>>>(span);
  } else {
    cudaLaunchAttribute at[1];
    cudaLaunchConfig_t cfg = cluster_config(at, c.C, 1, c.threads, c.dyn);
    cfg.stream = s;
    CK(cudaLaunchKernelEx(&cfg, k_cluster<S>, span, c.barriers, 0));
  }
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(exec, g, 0));
  CK(cudaGraphDestroy(g));
  return 0;
}

template <int S>
static int run(const Case& c, long long spin_cycles) {
  if (c.C > 1) {
    CK(cudaFuncSetAttribute(k_cluster<S>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CK(cudaFuncSetAttribute(k_cluster<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(c.dyn)));
  }
  unsigned long long* span;
  unsigned long long* host;
  CK(cudaMalloc(&span, 2 * sizeof(unsigned long long)));
  CK(cudaMallocHost(&host, 2 * sizeof(unsigned long long)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraphExec_t exec;
  if (capture<S>(c, span, s, &exec)) return 1;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  constexpr int kReps = 200;
  std::vector<float> ev, sp;
  for (int i = 0; i < 10 + kReps; ++i) {
    CK(cudaMemsetAsync(span, 0xff, sizeof(unsigned long long), s));  // the span's reset, outside the timed region
    CK(cudaMemsetAsync(span + 1, 0, sizeof(unsigned long long), s));
    k_spin<<<1, 32, 0, s>>>(spin_cycles);
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaMemcpyAsync(host, span, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 10) ev.push_back(ms * 1e3f), sp.push_back(float(host[1] - host[0]) * 1e-3f);
  }
  std::sort(ev.begin(), ev.end());
  std::sort(sp.begin(), sp.end());
  std::printf("  %-44s %7.2f %7.2f %7.2f\n", c.name, ev[kReps / 2], sp[kReps / 2], ev[kReps / 2] - sp[kReps / 2]);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(span));
  CK(cudaFreeHost(host));
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const long long spin = (long long)(50e-6 * khz * 1e3);  // ~50 us at the reported clock
  std::printf("%s, %d SMs; events around a graph replay after a ~50 us spin, median of 200 (us)\n", prop.name,
              prop.multiProcessorCount);
  std::printf("  %-44s %7s %7s %7s\n", "case", "events", "span", "outside");
  // The staged slice of a cluster16 CTA at V = 151936: 9 496 floats (37 984 bytes); cluster8: 75 968.
  constexpr int kStatic = 31360;  // sizeof(ClusterShared<512>) (the host runner's build, session 46)
  const Case cases[] = {
      {"plain <<<1, 32>>>", 0, 32, 0, 0},
      {"plain <<<16, 512>>>", 1, 512, 0, 0},
      {"cluster16 x 512, 0 dyn, no barrier", 16, 512, 0, 0},
      {"cluster16 x 512, 38 KB dyn, no barrier", 16, 512, 37984, 0},
      {"cluster16 x 512, 38 KB dyn, 1 barrier", 16, 512, 37984, 1},
      {"cluster16 x 512, 38 KB dyn, 4 barriers", 16, 512, 37984, 4},
      {"cluster16 x 512, 38 KB dyn, 8 barriers", 16, 512, 37984, 8},
      {"cluster8 x 512, 76 KB dyn, 1 barrier", 8, 512, 75968, 1},
      {"cluster8 x 1024, 76 KB dyn, 1 barrier", 8, 1024, 75968, 1},
      {"cluster4 x 1024, 152 KB dyn, 1 barrier", 4, 1024, 151936, 1},
      {"cluster2 x 1024, 0 dyn, 1 barrier", 2, 1024, 0, 1},
  };
  for (int pass = 0; pass < 2; ++pass) {  // twice: the second pass's lines are the ones to read (clocks settled)
    std::printf("pass %d, static shared memory %d bytes in the cluster kernels\n", pass, kStatic);
    for (const Case& c : cases)
      if (run<kStatic>(c, spin)) return 1;
  }
  std::printf("static shared memory 1 KB in the cluster kernels\n");
  for (const Case& c : cases)
    if (c.C > 1 && run<1024>(c, spin)) return 1;
  return 0;
}
