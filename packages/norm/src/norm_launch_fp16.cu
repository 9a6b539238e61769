#include "norm_launch.cuh"

namespace mlops::norm {
cudaError_t launch_fp16(const Params& p, int variant, cudaStream_t s) { return launch_x<f16>(p, variant, s); }
}  // namespace mlops::norm
