// The cheaper quantizer forms of src/norm_codes_fast.h against norm_math.h's, which the host
// emulation runs (so the kernels that use them keep the host's bits):
//   * every positive bf16 and fp16 amax (2^15 each, subnormals, inf): div127_bf16 == amax / 127,
//     div6_bf16 == amax / 6, amax * int8_inv(amax) < 127.5 where the inverse is finite (the bound int8_code_bits needs);
//   * int8_code_bits: every float within 4096 ulps of each half-integer in [-128, 128], every
//     127th float pattern of |v| < 127.5, NaN and +-inf products;
//   * e2m1_code_fast: every float within 2^16 ulps of each E2M1 rounding boundary and grid
//     point, and every 61st float pattern in [0, 6], both signs;
//   * e2m1_nibble (the clamp included): every float in [0, 8], a sample of the rest;
//   * e2m1_nibble_f / _near / _finite (the "f" variants) against e2m1_nibble: every 7th float
//     in [0, 8], every float within 2^12 ulps of each E2M1 boundary and grid point, 6, 7 and 8,
//     a sample of the rest, both signs; near / finite only where their preconditions hold
//     (|p| < 7 or NaN / |p| < 7);
//   * the bound e2m1_nibble_near relies on: amax * mul < 6.5 for every bf16 / fp16 amax whose
//     amax / 6 is not clamped at 448 (mul: nvfp4_block's, no global factor);
//   * e4m3_normal_to_f32: every positive normal E4M3 code;
//   * mul_packed8's bf16 multiply: every pair of finite bf16 values, the exact product rounded
//     once equals the fp32 product rounded to bf16 (the host emulation's order);
//   * int8_tab (session 13): its table against IEEE division, and every positive bf16 amax (and
//     0, inf): in its range the inverse and scale are int8_inv's and int8_scale's bits, and the
//     range is all of [2^-119, 2^127);
//   * e2m1_word_finite with e2m1_signs8 (session 13) against the word of e2m1_nibble_finite's
//     nibbles: every 1021st float with |p| < 7 and every float within 2^10 ulps of each E2M1
//     boundary, both signs, at each of the 8 positions beside varied neighbours (mul = 1), and
//     bf16 values times every block inverse 1 / e4m3 (the near path's products); the magic sum's
//     bits 3-22 zero (what the word's assembly rests on) for every 7th float with |p| < 7.
// Prints "N passed, M failed" (a case is one function over its whole input set).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "norm_codes_fast.h"

using namespace mlops;
using namespace mlops::norm;

static int passed, failed;
static void report(bool ok, const char* what, long bad) {
  if (ok) ++passed;
  else { ++failed; printf("FAIL %s: %ld mismatches\n", what, bad); }
}

static std::vector<float> positive_amaxes(bool bf) {
  std::vector<float> v;
  for (uint32_t h = 1; h <= 0x7c00u || (bf && h <= 0x7f80u); ++h)  // finite, and inf last
    v.push_back(bf ? bf16_to_f32(uint16_t(h)) : f16_to_f32(uint16_t(h)));
  v.push_back(0.0f);
  return v;
}

