// Stand-in for <cuda_runtime.h> when tests/c/rope_kernel_emulation.cpp compiles the RoPE kernel
// as host C++: the few runtime names the library uses, and CUDA's qualifiers as nothing.
#pragma once
#include <algorithm>

typedef int cudaError_t;
typedef void* cudaStream_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)

extern thread_local dim3 threadIdx;
extern thread_local dim3 blockIdx;
void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);  // the dec kernels: a barrier of the thread's warp (32 threads)
using std::min;

int emulated_sms();
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) { *v = emulated_sms(); return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "emulated"; }

#include <atomic>
#include <bit>
inline int __clz(int x) { return std::countl_zero(unsigned(x)); }
inline int atomicOr(int* p, int v) { return std::atomic_ref<int>(*p).fetch_or(v); }
