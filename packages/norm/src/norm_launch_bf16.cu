#include "norm_launch.cuh"

namespace mlops::norm {
cudaError_t launch_bf16(const Params& p, int variant, cudaStream_t s) { return launch_x<bf16>(p, variant, s); }
}  // namespace mlops::norm
