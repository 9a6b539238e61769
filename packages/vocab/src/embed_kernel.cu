// The launch of the embed kernels (embed_kernel.cuh). It stays in this file, the one that
// instantiates the template (nvcc >= 12.8 keeps template launch stubs local to their object).
#include "embed_kernel.cuh"

namespace mlops::vocab {
namespace {

template <int W>
cudaError_t launch_w(const EmbedParams& p, cudaStream_t s) {
  constexpr int kTokens = 8 / W;
  const int64_t grid = (p.tokens + kTokens - 1) / kTokens;
  embed_kernel<W><<<unsigned(grid), kThreads, sizeof(float) * kTokens * p.units, s>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t embed_launch(const EmbedParams& p, int warps, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (warps) {
    case 1: return launch_w<1>(p, s);
    case 2: return launch_w<2>(p, s);
    case 4: return launch_w<4>(p, s);
    case 8: return launch_w<8>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::vocab
