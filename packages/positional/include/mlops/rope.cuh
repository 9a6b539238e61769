/* mlops-positional device header: the rotary-embedding arithmetic, shared by the mlops kernels,
 * the host emulation (compiled as plain C++) and any kernel that includes it (attention's fused
 * q/k path, NVRTC programs).
 *
 * Self-contained on purpose: NVRTC has no standard headers (no <stdint.h>, <math.h>,
 * <cuda_runtime.h>), so this file includes nothing and names only builtin types. Host-only
 * parts sit behind !defined(__CUDA_ARCH__).
 *
 * Numerics (docs/positional.md):
 *   angle  = fp32(float(pos) * inv_freq[i])                    (as Hugging Face computes it)
 *   cos/sin of the fp32 angle: a double-precision evaluation (Cody-Waite reduction with fma,
 *          fdlibm polynomials) rounded once to fp32, then * attention_scaling in fp32;
 *          every step is an explicit IEEE operation, so host, nvcc and NVRTC builds agree bit
 *          for bit whatever -fmad / -ffp-contract says.
 *   out_x  = fp32(fp32(x * c) - fp32(y * s));  out_y = fp32(fp32(y * c) + fp32(x * s))
 *          two products and a sum, no fma: exactly what HF's q*cos + rotate_half(q)*sin does
 *          in fp32, so an fp32 tensor rotated with HF's own cos/sin gives HF's bits.
 *   stores round to nearest even (bf16 / fp16).
 */
#ifndef MLOPS_ROPE_CUH
#define MLOPS_ROPE_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MLOPS_ROPE_HD __host__ __device__ __forceinline__
#else
#define MLOPS_ROPE_HD inline
#endif

namespace mlops {
namespace rope {

typedef unsigned int u32;
typedef unsigned short u16;

/* Layouts of the rotated pairs inside a head. */
enum { kNeox = 0, /* (i, i + rotary_dim/2): half-split, Llama / NeoX / Qwen */
       kGptj = 1  /* (2i, 2i + 1): interleaved, GPT-J / GLM / CogVLM */ };

/* ---- IEEE operations that no compiler may contract or reassociate ------------------------ */
MLOPS_ROPE_HD float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b; /* host: the library compiles with -ffp-contract=off */
#endif
}
MLOPS_ROPE_HD float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
MLOPS_ROPE_HD float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
MLOPS_ROPE_HD double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
MLOPS_ROPE_HD double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
MLOPS_ROPE_HD double dfma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return __builtin_fma(a, b, c); /* correctly rounded (hardware fma or glibc's exact emulation) */
#endif
}
MLOPS_ROPE_HD double drint(double a) {
#if defined(__CUDA_ARCH__)
  return rint(a);
#else
  return __builtin_rint(a); /* default rounding mode: to nearest even */
#endif
}
MLOPS_ROPE_HD float d2f(double a) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(a);
#else
  return (float)a;
#endif
}
/* Position to float, round to nearest even (what torch's position_ids.float() does). */
MLOPS_ROPE_HD float pos2f(long long p) {
#if defined(__CUDA_ARCH__)
  return __ll2float_rn(p);
#else
  return (float)p;
#endif
}

MLOPS_ROPE_HD u32 f2u(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  union { float f; u32 u; } v;
  v.f = f;
  return v.u;
#endif
}
MLOPS_ROPE_HD float u2f(u32 u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  union { float f; u32 u; } v;
  v.u = u;
  return v.f;
#endif
}

/* ---- narrow formats, round to nearest even (the same bits as mlops/common/round.h, which
 * cannot be included here: it needs <stdint.h>) -------------------------------------------- */
MLOPS_ROPE_HD float bf16_to_f32(u16 h) { return u2f((u32)h << 16); }
MLOPS_ROPE_HD u16 f32_to_bf16_int(float f) {
  u32 u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)(((u >> 16) & 0x8000u) | 0x7fc0u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (u16)(u >> 16);
}
MLOPS_ROPE_HD u16 f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  u32 r; /* cvt.rn.bf16x2 exists from sm_80; below, the integer code gives the same bits */
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(0.0f), "f"(f));
  return (u16)(r & 0xffffu);
#else
  return f32_to_bf16_int(f);
#endif
}

MLOPS_ROPE_HD float f16_to_f32_int(u16 h) {
  u32 sign = (u32)(h & 0x8000u) << 16;
  u32 e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    if (m == 0) return u2f(sign);
    float v = (float)m * 5.9604644775390625e-08f; /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  return u2f(sign | ((e + 112u) << 23) | (m << 13));
}
MLOPS_ROPE_HD u16 f32_to_f16_int(float f) {
  u32 u = f2u(f);
  u16 sign = (u16)((u >> 16) & 0x8000u);
  u32 a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (u16)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (u16)(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    u32 r = a - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return (u16)(sign | (r >> 13));
  }
  float v = u2f(a) * 16777216.0f; /* subnormal half: a multiple of 2^-24, exact scaling */
  return (u16)(sign | (u16)drint((double)v));
}
MLOPS_ROPE_HD float f16_to_f32(u16 h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return f16_to_f32_int(h);
#endif
}
MLOPS_ROPE_HD u16 f32_to_f16(float f) {
#if defined(__CUDA_ARCH__)
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  return f32_to_f16_int(f);
#endif
}

