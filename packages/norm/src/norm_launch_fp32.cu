#include "norm_launch.cuh"

namespace mlops::norm {
cudaError_t launch_fp32(const Params& p, int warps, cudaStream_t s) { return launch_x<float>(p, warps, s); }
}  // namespace mlops::norm
