// Launches step_kernel for one parameter type. The launch stays in the object that
// instantiates the template: since nvcc 12.8 a template kernel's launch stub is local to its
// object (-static-global-template-stub), so launching it from another object would not link.
#pragma once
#include "optim_kernel.cuh"
#include "optim_launch.h"

namespace mlops::optim {

template <class PT, int M>
cudaError_t launch_step_m(const mlops_optim_args& a, cudaStream_t s) {
  const dim3 grid(unsigned(a.num_chunks));
  switch (a.algo) {
    case MLOPS_OPTIM_ADAM:  // 8-bit states exclude amsgrad (validated)
      if (a.state_8bit) step_kernel<PT, MLOPS_OPTIM_ADAM, true, false, M><<<grid, kThreads, 0, s>>>(a);
      else if (a.amsgrad) step_kernel<PT, MLOPS_OPTIM_ADAM, false, true, M><<<grid, kThreads, 0, s>>>(a);
      else step_kernel<PT, MLOPS_OPTIM_ADAM, false, false, M><<<grid, kThreads, 0, s>>>(a);
      break;
    case MLOPS_OPTIM_SGD: step_kernel<PT, MLOPS_OPTIM_SGD, false, false, M><<<grid, kThreads, 0, s>>>(a); break;
    case MLOPS_OPTIM_LION: step_kernel<PT, MLOPS_OPTIM_LION, false, false, M><<<grid, kThreads, 0, s>>>(a); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

// variant: 0 = occ3 (3 CTAs an SM), 1 = occ2 (no register cap)
template <class PT>
cudaError_t launch_step_t(const mlops_optim_args& a, int variant, cudaStream_t s) {
  return variant == 1 ? launch_step_m<PT, 1>(a, s) : launch_step_m<PT, 3>(a, s);
}

}  // namespace mlops::optim
