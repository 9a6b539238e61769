// The 8-bit kernels' table quantizer (src/optim_quant.h) against quantize_nearest (the spec,
// src/optim_math.h) on the two standard maps: every float bit pattern u = start, start +
// stride, ... < 2^32 (stride 1: all 2^32), and every float within 64 ulps of each map entry,
// threshold and bucket edge. Where the table leaves `bad` alone its code must be the spec's;
// it must leave it alone for every non-NaN |x| < 1.0078125 (the unsigned map: x >= +0).
// Prints "checked N, mismatches M, uncovered K"; exit status 1 on any mismatch / uncovered.
//     qtables_exhaustive [stride [start]]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "optim_math.h"
#include "optim_quant.h"

using namespace mlops;
using namespace mlops::optim;

static float map_s[256], map_u[256], thr_s[256], thr_u[256];
static unsigned long long checked, mismatches, uncovered;

static void check(uint32_t u) {
  const float x = bits_f32(u);
  const bool in_range = std::fabs(x) < 1.0078125f;  // false for NaN
  for (int signed_map = 0; signed_map < 2; ++signed_map) {
    bool bad = false;
    const uint32_t c = signed_map ? quantize_table<true>(x, kQBucketS, thr_s, bad)
                                  : quantize_table<false>(x, kQBucketU, thr_u, bad);
    const uint32_t want = quantize_nearest(signed_map ? map_s : map_u, x);
    ++checked;
    if (!bad && c != want) {
      if (++mismatches <= 10)
        std::printf("mismatch: %s map, x = %a (0x%08x): table %u, spec %u\n", signed_map ? "signed" : "unsigned",
                    double(x), u, c, want);
    }
    const bool must_cover = in_range && (signed_map || (u >> 31) == 0u);
    if (must_cover && bad) {
      if (++uncovered <= 10)
        std::printf("uncovered: %s map, x = %a (0x%08x)\n", signed_map ? "signed" : "unsigned", double(x), u);
    }
  }
}

static void around(float v) {  // 64 ulps either side of v (and of -v)
  for (float s : {v, -v}) {
    const uint32_t u = f32_bits(s);
    for (int d = -64; d <= 64; ++d) check(u + uint32_t(d));
  }
}

int main(int argc, char** argv) {
  const unsigned long long stride = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const unsigned long long start = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  for (int k = 0; k < 256; ++k) {
    map_s[k] = bits_f32(kQMapS[k]);
    map_u[k] = bits_f32(kQMapU[k]);
    thr_s[k] = bits_f32(kQThrS[k]);
    thr_u[k] = bits_f32(kQThrU[k]);
  }
  for (int k = 0; k < 256; ++k) {
    around(map_s[k]);
    around(map_u[k]);
    if (std::isfinite(thr_s[k])) around(thr_s[k]);
    if (std::isfinite(thr_u[k])) around(thr_u[k]);
  }
  for (uint32_t b = kQBucketLo; b <= kQBucketHi + 1; ++b) around(bits_f32(b << 16));
  for (unsigned long long u = start; u < (1ull << 32); u += stride) check(uint32_t(u));
  std::printf("checked %llu, mismatches %llu, uncovered %llu\n", checked, mismatches, uncovered);
  return mismatches != 0 || uncovered != 0;
}
