// The bench probes' (grid_barrier_probe.cu, sample_timeline_probe.cu) check of a CUDA call: on an error, the
// file, line and message, and the calling function returns 1 (each probe's helpers return int).
#pragma once
#include <cstdio>

#include <cuda_runtime_api.h>

#define CK(x)                                                                \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      return 1;                                                              \
    }                                                                        \
  } while (0)
