// Launches one instance of the kernel family. Each norm_launch_<dtype>.cu instantiates it for
// one x dtype (three objects compile in parallel). The launch stays in the object that
// instantiates the kernel template: since nvcc 12.8 a template's launch stub is local to
// that object (-static-global-template-stub), so launching it from elsewhere would not link.
#pragma once
#include "norm_kernel.cuh"
#include "norm_launch.h"

namespace mlops::norm {

template <class XT, int W, int CAP, int MINB, int ITERS>
cudaError_t launch_v(const Params& p, cudaStream_t s) {
  const int rows_per_cta = 8 / W;
  const size_t smem = norm_smem_bytes(W, p.units);
  if (p.simple && p.units <= W * CAP) {
    const int64_t per_cta = int64_t(rows_per_cta) * ITERS;
    norm_simple_kernel<XT, W, CAP, MINB, ITERS><<<dim3(unsigned((p.rows + per_cta - 1) / per_cta)), kCtaThreads, smem, s>>>(p);
  } else {
    norm_kernel<XT, W, CAP, MINB><<<dim3(unsigned((p.rows + rows_per_cta - 1) / rows_per_cta)), kCtaThreads, smem, s>>>(p);
  }
  return cudaGetLastError();
}

// The variant table of norm_api.cpp, as instances: keep the two in the same order.
template <class XT>
cudaError_t launch_x(const Params& p, int variant, cudaStream_t s) {
  switch (variant) {
    case 0: return launch_v<XT, 1, 4, 2, 1>(p, s);
    case 1: return launch_v<XT, 2, 4, 2, 1>(p, s);
    case 2: return launch_v<XT, 4, 4, 2, 1>(p, s);
    case 3: return launch_v<XT, 8, 4, 2, 1>(p, s);
    case 4: return launch_v<XT, 2, 2, 4, 1>(p, s);
    case 5: return launch_v<XT, 4, 2, 4, 1>(p, s);
    case 6: return launch_v<XT, 8, 2, 4, 1>(p, s);
    case 7: return launch_v<XT, 4, 2, 3, 2>(p, s);
    case 8: return launch_v<XT, 8, 2, 3, 2>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::norm
