// Launches one instance of the kernel family. Each norm_launch_<dtype>.cu instantiates it for
// one x dtype (three objects compile in parallel). The launch stays in the object that
// instantiates the kernel template: since nvcc 12.8 a template's launch stub is local to
// that object (-static-global-template-stub), so launching it from elsewhere would not link.
#pragma once
#include "norm_kernel.cuh"
#include "norm_launch.h"

namespace mlops::norm {

template <class XT, int W, int CAP, int MINB>
cudaError_t launch_v(const Params& p, cudaStream_t s) {
  const int rows_per_cta = 8 / W;
  const int64_t grid = (p.rows + rows_per_cta - 1) / rows_per_cta;
  if (p.simple && p.units <= W * CAP)
    norm_simple_kernel<XT, W, CAP, MINB><<<dim3(unsigned(grid)), kCtaThreads, norm_smem_bytes(W, p.units), s>>>(p);
  else
    norm_kernel<XT, W, CAP, MINB><<<dim3(unsigned(grid)), kCtaThreads, norm_smem_bytes(W, p.units), s>>>(p);
  return cudaGetLastError();
}

// The variant table of norm_api.cpp, as instances: keep the two in the same order.
template <class XT>
cudaError_t launch_x(const Params& p, int variant, cudaStream_t s) {
  switch (variant) {
    case 0: return launch_v<XT, 1, 4, 2>(p, s);
    case 1: return launch_v<XT, 2, 4, 2>(p, s);
    case 2: return launch_v<XT, 4, 4, 2>(p, s);
    case 3: return launch_v<XT, 8, 4, 2>(p, s);
    case 4: return launch_v<XT, 2, 2, 4>(p, s);
    case 5: return launch_v<XT, 4, 2, 4>(p, s);
    case 6: return launch_v<XT, 8, 2, 4>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::norm
