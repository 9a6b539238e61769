// Launches of the sampler's kernels (sample_kernel.cuh). They stay in this file, the one that
// instantiates the templates (nvcc >= 12.8: template launch stubs are local to their object).
#include "sample_kernel.cuh"

namespace mlops::vocab {
namespace {

template <int NT>
cudaError_t launch_nt(const SampleParams& p, cudaStream_t s) {
  sample_kernel<NT><<<unsigned(p.rows), NT, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_penalties(const SampleParams& p, cudaStream_t s) {
  if (!p.history || p.history_stride <= 0) return cudaSuccess;
  const dim3 grid(unsigned((p.history_stride + 255) / 256), unsigned(p.rows));
  penalty_count_kernel<<<grid, 256, 0, s>>>(p);
  penalty_apply_kernel<<<grid, 256, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t sample_launch_split(const SampleParams& p, int threads, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = launch_penalties(p, s);
  if (e != cudaSuccess) return e;
  e = cudaMemsetAsync(p.split, 0, sizeof(SplitRow) * size_t(p.rows), s);
  if (e != cudaSuccess) return e;
  const dim3 chunks(unsigned(p.chunks), unsigned(p.rows));
  split_stats_kernel<<<chunks, kSplitThreads, 0, s>>>(p);
  split_mass_kernel<<<chunks, kSplitThreads, 0, s>>>(p);
  if (threads != 1024) return cudaErrorInvalidValue;
  sample_kernel<1024><<<unsigned(p.rows), 1024, 0, s>>>(p);
  split_sum_kernel<<<chunks, kSplitThreads, 0, s>>>(p);
  split_draw_kernel<<<unsigned(p.rows), kSplitThreads, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t sample_launch(const SampleParams& p, int threads, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = launch_penalties(p, s);
  if (e != cudaSuccess) return e;
  switch (threads) {
    case 256: return launch_nt<256>(p, s);
    case 512: return launch_nt<512>(p, s);
    case 1024: return launch_nt<1024>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::vocab
