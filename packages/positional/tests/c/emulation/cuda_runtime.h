// Stand-in for <cuda_runtime.h> when tests/c/rope_kernel_emulation.cpp compiles the RoPE kernel
// as host C++: the few runtime names the library uses, and CUDA's qualifiers as nothing
// (mlops/common/testing/cuda_runtime_stub.h, shared with attention's stand-in), plus its own below.
#pragma once
#include <algorithm>
#include <bit>

#include "mlops/common/testing/cuda_runtime_stub.h"

#define __shared__
using std::min;

enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
int emulated_sms();
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) { *v = emulated_sms(); return cudaSuccess; }
inline int __clz(int x) { return std::countl_zero(unsigned(x)); }
