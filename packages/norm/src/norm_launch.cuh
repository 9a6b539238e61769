// Launches one instance of the kernel family. Each norm_launch_<dtype>.cu instantiates it for
// one x dtype (three objects compile in parallel). The launch stays in the object that
// instantiates the kernel template: since nvcc 12.8 a template's launch stub is local to
// that object (-static-global-template-stub), so launching it from elsewhere would not link.
#pragma once
#include "norm_kernel.cuh"
#include "norm_launch.h"

namespace mlops::norm {

template <class XT, int W>
cudaError_t launch_w(const Params& p, cudaStream_t s) {
  const int rows_per_cta = 8 / W;
  const int64_t grid = (p.rows + rows_per_cta - 1) / rows_per_cta;
  norm_kernel<XT, W><<<dim3(unsigned(grid)), kCtaThreads, norm_smem_bytes(W, p.units), s>>>(p);
  return cudaGetLastError();
}

template <class XT>
cudaError_t launch_x(const Params& p, int warps, cudaStream_t s) {
  switch (warps) {
    case 1: return launch_w<XT, 1>(p, s);
    case 2: return launch_w<XT, 2>(p, s);
    case 4: return launch_w<XT, 4>(p, s);
    case 8: return launch_w<XT, 8>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::norm
