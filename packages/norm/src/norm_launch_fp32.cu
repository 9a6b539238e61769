#include "norm_launch.cuh"

namespace mlops::norm {
cudaError_t launch_fp32(const Params& p, int variant, cudaStream_t s) { return launch_x<float>(p, variant, s); }
}  // namespace mlops::norm
