// The refine's branch-free arithmetic (fbla_math.h, session 27) against what it stands for, over bit patterns:
//  - exp_att(x) against the float64 exp for every float x in [-87, 0] (stride: every stride-th pattern): within 2 ulp
//    (the largest error printed), e^0 = 1 exactly, monotone over the checked x; x < -87, -inf give +0, NaN gives x;
//  - digit_scale(amax) for every positive float amax: S = c 2^k with c in {1.5, 1, 0.75} and s_w = RN(1 / S) (exact
//    for c = 1; both normal), amax * S in [21759.6, 32639.5), and fl(amax * S) too (the digits fit int8:
//    |N| <= 32639), S = 0 and s_w = 0 at or below 2^-96, S = 0 and s_w = inf for inf; digits_of(w, S) for w = +-amax,
//    +-amax / 2, +- the float below amax, 0: 256 hi + lo = rint(float(w * S)), hi in [-127, 127], lo in [-128, 127],
//    and |w - N / S| <= 1 / (2 S) + |w| 2^-24 (the product's rounding, where c is not 1).
//  - the encoder's scale arithmetic (record version 4): bf16_up, quant_range / quant_code (below, before the summary).
// Prints "exp_att: N checked, M bad (max ulp U); digits: N checked, M bad; encoder: N checked, M bad"; exit 1 if any is
// bad.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include "fbla_math.h"

using namespace mlops;
using namespace mlops::fbla;

