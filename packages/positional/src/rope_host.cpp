// Host emulation of the RoPE kernels: the same per-token cos/sin (token_freq) and the same
// per-pair arithmetic (mlops/rope.cuh), so mlops_rope_host gives the bits mlops_rope gives.
// Also the CPU path of the Python API.
#include <vector>

#include "rope_launch.h"

namespace mlops::rope {
namespace {

template <class T>
void run_t(const Params& p, int layout) {
  std::vector<float> cs(size_t(2) * p.half);
  const int hq = int(p.q.heads);
  for (long long t = 0; t < p.tokens; ++t) {
    bool ok = true;
    for (int i = 0; i < p.half; ++i) ok = token_freq(p, t, i, cs.data()) && ok;
    if (!ok && p.flag) *p.flag = 1;
    const long long b = t / p.seq, s = t - b * p.seq;
    for (int h = 0; h < p.heads; ++h) {
      const Side& sd = h < hq ? p.q : p.k;
      const long long hh = h < hq ? h : h - hq;
      const T* in = static_cast<const T*>(sd.x) + b * sd.bs + s * sd.ss + hh * sd.hs;
      T* out = static_cast<T*>(sd.out) + b * sd.obs + s * sd.oss + hh * sd.ohs;
      if (ok) {
        rotate_head<T>(in, out, p.head_dim, p.rotary_dim, layout, cs.data());
      } else if (static_cast<const void*>(in) != static_cast<const void*>(out)) {
        for (int i = 0; i < p.head_dim; ++i) out[i] = in[i];  // left unrotated
      }
    }
  }
}

}  // namespace

void run_host(const Params& p, mlops_dtype t, int layout) {
  switch (t) {
    case MLOPS_DTYPE_BF16: return run_t<bf16>(p, layout);
    case MLOPS_DTYPE_FP16: return run_t<f16>(p, layout);
    default: return run_t<float>(p, layout);
  }
}

void cache_host(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache) {
  for (long long pos = 0; pos < max_pos; ++pos)
    for (long long i = 0; i < half; ++i) cos_sin(pos, inv_freq[i], scaling, &cache[pos * 2 * half + i],
                                                  &cache[pos * 2 * half + half + i]);
}

}  // namespace mlops::rope
