// The fp32 cos/sin cache: one thread a (position, frequency), the arithmetic of mlops/rope.cuh.
#include "rope_launch.h"

namespace mlops::rope {

__global__ void rope_cache_kernel(const float* inv_freq, long long half, float scaling, long long max_pos,
                                  float* cache) {
  const long long n = max_pos * half;
  for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
       idx += (long long)gridDim.x * blockDim.x) {
    const long long pos = idx / half, i = idx - pos * half;
    float c, s;
    cos_sin(pos, inv_freq[i], scaling, &c, &s);
    cache[pos * 2 * half + i] = c;
    cache[pos * 2 * half + half + i] = s;
  }
}

cudaError_t launch_cache(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache,
                         cudaStream_t s) {
  const long long n = max_pos * half;
  const long long blocks = (n + 255) / 256;
  rope_cache_kernel<<<unsigned(blocks < 65535 * 8 ? blocks : 65535 * 8), 256, 0, s>>>(inv_freq, half, scaling,
                                                                                    max_pos, cache);
  return cudaGetLastError();
}

}  // namespace mlops::rope
