// Launches step_kernel for one parameter type. The launch stays in the object that
// instantiates the template: since nvcc 12.8 a template kernel's launch stub is local to its
// object (-static-global-template-stub), so launching it from another object would not link.
#pragma once
#include "optim_kernel.cuh"
#include "optim_launch.h"

namespace mlops::optim {

template <class PT>
cudaError_t launch_step_t(const mlops_optim_args& a, cudaStream_t s) {
  const dim3 grid(unsigned(a.num_chunks));
  switch (a.algo) {
    case MLOPS_OPTIM_ADAM: step_kernel<PT, MLOPS_OPTIM_ADAM><<<grid, kThreads, 0, s>>>(a); break;
    case MLOPS_OPTIM_SGD: step_kernel<PT, MLOPS_OPTIM_SGD><<<grid, kThreads, 0, s>>>(a); break;
    case MLOPS_OPTIM_LION: step_kernel<PT, MLOPS_OPTIM_LION><<<grid, kThreads, 0, s>>>(a); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace mlops::optim
