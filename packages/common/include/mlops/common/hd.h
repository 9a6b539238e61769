// MLOPS_HD marks arithmetic that runs both in kernels and in the host emulation, so the two
// are one piece of code and give the same bits. Host files that include arithmetic headers
// must be compiled with -ffp-contract=off and device code with -fmad=false (cmake/mlops.cmake
// sets both), so neither compiler fuses a*b+c where the source did not write fmaf.
#pragma once
#ifndef __CUDACC_RTC__  // NVRTC has no standard headers; it predefines what these headers need
#include <stdint.h>
#include <string.h>
#include <math.h>
#endif

#if defined(__CUDACC__)
#define MLOPS_HD __host__ __device__ __forceinline__
#define MLOPS_DEVICE_CODE 1
#else
#define MLOPS_HD inline
#endif

namespace mlops {

MLOPS_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}

MLOPS_HD float bits_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}

// Round half to even; rintf is cvt.rni on the device and the default rounding mode on the host.
MLOPS_HD float rint_even(float x) {
#if defined(__CUDA_ARCH__)
  return rintf(x);
#else
  return __builtin_rintf(x);
#endif
}

}  // namespace mlops
