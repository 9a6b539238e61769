#include "optim_launch.cuh"

namespace mlops::optim {
cudaError_t launch_step_fp16(const mlops_optim_args& a, int variant, cudaStream_t s) {
  return launch_step_t<f16_t>(a, variant, s);
}
}  // namespace mlops::optim