namespace {

double ulp_of(double v) {  // the float ulp at |v| (v normal or subnormal)
  int e;
  std::frexp(v, &e);  // v = f 2^e, f in [0.5, 1)
  return std::ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t stride = argc > 1 ? uint32_t(std::atoi(argv[1])) : 1u;  // 1: every pattern
  unsigned long long n = 0, bad = 0;
  double worst = 0.0;
  float prev = 0.0f;
  // x from -87 up to -0 (the patterns 0x80000000 .. bits(-87) walked downward in magnitude: increasing x)
  const uint32_t lo87 = f32_bits(-87.0f);
  for (int64_t u = lo87; u >= int64_t(0x80000000u); u -= stride) {
    const float x = bits_f32(uint32_t(u));
    const float e = exp_att(x);
    const double ref = std::exp(double(x));
    const double err = std::fabs(double(e) - ref) / ulp_of(ref);
    ++n;
    if (err > worst) worst = err;
    if (err > 2.0 || e < prev) {
      if (bad < 10) std::printf("exp_att x=%a: %a, exp %a (%.2f ulp)\n", x, e, ref, err);
      ++bad;
    }
    prev = e;
  }
  const float edge[] = {0.0f, -0.0f, -87.0001f, -100.0f, -1e30f, -INFINITY, NAN};
  const float want[] = {1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, NAN};
  for (int i = 0; i < 7; ++i) {
    ++n;
    const float e = exp_att(edge[i]);
    if (f32_bits(e) != f32_bits(want[i]) && !(e != e && want[i] != want[i])) {
      std::printf("exp_att edge x=%a: %a\n", edge[i], e);
      ++bad;
    }
  }
  unsigned long long nd = 0, badd = 0;
  auto fail = [&](const char* what, float amax, float w) {
    if (badd < 10) std::printf("digits %s: amax=%a w=%a\n", what, amax, w);
    ++badd;
  };
  for (uint64_t u = 1; u < 0x7f800000ull; u += stride) {  // amax: every positive finite float
    const float amax = bits_f32(uint32_t(u));
    const DigitScale ds = digit_scale(amax);
    ++nd;
    if (!(amax > kTinyWeight)) {
      if (ds.S != 0.0f || ds.step != 0.0f) fail("tiny", amax, 0.0f);
      continue;
    }
    const uint32_t sb = f32_bits(ds.S), tb = f32_bits(ds.step);
    const uint32_t sm = sb & 0x7fffffu, tm = tb & 0x7fffffu;
    const double prod = double(amax) * double(ds.S), st = double(ds.S) * double(ds.step);
    const bool pair_ok = (sm == 0 && tm == 0 && st == 1.0) || (sm == 0x400000u && tm == 0x2AAAABu);
    if ((sb >> 31) || (tb >> 31) || (sb >> 23) == 0 || (tb >> 23) == 0 || !pair_ok || std::fabs(st - 1.0) > 0x1p-24 ||
        prod < 21759.6 || prod >= 32639.5 || amax * ds.S >= 32639.5f)
      fail("scale", amax, 0.0f);
    const float below = bits_f32(uint32_t(u) - 1u);
    const float ws[7] = {amax, amax * 0.5f, below, 0.0f, -amax, -amax * 0.5f, -below};
    for (float w : ws) {
      int hi, lo;
      digits_of(w, ds.S, hi, lo);
      ++nd;
      const double N = std::nearbyint(double(w * ds.S));  // rint of the float product (round half to even)
      if (256 * hi + lo != int(N) || hi < -127 || hi > 127 || lo < -128 || lo > 127 ||
          std::fabs(double(w) - N / double(ds.S)) > 0.5 / double(ds.S) + std::fabs(double(w)) * 0x1p-24)
        fail("of", amax, w);
    }
  }
  const float inf = INFINITY;
  const DigitScale di = digit_scale(inf);
  ++nd;
  if (di.S != 0.0f || di.step != inf) fail("inf", inf, 0.0f);
  int hn, ln;
  digits_of(NAN, 0.0f, hn, ln);
  ++nd;
  if (hn != 0 || ln != 0) fail("NaN", 0.0f, NAN);
  // The encoder's arithmetic of record version 4 (quant_range / quant_code / min_bits, session 32):
  //  - bf16_up(x) for every non-negative float x (stride): the smallest bf16 value >= x (x itself where x is a bf16),
  //    +inf for +inf and for x above the largest bf16, a NaN for a NaN;
  //  - for pairs of bf16 values mn <= mx (mn every stride-th bf16 pattern, mx = mn + a spread of ranges): every value
  //    between them (128 a pair) is within half a stored step of its code's value (+ the float arithmetic's rounding),
  //    the codes lie in [0, 63] with mx's code 63 (or 0 for a zero scale), and min_bits(mn) is mn's bf16 exactly.
  unsigned long long ne = 0, bade = 0;
  auto faile = [&](const char* what, float a, float b) {
    if (bade < 10) std::printf("encoder %s: %a %a\n", what, a, b);
    ++bade;
  };
  for (uint64_t u = 0; u <= 0x7f800000ull; u += stride) {
    const float x = bits_f32(uint32_t(u));
    const float up = bf16_to_f32(bf16_up(x));
    const float below = bits_f32((f32_bits(up) & 0xffff0000u) - 0x10000u);  // the bf16 below up (up > 0)
    ++ne;
    if (up < x || (up > 0.0f && !(below < x)) || ((u & 0xffffu) == 0 && up != x)) faile("bf16_up", x, up);
  }
  ++ne;
  if (bf16_to_f32(bf16_up(INFINITY)) != INFINITY || !(bf16_to_f32(bf16_up(NAN)) != bf16_to_f32(bf16_up(NAN))))
    faile("bf16_up inf / NaN", INFINITY, NAN);
  const float spans[] = {0.0f, 1e-30f, 3e-8f, 1e-3f, 0.02f, 1.0f, 3.7f, 100.0f, 6e4f, 1e30f};
  for (uint64_t hb = 0; hb < 0x10000ull; hb += (stride > 1 ? 7 : 1)) {
    const float mn = bf16_to_f32(uint16_t(hb));
    if (!(std::fabs(mn) < 1e36f)) continue;  // finite, and mn + the largest span stays finite
    for (float sp : spans) {
      const float mx = bf16_to_f32(f32_to_bf16_int(mn + sp * (std::fabs(mn) + 1.0f)));
      if (!(mx >= mn) || !(mx - mn < 3e38f)) continue;
      uint16_t sc;
      float inv;
      quant_range(mn, mx, sc, inv);
      const float step = bf16_to_f32(sc);
      ++ne;
      const int top = quant_code(mx, mn, inv);
      if (bf16_to_f32(min_bits(mn)) != mn || !(step >= (mx - mn) / 63.0f) || top != (step > 0 ? 63 : 0))
        faile("range", mn, mx);
      for (int i = 0; i <= 128; ++i) {  // values between mn and mx, rounded to bf16 as the inputs are
        const float x = bf16_to_f32(f32_to_bf16_int(mn + (mx - mn) * (float(i) / 128.0f)));
        if (x < mn || x > mx) continue;
        const int c = quant_code(x, mn, inv);
        const double err = std::fabs(double(mn) + double(step) * c - double(x));
        ++ne;
        if (c < 0 || c > 63 || err > 0.5 * double(step) * (1.0 + 0x1p-20) + std::fabs(double(x)) * 0x1p-23)
          faile("code", x, float(err));
      }
    }
  }
  std::printf("exp_att: %llu checked, %llu bad (max %.3f ulp); digits: %llu checked, %llu bad; encoder: %llu checked, "
              "%llu bad\n", n, bad, worst, nd, badd, ne, bade);
  return bad || badd || bade ? 1 : 0;
}
