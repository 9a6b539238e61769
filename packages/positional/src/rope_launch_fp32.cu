#include "rope_kernel.cuh"

namespace mlops::rope {
cudaError_t launch_fp32(const Params& p, bool vec, int layout, int variant, cudaStream_t s) {
  return launch_t<float>(p, vec, layout, variant, s);
}
}  // namespace mlops::rope
