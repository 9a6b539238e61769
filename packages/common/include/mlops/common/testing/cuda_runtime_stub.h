// The shared part of the stand-in <cuda_runtime.h> of the kernel-emulation runners that compile a package's
// kernels as host C++ with one fiber a CUDA thread (mlops/common/testing/fibers.h; attention and positional: tests/c/emulation/
// cuda_runtime.h includes this, then adds its own: __shared__, the intrinsics its kernels call). The runner
// defines the functions declared here. Test-only: cmake/mlops.cmake leaves mlops/common/testing/ out of the
// installed headers.
#pragma once
#include <atomic>

typedef int cudaError_t;
typedef void* cudaStream_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorInvalidDevice = 101 };
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

extern dim3 threadIdx, blockIdx;  // the running fiber's: the runner's resume hook sets them
void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);  // a barrier of the calling thread's warp (every lane calls it)

inline int atomicOr(int* p, int v) { return std::atomic_ref<int>(*p).fetch_or(v); }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "emulated"; }