int main() {
  for (int bf = 0; bf < 2; ++bf) {
    long b127 = 0, b6 = 0, bound = 0;
    for (float a : positive_amaxes(bf)) {
      if (f32_bits(div127_bf16(a)) != f32_bits(int8_scale(a))) ++b127;
      if (f32_bits(div6_bf16(a)) != f32_bits(a / kE2M1Max)) ++b6;
      if (a != INFINITY && int8_inv(a) != INFINITY && !(a * int8_inv(a) < 127.5f)) ++bound;
    }
    report(b127 == 0, bf ? "div127 bf16" : "div127 fp16", b127);
    report(b6 == 0, bf ? "div6 bf16" : "div6 fp16", b6);
    report(bound == 0, bf ? "int8 bound bf16" : "int8 bound fp16", bound);
  }
  {
    long bad = 0;
    auto check = [&](float v) {
      const int8_t want = int8_code(v, 1.0f);  // y * 1 = v: int8_code's clamp and rint of v
      if (int8_t(uint8_t(int8_code_bits(v, 1.0f))) != want) ++bad;
    };
    for (int k = -256; k <= 256; ++k) {
      const uint32_t c = f32_bits(0.5f * float(k));
      for (int d = -4096; d <= 4096; ++d) {
        const float v = bits_f32(uint32_t(int64_t(c) + d));
        if (v > -127.5f && v < 127.5f) check(v);
      }
    }
    for (uint32_t u = 0; u < 0x42ff0000u; u += 127) { check(bits_f32(u)); check(-bits_f32(u)); }
    for (float v : {NAN, -NAN, INFINITY * 0.0f}) check(v);
    report(bad == 0, "int8_code_bits", bad);
  }
  {
    long bad = 0;
    auto check = [&](float v) {
      if (v < -6.0f || v > 6.0f || v != v) return;
      if (e2m1_code_fast(v) != f32_to_e2m1(v)) ++bad;
    };
    const float points[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f};
    for (float p : points)
      for (int d = -65536; d <= 65536; ++d) {
        const uint32_t u = uint32_t(int64_t(f32_bits(p)) + d);
        if (int64_t(f32_bits(p)) + d < 0) continue;
        check(bits_f32(u));
        check(-bits_f32(u));
      }
    for (uint32_t u = 0; u <= 0x40c00000u; u += 61) { check(bits_f32(u)); check(-bits_f32(u)); }
    report(bad == 0, "e2m1_code_fast", bad);
  }
  {  // e2m1_nibble against nvfp4_code(p, 1.0f): every float p in [0, 8] (all magnitudes the
     // encoder sees unclamped, and past 6), every 7th negative one there (the sign is one bit
     // of v), every 4093rd pattern elsewhere (inf, large values, NaN of both signs). Signaling
     // NaNs are skipped: p is a product y * mul, never one (and the host's fmaxf returns a
     // NaN for them where the GPU's FMNMX returns -6). Run once over all 2^32 patterns less the
     // signaling NaNs by hand (session 5): 0 mismatches.
    long bad = 0;
    auto check = [&](uint32_t u) {
      const float p = bits_f32(u);
      if ((u & 0x7fc00000u) == 0x7f800000u && (u & 0x003fffffu)) return;  // signaling NaN
      if (e2m1_nibble(p) != nvfp4_code(p, 1.0f)) ++bad;
    };
    for (uint32_t u = 0; u <= 0x41000000u; ++u) check(u);
    for (uint32_t u = 0x80000000u; u <= 0xc1000000u; u += 7) check(u);
    for (uint64_t u = 0x41000000u; u < 0x80000000u; u += 4093) check(uint32_t(u));
    for (uint64_t u = 0xc1000000u; u <= 0xffffffffu; u += 4093) check(uint32_t(u));
    for (uint32_t u : {0x7fc00000u, 0xffc00000u, 0x7fffffffu, 0xffffffffu, 0x7f800000u, 0xff800000u}) check(u);
    report(bad == 0, "e2m1_nibble", bad);
  }
  {  // e2m1_nibble_f == e2m1_nibble on every float (the same integer magic, one IMAD),
     // e2m1_nibble_near == e2m1_nibble where |p| < 7 or p is NaN, e2m1_nibble_finite where
     // |p| < 7. Run once over all 2^32 patterns by hand (session 7): f 0 mismatches; near 0 on
     // every |p| < 7 and quiet NaN; finite 0 on every |p| < 7 (2 176 843 776 floats).
     // Signaling NaNs are skipped as above (the host's fmaxf keeps them).
    long bf = 0, bn = 0, bi = 0;
    auto check = [&](uint32_t u) {
      const float p = bits_f32(u);
      if ((u & 0x7fc00000u) == 0x7f800000u && (u & 0x003fffffu)) return;  // signaling NaN
      const uint32_t ref = e2m1_nibble(p);
      if (e2m1_nibble_f(p) != ref) ++bf;
      if ((p != p || fabsf(p) < 7.0f) && e2m1_nibble_near(p) != ref) ++bn;
      if (fabsf(p) < 7.0f && e2m1_nibble_finite(p) != ref) ++bi;
    };
    for (uint32_t u = 0; u <= 0x41000000u; u += 7) { check(u); check(u | 0x80000000u); }
    for (float c : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f,
                    7.0f, 8.0f})
      for (int d = -4096; d <= 4096; ++d) {
        const uint32_t u = uint32_t(int64_t(f32_bits(c)) + d) & 0x7fffffffu;
        check(u);
        check(u | 0x80000000u);
      }
    for (uint64_t u = 0x41000000u; u < 0x80000000u; u += 4093) { check(uint32_t(u)); check(uint32_t(u) | 0x80000000u); }
    for (uint32_t u : {0x7fc00000u, 0xffc00000u, 0x7fffffffu, 0xffffffffu, 0x7f800000u, 0xff800000u}) check(u);
    report(bf == 0, "e2m1_nibble_f", bf);
    report(bn == 0, "e2m1_nibble_near", bn);
    report(bi == 0, "e2m1_nibble_finite", bi);
  }
  {  // e2m1_nibble_near's precondition on the kernel's blocks: |y| <= amax and RN is monotone,
     // so |y * mul| <= amax * mul; every bf16 / fp16 amax with amax / 6 <= 448 (no clamp at 448)
     // gives amax * mul < 6.5 (the largest is ~6.4: the scale rounded down to 3 mantissa bits).
    long bad = 0;
    for (int bf = 0; bf < 2; ++bf)
      for (float a : positive_amaxes(bf)) {
        if (!(div6_bf16(a) <= kE4M3Max)) continue;
        const Nvfp4Block b = nvfp4_block(a, nullptr);
        if (!(a * b.mul < 6.5f)) ++bad;
      }
    report(bad == 0, "e2m1_nibble_near bound", bad);
  }
  {
    long bad = 0;
    for (uint32_t c = 0x08; c < 0x7f; ++c)
      if (f32_bits(e4m3_normal_to_f32(c)) != f32_bits(e4m3_to_f32(uint8_t(c)))) ++bad;
    report(bad == 0, "e4m3_normal_to_f32", bad);
  }
  {  // mul_packed8 (norm_row_leanq.cuh): every pair of finite bf16 values (the sign only flips the
     // result), the exact product (double holds its <= 16 significant bits) rounded once to bf16,
     // against the host's road: the product in fp32, then f32_to_bf16_int. Overflow included.
    long bad = 0;
    for (uint32_t a = 0; a <= 0x7f7fu; ++a)
      for (uint32_t b = a; b <= 0x7f7fu; ++b) {
        const float fa = bf16_to_f32(uint16_t(a)), fb = bf16_to_f32(uint16_t(b));
        const uint16_t host = f32_to_bf16_int(fa * fb);
        const double e = double(fa) * double(fb);
        int ex = 0;
        std::frexp(e, &ex);  // e = m * 2^ex, m in [0.5, 1): a normal bf16 ulp is 2^(ex - 8)
        const int ue = e == 0.0 ? -133 : std::max(ex - 8, -133);
        const double r = std::ldexp(std::nearbyint(std::ldexp(e, -ue)), ue);  // RNE (the default mode)
        const uint16_t once = r >= 0x1p128 ? uint16_t(0x7f80u) : uint16_t(f32_bits(float(r)) >> 16);
        if (host != once) ++bad;
      }
    report(bad == 0, "bf16 product rounded once", bad);
  }
  {  // int8_tab: the table is RN(127 / m) and RN(m / 127) for m = 1 + i / 128; on every positive
     // bf16 amax it returns true exactly on [2^-119, 2^127) and there gives int8_inv / int8_scale.
    long bad = 0, range = 0, n = 0;
    for (uint32_t i = 0; i < 128; ++i) {
      const float m = 1.0f + float(i) / 128.0f;
      if (kInt8TabHost[2 * i] != f32_bits(127.0f / m) || kInt8TabHost[2 * i + 1] != f32_bits(m / 127.0f)) ++bad;
    }
    for (float a : positive_amaxes(true)) {
      float inv = 0.0f, sc = 0.0f;
      const bool ok = int8_tab(a, inv, sc);
      if (ok != (a >= 0x1p-119f && a < 0x1p127f)) ++range;
      if (!ok) continue;
      ++n;
      if (f32_bits(inv) != f32_bits(int8_inv(a)) || f32_bits(sc) != f32_bits(int8_scale(a))) ++bad;
    }
    report(bad == 0 && n > 30000, "int8_tab", bad);
    report(range == 0, "int8_tab range", range);
  }
  {  // e2m1_word_finite(y, mul, e2m1_signs8(y)) == the nibbles e2m1_nibble_finite(y_i * mul),
     // two a byte: each tested value p (|p| < 7) at every position, the 7 others from a rotating
     // pool of finite values below 7 of both signs (zeros, grid points, ties, tiny), mul = 1;
     // then bf16 y times 1 / e4m3(c) for every normal E4M3 code c where |y * mul| < 7.
    const float pool[] = {0.0f, -0.0f, 0.25f, -0.25f, 0.75f, -1.25f, 1.75f, -2.5f, 3.5f, -5.0f, 6.0f, -6.0f,
                          6.99f, -6.99f, 1e-30f, -1e-30f, 0.3f, -4.7f, 2.0f, -3.0f, 5.5f, 0.5f, -1.0f};
    constexpr int kPool = sizeof(pool) / sizeof(pool[0]);
    long bad = 0, cases = 0;
    uint32_t rot = 0;
    auto word = [](const float y[8], float mul) {
      uint32_t w = 0;
      for (int i = 0; i < 8; ++i) w |= e2m1_nibble_finite(y[i] * mul) << (4 * i);
      return w;
    };
    auto check = [&](float p) {
      if (!(fabsf(p) < 7.0f)) return;
      for (int pos = 0; pos < 8; ++pos) {
        float y[8];
        for (int i = 0; i < 8; ++i) y[i] = pool[(rot + 5 * i) % kPool];
        ++rot;
        y[pos] = p;
        ++cases;
        if (e2m1_word_finite(y, 1.0f, e2m1_signs8(y)) != word(y, 1.0f)) ++bad;
      }
    };
    // what the word's assembly rests on, value by value: the magic sum's bits 3-22 are zero
    // (the code alone below bit 23) for every 7th float with |p| < 7
    for (uint32_t u = 0; u < 0x40e00000u; u += 7) {
      const float a = bits_f32(u);
      if (f32_bits(a + bits_f32(e2m1_magic(fmaxf(a, 1.0f)))) & 0x007ffff8u) ++bad;
    }
    for (uint32_t u = 0; u < 0x40e00000u; u += 1021) { check(bits_f32(u)); check(-bits_f32(u)); }
    for (float c : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f, 7.0f})
      for (int d = -1024; d <= 1024; ++d) {
        const int64_t u = int64_t(f32_bits(c)) + d;
        if (u < 0) continue;
        check(bits_f32(uint32_t(u)));
        check(-bits_f32(uint32_t(u)));
      }
    for (uint32_t c = 0x08; c < 0x7f; ++c) {  // the near path: mul = 1 / scale, y bf16
      const float mul = 1.0f / e4m3_normal_to_f32(c);
      for (uint32_t h = 0; h < 0x7f80u; h += 5) {
        float y[8];
        for (int i = 0; i < 8; ++i) {
          const uint32_t hi = (h + 977u * uint32_t(i)) % 0x7f80u;
          y[i] = bf16_to_f32(uint16_t(hi | ((i + h) & 1u ? 0x8000u : 0u)));
          if (!(fabsf(y[i] * mul) < 7.0f)) y[i] = 0.0f;
        }
        ++cases;
        if (e2m1_word_finite(y, mul, e2m1_signs8(y)) != word(y, mul)) ++bad;
      }
    }
    report(bad == 0 && cases > 500000, "e2m1_word_finite", bad);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
