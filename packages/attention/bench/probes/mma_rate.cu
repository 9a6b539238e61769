// Throughput of one warp-synchronous MMA form on this GPU: b1 m16n8k256 and.popc against s8 m16n8k32 (session 20
// probe: would a popc MMA on the K bit planes replace the scores' unpack?). Each warp runs N independent chains of
// MMAs; prints warp-MMAs per SM per cycle for each form.
#include <cstdio>
#include <cuda_runtime.h>
template <int KIND>
__global__ void run(int iters, int* out, long long* cyc) {
  unsigned a[4] = {threadIdx.x, threadIdx.x * 3u, threadIdx.x * 5u, threadIdx.x * 7u}, b[2] = {threadIdx.x ^ 9u, threadIdx.x ^ 77u};
  int c[4][4] = {};
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (KIND == 0)
        asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+r"(c[k][0]), "+r"(c[k][1]), "+r"(c[k][2]), "+r"(c[k][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+r"(c[k][0]), "+r"(c[k][1]), "+r"(c[k][2]), "+r"(c[k][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  long long t1 = clock64();
  int s = 0;
  for (int k = 0; k < 4; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0 && blockIdx.x == 0) *cyc = t1 - t0;
}
int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int* out; long long* cyc;
  cudaMalloc(&out, 1 << 24); cudaMalloc(&cyc, 8);
  const int iters = 4096, threads = 512;
  for (int kind = 0; kind < 2; ++kind) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int rep = 0; rep < 2; ++rep) {
      cudaEventRecord(e0);
      if (kind == 0) run<0><<<sms * 2, threads>>>(iters, out, cyc); else run<1><<<sms * 2, threads>>>(iters, out, cyc);
      cudaEventRecord(e1); cudaEventSynchronize(e1);
    }
    float ms = 0; cudaEventElapsedTime(&ms, e0, e1);
    long long c = 0; cudaMemcpy(&c, cyc, 8, cudaMemcpyDeviceToHost);
    double mmas = double(sms) * 2 * (threads / 32) * iters * 4;
    printf("%s: %.3f ms, %.3g warp-MMAs/s, %.2f warp-MMAs per SM per 1000 cycles (block 0: %lld cycles), %s\n",
           kind == 0 ? "b1 m16n8k256 and.popc" : "s8 m16n8k32", ms, mmas / (ms * 1e-3),
           double(2 * (threads / 32) * iters * 4) / double(c) * 1000.0, c, cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
