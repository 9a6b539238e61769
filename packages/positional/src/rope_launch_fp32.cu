#include "rope_kernel.cuh"

namespace mlops::rope {
cudaError_t launch_fp32(const Params& p, bool vec, int layout, cudaStream_t s) { return launch_t<float>(p, vec, layout, s); }
}  // namespace mlops::rope
