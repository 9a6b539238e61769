// exp_det_le against exp_det for every float x <= 88.5 and every NaN, and bounded_digits against qhat_digits for every
// positive finite wmax (w = +-wmax, the largest |x|, and w = +-wmax / 2, w = +- the float below wmax, 0: the P V weights'
// and, with the signs, the q digits' edge cases; fbla_math.h). Prints "N checked, M differ"; exit 1 if any differs.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include "fbla_math.h"

using namespace mlops;
using namespace mlops::fbla;

int main(int argc, char** argv) {
  const uint32_t stride = argc > 1 ? uint32_t(std::atoi(argv[1])) : 1u;  // 1: every pattern
  unsigned long long n = 0, bad = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += stride) {
    const float x = bits_f32(uint32_t(u));
    if (!(x <= 88.5f) && x == x) continue;  // > 88.5: outside exp_det_le's domain
    ++n;
    if (f32_bits(exp_det_le(x)) != f32_bits(exp_det(x))) {
      if (bad < 10)
        std::printf("exp x=%08x: %08x vs %08x\n", uint32_t(u), f32_bits(exp_det_le(x)), f32_bits(exp_det(x)));
      ++bad;
    }
  }
  unsigned long long nd = 0, badd = 0;
  for (uint64_t u = 1; u < 0x7f800000ull; u += stride) {  // wmax: every positive finite float
    const float wmax = bits_f32(uint32_t(u));
    const float inv = pv_inv(wmax);
    const float below = bits_f32(uint32_t(u) - 1u);
    const float ws[7] = {wmax, wmax * 0.5f, below, 0.0f, -wmax, -wmax * 0.5f, -below};
    for (float w : ws) {
      int h1, l1, h2, l2;
      qhat_digits(w, inv, h1, l1);
      bounded_digits(w, inv, h2, l2);
      ++nd;
      if (h1 != h2 || l1 != l2) {
        if (badd < 10) std::printf("digits w=%a wmax=%a: %d %d vs %d %d\n", w, wmax, h2, l2, h1, l1);
        ++badd;
      }
    }
  }
  std::printf("exp_det_le: %llu checked, %llu differ; bounded_digits: %llu checked, %llu differ\n", n, bad, nd, badd);
  return bad || badd ? 1 : 0;
}