/* Element types by storage: bf16 and fp16 are 16-bit patterns; fp32 is float. */
struct bf16 { u16 bits; };
struct f16 { u16 bits; };
template <class T> struct Elem;
template <> struct Elem<float> {
  static MLOPS_ROPE_HD float load(float v) { return v; }
  static MLOPS_ROPE_HD float store(float v) { return v; }
};
template <> struct Elem<bf16> {
  static MLOPS_ROPE_HD float load(bf16 v) { return bf16_to_f32(v.bits); }
  static MLOPS_ROPE_HD bf16 store(float v) { bf16 r; r.bits = f32_to_bf16(v); return r; }
};
template <> struct Elem<f16> {
  static MLOPS_ROPE_HD float load(f16 v) { return f16_to_f32(v.bits); }
  static MLOPS_ROPE_HD f16 store(float v) { f16 r; r.bits = f32_to_f16(v); return r; }
};

/* ---- angles and cos / sin ----------------------------------------------------------------- */
MLOPS_ROPE_HD float angle(long long pos, float inv_freq) { return fmul(pos2f(pos), inv_freq); }

/* cos and sin of a float angle, evaluated in double and rounded once to float. Reduction by
 * k = rint(a * 2/pi), r = a - k*pi/2 with a two-part pi/2 and fma: the error left is
 * ~1e-16 + |k| * 2e-33, far below an fp32 ulp for any |a| < 2^31. Polynomials: fdlibm's
 * __kernel_sin / __kernel_cos on [-pi/4, pi/4]. */
MLOPS_ROPE_HD void sincos_det(float a, float* c_out, float* s_out) {
  const double x = (double)a;
  const double k = drint(dmul(x, 6.36619772367581382433e-01)); /* 2/pi */
  double r = dfma(-k, 1.57079632679489655800e+00, x);          /* pi/2, high part */
  r = dfma(-k, 6.12323399573676603587e-17, r);                 /* pi/2 - high */
  const double z = dmul(r, r);
  /* sin(r) = r + r^3 * (S1 + z*(S2 + ... + z*S6)) */
  double ps = 1.58969099521155010221e-10;
  ps = dfma(z, ps, -2.50507602534068634195e-08);
  ps = dfma(z, ps, 2.75573137070700676789e-06);
  ps = dfma(z, ps, -1.98412698298579493134e-04);
  ps = dfma(z, ps, 8.33333333332248946124e-03);
  ps = dfma(z, ps, -1.66666666666666324348e-01);
  const double sr = dfma(dmul(z, r), ps, r);
  /* cos(r) = 1 - z/2 + z^2 * (C1 + z*(C2 + ... + z*C6)) */
  double pc = -1.13596475577881948265e-11;
  pc = dfma(z, pc, 2.08757232129817482790e-09);
  pc = dfma(z, pc, -2.75573143513906633035e-07);
  pc = dfma(z, pc, 2.48015872894767294178e-05);
  pc = dfma(z, pc, -1.38888888888741095749e-03);
  pc = dfma(z, pc, 4.16666666666666019037e-02);
  const double cr = dadd(dfma(dmul(z, z), pc, dmul(-0.5, z)), 1.0);
  const int q = (int)((long long)k & 3);
  double cs, sn;
  if (q == 0) { cs = cr; sn = sr; }
  else if (q == 1) { cs = -sr; sn = cr; }
  else if (q == 2) { cs = -cr; sn = -sr; }
  else { cs = sr; sn = -cr; }
  *c_out = d2f(cs);
  *s_out = d2f(sn);
}

/* The cos / sin the kernels use for (pos, inv_freq): the fp32 angle's cos / sin times the
 * attention scaling (yarn / longrope), in that order, as HF's emb.cos() * attention_scaling. */
MLOPS_ROPE_HD void cos_sin(long long pos, float inv_freq, float scaling, float* c, float* s) {
  sincos_det(angle(pos, inv_freq), c, s);
  *c = fmul(*c, scaling);
  *s = fmul(*s, scaling);
}

/* One rotated pair: (x, y) -> (x c - y s, y c + x s), two products and a sum each, no fma. */
MLOPS_ROPE_HD void rotate(float x, float y, float c, float s, float* ox, float* oy) {
  *ox = fsub(fmul(x, c), fmul(y, s));
  *oy = fadd(fmul(y, c), fmul(x, s));
}

/* Which of the three position rows (temporal, height, width) frequency i uses in Qwen2-VL's
 * mrope: sections (s0, s1, s2) split the rotary_dim/2 frequencies in order; HF's
 * recomposition_frequencies picks row (section index % 3). */
MLOPS_ROPE_HD int mrope_row(int i, int s0, int s1) { return i < s0 ? 0 : (i < s0 + s1 ? 1 : 2); }

/* A whole head in place or out of place, element by element: the reference form a fused
 * kernel can copy (the mlops kernels vectorize the same arithmetic). cs holds the token's
 * cos[half] then sin[half]. Elements at or past rotary_dim are copied when out != in. */
template <class T>
MLOPS_ROPE_HD void rotate_head(const T* in, T* out, int head_dim, int rotary_dim, int layout, const float* cs) {
  const int half = rotary_dim / 2;
  for (int i = 0; i < half; ++i) {
    const int ix = layout == kNeox ? i : 2 * i;
    const int iy = layout == kNeox ? i + half : 2 * i + 1;
    float ox, oy;
    rotate(Elem<T>::load(in[ix]), Elem<T>::load(in[iy]), cs[i], cs[half + i], &ox, &oy);
    out[ix] = Elem<T>::store(ox);
    out[iy] = Elem<T>::store(oy);
  }
  if (out != in)
    for (int i = rotary_dim; i < head_dim; ++i) out[i] = in[i];
}

}  // namespace rope
}  // namespace mlops

#endif
