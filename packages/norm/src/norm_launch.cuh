// Launches one instance of the kernel family. Each norm_launch_<dtype>.cu instantiates it for
// one x dtype (three objects compile in parallel). The launch stays in the object that
// instantiates the kernel template: since nvcc 12.8 a template's launch stub is local to
// that object (-static-global-template-stub), so launching it from elsewhere would not link.
#pragma once
#include "norm_kernel.cuh"
#include "norm_row.cuh"
#include "norm_row_lean.cuh"
#include "norm_row_leanq.cuh"
#include "norm_row_leanp.cuh"
#include "norm_row_leanln.cuh"
#include "norm_launch.h"

namespace mlops::norm {

template <class XT, int W, int CAP, int MINB>
cudaError_t launch_v(const Params& p, cudaStream_t s) {
  const int rows_per_cta = 8 / W;
  const int64_t grid = (p.rows + rows_per_cta - 1) / rows_per_cta;
  if (p.simple && p.units <= W * CAP)
    norm_simple_kernel<XT, W, CAP, MINB><<<dim3(unsigned(grid)), kCtaThreads, norm_smem_bytes(W, p.units), s>>>(p);
  else
    norm_kernel<XT, W, CAP, MINB><<<dim3(unsigned(grid)), kCtaThreads, norm_smem_bytes(W, p.units), s>>>(p);
  return cudaGetLastError();
}

// "r" variants (norm_row.cuh), one warp a row. CAP: units a lane keeps for 16-bit x (half of
// that for fp32 x: the same registers); MINB: CTAs of 128 threads an SM, MINB_RES with a
// residual (twice the loads in flight, so more registers). CS: streaming y stores for the
// plain call and the residual one. PERSIST > 0: the persistent kernel at PERSIST CTAs an SM
// for the plain call (residual and quantized calls use the one-row kernel). Quantized calls
// use the same instances in every r variant of a CAP (fewer to compile). Calls the row kernel
// cannot take (gates, groups, partial units, unaligned rows, rows past its registers) go to
// w8c2's kernels, and so do quantized outputs with fp32 x (the lean quantized instances are
// for bf16 / fp16 only, to keep the build's instance count down).
template <class XT, int CAP, int MINB, int MINB_RES, bool CS, int PERSIST>
cudaError_t launch_r(const Params& p, cudaStream_t s) {
  constexpr int kCap = sizeof(XT) == 4 ? CAP / 2 : CAP;
  const bool quant = p.quant != MLOPS_QUANT_NONE;
  if (!p.lean_rows || p.units > kCap || (quant && sizeof(XT) == 4)) return launch_v<XT, 8, 2, 4>(p, s);
  const int64_t ctas = (p.rows + kRowWarps - 1) / kRowWarps;
  const dim3 grid(static_cast<unsigned>(ctas));
  const bool res = p.residual != nullptr;
  if (!quant && !res) {
    if constexpr (PERSIST > 0) {
      const int64_t cap = int64_t(p.sms > 0 ? p.sms : 132) * PERSIST;
      norm_row_persistent_kernel<XT, kCap, PERSIST, CS><<<dim3(unsigned(ctas < cap ? ctas : cap)), kRowThreads, 0, s>>>(p);
    } else {
      norm_row_kernel<XT, kCap, false, MLOPS_QUANT_NONE, MINB, CS><<<grid, kRowThreads, 0, s>>>(p);
    }
    return cudaGetLastError();
  }
  if (!quant) {
    norm_row_kernel<XT, kCap, true, MLOPS_QUANT_NONE, MINB_RES, CS><<<grid, kRowThreads, 0, s>>>(p);
    return cudaGetLastError();
  }
  if constexpr (sizeof(XT) == 2) {
#define MLOPS_NORM_ROW_Q(Q)                                                                   \
  if (p.quant == Q) {                                                                        \
    if (res) norm_row_kernel<XT, kCap, true, Q, MINB_RES, false><<<grid, kRowThreads, 0, s>>>(p); \
    else norm_row_kernel<XT, kCap, false, Q, MINB, false><<<grid, kRowThreads, 0, s>>>(p);        \
    return cudaGetLastError();                                                               \
  }
    MLOPS_NORM_ROW_Q(MLOPS_QUANT_INT8)
    MLOPS_NORM_ROW_Q(MLOPS_QUANT_NVFP4)
    MLOPS_NORM_ROW_Q(MLOPS_QUANT_FP8_STATIC)
    MLOPS_NORM_ROW_Q(MLOPS_QUANT_FP8_DYNAMIC)
#undef MLOPS_NORM_ROW_Q
  }
  return cudaErrorInvalidValue;
}

// "l" variants (norm_row_lean.cuh): the common call (lean_call: RMSNorm, HF order, weight of
// x's dtype, y and / or an INT8 output, nothing else) with 16 or 8 units runs the lean kernel
// at MINB16 / MINB8 CTAs an SM; every other call runs as r16 (its instances: nothing more to
// compile). 8 units at 6 CTAs: r8 (6 CTAs) beat r16 (4) on the same 8-unit rows by 23 % in
// run 14 (16384x2048: 44.5 vs 57.6 us), so more rows in flight count there.
template <class XT, int MINB16, int MINB8, bool CS = false, bool PAIR = false>
cudaError_t launch_l(const Params& p, cudaStream_t s) {
  if constexpr (sizeof(XT) == 2) {
    if (lean_call<XT>(p) && (p.units == 16 || p.units == 8)) {
      const dim3 grid(static_cast<unsigned>((p.rows + kRowWarps - 1) / kRowWarps));
      constexpr int kN = MLOPS_QUANT_NONE, kI8 = MLOPS_QUANT_INT8;
      const bool i8 = p.quant == kI8;
      // CS only for y-only calls and PAIR only for INT8 ones: the other instances are r16l's /
      // r16l4's (nothing more to compile).
      if (p.units == 16 && !i8) norm_row_lean_kernel<XT, 16, MINB16, kN, CS><<<grid, kRowThreads, 0, s>>>(p);
      else if (p.units == 16) norm_row_lean_kernel<XT, 16, MINB16, kI8, false, PAIR><<<grid, kRowThreads, 0, s>>>(p);
      else if (!i8) norm_row_lean_kernel<XT, 8, MINB8, kN, CS><<<grid, kRowThreads, 0, s>>>(p);
      else norm_row_lean_kernel<XT, 8, MINB8, kI8, false, PAIR><<<grid, kRowThreads, 0, s>>>(p);
      return cudaGetLastError();
    }
  }
  return launch_r<XT, 16, 4, 3, false, 0>(p, s);
}

// "lx" variants (norm_row_leanq.cuh): the lean kernel for every quantized output (leanq_call:
// the common call with INT8, FP8 static / dynamic or NVFP4) with 16 or 8 units at MINB16 /
// MINB8 CTAs an SM; y alone runs r16l's / r16l4's instance, everything else r16.
// WS: w + weight_offset staged in shared memory a CTA (stage_weff), y alone included (at
// Y16 CTAs an SM for 16 units); without WS y alone runs r16l's / r16l4's instance, and only w
// as stored (w_as_stored: weight_offset -0) is taken (packed y = t * w, mul_packed8). PERSIST:
// a grid of at most the SMs times the CTAs an SM, warps walking the rows.
template <class XT, int MINB16, int MINB8, bool WS = false, int Y16 = MINB16, bool PERSIST = false>
cudaError_t launch_lx(const Params& p, cudaStream_t s) {
  if constexpr (sizeof(XT) == 2) {
    if ((WS || (p.quant != MLOPS_QUANT_NONE && w_as_stored(p))) && leanq_call<XT>(p) && (p.units == 16 || p.units == 8)) {
      const int64_t ctas = (p.rows + kRowWarps - 1) / kRowWarps;
      auto grid = [&](int per_sm) {
        const int64_t cap = int64_t(p.sms > 0 ? p.sms : 132) * per_sm;
        return dim3(static_cast<unsigned>(PERSIST && ctas > cap ? cap : ctas));
      };
#define MLOPS_NORM_LX(Q, M16)                                                                                   \
  if (p.quant == Q) {                                                                                          \
    if (p.units == 16) norm_row_leanq_kernel<XT, 16, M16, Q, WS, PERSIST><<<grid(M16), kRowThreads, 0, s>>>(p); \
    else norm_row_leanq_kernel<XT, 8, MINB8, Q, WS, PERSIST><<<grid(MINB8), kRowThreads, 0, s>>>(p);            \
    return cudaGetLastError();                                                                                 \
  }
      if constexpr (WS) MLOPS_NORM_LX(MLOPS_QUANT_NONE, Y16)
      MLOPS_NORM_LX(MLOPS_QUANT_INT8, MINB16)
      MLOPS_NORM_LX(MLOPS_QUANT_NVFP4, MINB16)
      MLOPS_NORM_LX(MLOPS_QUANT_FP8_STATIC, MINB16)
      MLOPS_NORM_LX(MLOPS_QUANT_FP8_DYNAMIC, MINB16)
#undef MLOPS_NORM_LX
    }
  }
  return launch_l<XT, MINB16, MINB8>(p, s);
}

// "lx2" / "lx4w" (norm_row_leanq2_kernel): 16-unit rows of leanq_call with w as stored
// (w_as_stored: packed y = t * w, mul_packed8; other offsets go on as r16lx sends them), y alone included, on
// N warps a row at MINB CTAs (of 4 / N rows) an SM; 8-unit rows and the rest as r16lx.
// E ("e" variants r16lx2e / r16lx4we): NVFP4 and FP8 by the kE instances (e2m1_nibble, FP8
// with one clamp); y alone and INT8 run the plain instances (r16lx2's / r16lx4w's: nothing
// more to compile). E = 2 ("f" variants r16lx2f / r16lx4wf): NVFP4 by the kE = 2 instance
// (e2m1_nibble_f / _near, the scale inverses from a table), FP8 by the "e" instances. B
// (r16lx4wb): INT8 by the kB instance (the epilogue in phases, 8 CTAs an SM); the rest as the
// E instances. E = 3 ("g" variants r16lx2g / r16lx4wg, session 13): NVFP4 and bf16 INT8 by the
// kE = 3 instances (f's NVFP4 with e2m1_word_finite; INT8 inverses and scales from int8_tab),
// FP8 as "e", fp16 INT8 and y alone by the plain instances. E = 4 ("h", r16lx4wh, session 14b):
// bf16 INT8 by the kE = 4 instance (g's with int8_tab staged in shared memory); everything else
// as E = 3 (NVFP4 by g's instance: no second copy). PF ("k" variants, session 15): every instance
// with the epilogue's global reads prefetched with the x loads (kPf: 1 into L1, 2 into L2).
//
// U = 32 ("r32lx4we" / "r32lx4wf" / "r32lx4wg", session 16): 8192-wide rows (32 units) on four
// warps a row (8 units a warp, CTAs of 1 row) at MINB CTAs an SM, the E instances of the 16-unit
// twins; other 32-unit calls run w8 (the shape planner's pick at H 8192), everything else the
// 16-unit twin (r16lx4we / wf / wg: nothing more to compile).
// The instances of one (U, MINB, N, E, PF, PRE) for x's type, by p.quant (launch_lx2, launch_u). E = 5 (the "u"
// variants' mix, session 33): INT8 by the plain instance (the unit-pair epilogue of a CTA a row), NVFP4 by g's (3),
// FP8 by e's (1).
template <class XT, int U, int MINB, int N, int E, int PF = 0, bool PRE = false, bool RES = false>
cudaError_t launch_lx2_quant(const Params& p, cudaStream_t s, dim3 grid) {
  constexpr int kT = kLx2Threads<N>;
#define MLOPS_NORM_LX2E(Q, EQ)                                                                     \
  if (p.quant == Q) {                                                                             \
    norm_row_leanq2_kernel<XT, U, MINB, Q, N, EQ, false, PF, PRE, RES><<<grid, kT, 0, s>>>(p);     \
    return cudaGetLastError();                                                                    \
  }
  MLOPS_NORM_LX2E(MLOPS_QUANT_NONE, 0)
  if constexpr ((E == 3 || E == 4) && std::is_same_v<XT, bf16>) MLOPS_NORM_LX2E(MLOPS_QUANT_INT8, E)
  MLOPS_NORM_LX2E(MLOPS_QUANT_INT8, 0)
  MLOPS_NORM_LX2E(MLOPS_QUANT_NVFP4, (E == 4 || E == 5 ? 3 : E))
  MLOPS_NORM_LX2E(MLOPS_QUANT_FP8_STATIC, (E > 0 ? 1 : 0))
  MLOPS_NORM_LX2E(MLOPS_QUANT_FP8_DYNAMIC, (E > 0 ? 1 : 0))
#undef MLOPS_NORM_LX2E
  return cudaErrorInvalidValue;  // not reached: check() admits these five kinds only
}

// CTAs an SM of the 32-unit lx4w instances (r32lx4we / wf / wg): 4, i.e. <= 128 registers, so that
// x's 64 fp32 values a lane fit from the sum to the epilogue (kAgain false) with no spill. Planned
// at H 8192 for every row count since GPU runs 92 / 94 (16384x8192 y 134 us, 94 % of copy bandwidth,
// at this occupancy).
constexpr int kLx8kCtas = 4;

template <class XT, int MINB, int N = 2, int E = 0, bool B = false, int PF = 0, int U = 16>
cudaError_t launch_lx2(const Params& p, cudaStream_t s) {
  static_assert(U == 16 || (U == 32 && N == 4 && !B && PF == 0), "lx2: 16 units, or 32 on four warps");
  if constexpr (sizeof(XT) == 2) {
    if (leanq_call<XT>(p) && w_as_stored(p) && p.units == U) {
      constexpr int kSlots = kRowWarps / N;
      const dim3 grid(static_cast<unsigned>((p.rows + kSlots - 1) / kSlots));
      // 8 CTAs an SM, not MINB's 10: at 10 (48 registers) ptxas 13.0 spilled 48 bytes of the
      // phased epilogue's live values (sm_90 bf16) onto the main path; 8 gives it 64.
      if constexpr (B) {
        if (p.quant == MLOPS_QUANT_INT8) {
          norm_row_leanq2_kernel<XT, 16, 8, MLOPS_QUANT_INT8, N, false, true><<<grid, kRowThreads, 0, s>>>(p);
          return cudaGetLastError();
        }
      }
      return launch_lx2_quant<XT, U, MINB, N, E, PF>(p, s, grid);
    }
  }
  if constexpr (U == 32) {
    if (p.units == 32) return launch_v<XT, 8, 4, 2>(p, s);  // w8
    return launch_lx2<XT, 10, 4, E>(p, s);                   // the 16-unit twin
  } else {
    return launch_lx<XT, 3, 6>(p, s);
  }
}

// "u" variants (session 33: issue 2's quantized outputs at few rows, where a CTA a row runs its epilogue's chain
// alone): rows of 8, 16 or 32 units (H 2048 / 4096 / 8192) of leanq_call with w as stored, on N = units / UW warps a
// row, UW units a warp (2: "lu2m" / "lu2mp", 4: "lu4mp"), CTAs of one row (N >= 4; N = 2 at UW 4 and H 2048: two rows
// of two warps), the E = 5 mix of epilogues; PRE: w loaded with x. CTAs an SM: as many as keep x's fp32 values in
// registers from the sum to the epilogue (kAgain false: 64 registers at UW 2, 128 at UW 4). Other calls run r32lx4we
// (32 units) or r16lx4we.
template <class XT, int UW, bool PRE>
cudaError_t launch_u(const Params& p, cudaStream_t s) {
  // lu2mp takes add + norm too (kRes): its row is loaded with x and w
  constexpr bool kResOk = UW == 2 && PRE;
  if constexpr (sizeof(XT) == 2) {
    if (leanq_call<XT, kResOk>(p) && w_as_stored(p) && (p.units == 8 || p.units == 16 || p.units == 32)) {
      constexpr int kM = UW == 2 ? 1024 : 512;  // registers' threads: 64 / 128 registers a thread
#define MLOPS_NORM_U(U)                                                                                   \
  if (p.units == U) {                                                                                    \
    constexpr int N = U / UW, kSlots = N >= 4 ? 1 : kRowWarps / N;                                       \
    const dim3 grid(static_cast<unsigned>((p.rows + kSlots - 1) / kSlots));                              \
    if constexpr (kResOk) {                                                                              \
      if (p.residual) return launch_lx2_quant<XT, U, kM / kLx2Threads<N>, N, 5, 0, PRE, true>(p, s, grid); \
    }                                                                                                    \
    return launch_lx2_quant<XT, U, kM / kLx2Threads<N>, N, 5, 0, PRE>(p, s, grid);                     \
  }
      MLOPS_NORM_U(8)
      MLOPS_NORM_U(16)
      MLOPS_NORM_U(32)
#undef MLOPS_NORM_U
    }
  }
  if (p.units == 32) return launch_lx2<XT, kLx8kCtas, 4, 1, false, 0, 32>(p, s);  // r32lx4we (w8 past it)
  return launch_lx2<XT, 10, 4, 1>(p, s);                                          // r16lx4we
}

// "r8lx2g" / "r8lx4wg" (session 33): 8-unit rows (H 2048) of leanq_call with w as stored on N = 2 or 4 warps a row (4
// or 2 units a warp) at MINB CTAs an SM, the "g" epilogues (NVFP4 by e2m1_word_finite and the CTA's table, bf16 INT8 by
// int8_tab, FP8 by e's), where r16lw's one warp a row ran NVFP4 by the first epilogue (pair_div2's divisions); other
// calls run r16lx4wg (the 16-unit twin; 8-unit calls it does not take go on to r16lx).
template <class XT, int MINB, int N>
cudaError_t launch_r8lx(const Params& p, cudaStream_t s) {
  if constexpr (sizeof(XT) == 2) {
    if (leanq_call<XT>(p) && w_as_stored(p) && p.units == 8) {
      constexpr int kSlots = kRowWarps / N;
      return launch_lx2_quant<XT, 8, MINB, N, 3>(p, s, dim3(static_cast<unsigned>((p.rows + kSlots - 1) / kSlots)));
    }
  }
  return launch_lx2<XT, 10, 4, 3>(p, s);
}

// "lxp" (norm_row_leanp_kernel, session 12): 16-unit rows of leanq_call with w as stored on four
// warps a row, a persistent grid of at most SMs x CTAS CTAs, each streaming its rows through a
// ring of S row stages in shared memory; y alone and INT8 by the plain epilogue, NVFP4 by the
// "f" one, FP8 by the "e" one (r16lx4we's / r16lx4wf's choices); the rest as r16lx2 sends it on.
template <class XT, int CTAS, int S>
cudaError_t launch_lxp(const Params& p, cudaStream_t s) {
  if constexpr (sizeof(XT) == 2) {
    if (leanq_call<XT>(p) && w_as_stored(p) && p.units == 16) {
      const int64_t cap = int64_t(p.sms > 0 ? p.sms : 132) * CTAS;
      const dim3 grid(static_cast<unsigned>(p.rows < cap ? p.rows : cap));
#define MLOPS_NORM_LXP(Q, EQ)                                                              \
  if (p.quant == Q) {                                                                     \
    norm_row_leanp_kernel<XT, 16, CTAS, Q, EQ, S><<<grid, kRowThreads, 0, s>>>(p);          \
    return cudaGetLastError();                                                            \
  }
      MLOPS_NORM_LXP(MLOPS_QUANT_NONE, 0)
      MLOPS_NORM_LXP(MLOPS_QUANT_INT8, 0)
      MLOPS_NORM_LXP(MLOPS_QUANT_NVFP4, 2)
      MLOPS_NORM_LXP(MLOPS_QUANT_FP8_STATIC, 1)
      MLOPS_NORM_LXP(MLOPS_QUANT_FP8_DYNAMIC, 1)
#undef MLOPS_NORM_LXP
    }
  }
  return launch_lx<XT, 3, 6>(p, s);
}

// "ln" variants (norm_row_leanln.cuh, session 17): LayerNorm calls of leanln_call (single order, weight
// of x's dtype, bias or none, y only) with 8 / 16 / 32 units on N warps a row at M8 / M16 / M32 CTAs an SM
// (0: that H is not taken); every other call runs w8c2 up to 16 units and w8 above (instances the
// shape planner's picks already compile: nothing more to compile).
// PRE ("ln4wp"): w and b loaded with x (kPre).
template <class XT, int N, int M8, int M16, int M32, bool PRE = false>
cudaError_t launch_ln(const Params& p, cudaStream_t s) {
  if constexpr (sizeof(XT) == 2) {
    if (leanln_call<XT>(p)) {
      constexpr int kSlots = kRowWarps / N;
      const dim3 grid(static_cast<unsigned>((p.rows + kSlots - 1) / kSlots));
      const bool b = p.bias != nullptr;
#define MLOPS_NORM_LN(U, M)                                                                                     \
  if constexpr (M > 0) {                                                                                       \
    if (p.units == U) {                                                                                        \
      if (b) norm_row_leanln_kernel<XT, U, (M > 0 ? M : 1), N, true, PRE><<<grid, kRowThreads, 0, s>>>(p);     \
      else norm_row_leanln_kernel<XT, U, (M > 0 ? M : 1), N, false, PRE><<<grid, kRowThreads, 0, s>>>(p);      \
      return cudaGetLastError();                                                                               \
    }                                                                                                          \
  }
      MLOPS_NORM_LN(8, M8)
      MLOPS_NORM_LN(16, M16)
      MLOPS_NORM_LN(32, M32)
#undef MLOPS_NORM_LN
    }
  }
  if (p.units <= 16) return launch_v<XT, 8, 2, 4>(p, s);  // w8c2
  return launch_v<XT, 8, 4, 2>(p, s);                     // w8
}


// The variant table of norm_api.cpp, as instances: keep the two in the same order.
template <class XT>
cudaError_t launch_x(const Params& p, int variant, cudaStream_t s) {
  switch (variant) {
    case 0: return launch_v<XT, 1, 4, 2>(p, s);
    case 1: return launch_v<XT, 2, 4, 2>(p, s);
    case 2: return launch_v<XT, 4, 4, 2>(p, s);
    case 3: return launch_v<XT, 8, 4, 2>(p, s);
    case 4: return launch_v<XT, 2, 2, 4>(p, s);
    case 5: return launch_v<XT, 4, 2, 4>(p, s);
    case 6: return launch_v<XT, 8, 2, 4>(p, s);
    case 7: return launch_r<XT, 16, 4, 3, false, 0>(p, s);
    case 8: return launch_r<XT, 16, 4, 3, true, 0>(p, s);
    case 9: return launch_r<XT, 16, 4, 3, false, 2>(p, s);
    case 10: return launch_r<XT, 8, 6, 4, false, 0>(p, s);
    case 11: return launch_l<XT, 3, 6>(p, s);
    case 12: return launch_l<XT, 4, 6>(p, s);
    case 13: return launch_l<XT, 5, 6>(p, s);
    case 14: return launch_l<XT, 4, 6, true>(p, s);
    case 15: return launch_l<XT, 3, 6, false, true>(p, s);
    case 16: return launch_lx<XT, 3, 6>(p, s);
    case 17: return launch_lx<XT, 4, 6>(p, s);
    case 18: return launch_lx<XT, 3, 6, true, 4>(p, s);
    case 19: return launch_lx<XT, 3, 6, true, 4, true>(p, s);
    case 20: return launch_lx2<XT, 8>(p, s);
    case 21: return launch_lx2<XT, 10, 4>(p, s);
    case 22: return launch_lx2<XT, 8, 2, 1>(p, s);
    case 23: return launch_lx2<XT, 10, 4, 1>(p, s);
    case 24: return launch_lx2<XT, 10, 4, 1, true>(p, s);
    case 25: return launch_lx2<XT, 8, 2, 2>(p, s);
    case 26: return launch_lx2<XT, 10, 4, 2>(p, s);
    case 27: return launch_lxp<XT, 2, 4>(p, s);
    case 28: return launch_lxp<XT, 4, 3>(p, s);
    case 29: return launch_lxp<XT, 8, 2>(p, s);
    case 30: return launch_lx2<XT, 8, 2, 3>(p, s);
    case 31: return launch_lx2<XT, 10, 4, 3>(p, s);
    case 32: return launch_lx2<XT, 10, 4, 4>(p, s);
    case 33: return launch_lx2<XT, 8, 2, 3, false, 1>(p, s);
    case 34: return launch_lx2<XT, 10, 4, 3, false, 1>(p, s);
    case 35: return launch_lx2<XT, 10, 4, 3, false, 2>(p, s);
    case 36: return launch_lx2<XT, kLx8kCtas, 4, 1, false, 0, 32>(p, s);
    case 37: return launch_lx2<XT, kLx8kCtas, 4, 2, false, 0, 32>(p, s);
    case 38: return launch_lx2<XT, kLx8kCtas, 4, 3, false, 0, 32>(p, s);
    case 39: return launch_ln<XT, 1, 6, 3, 0>(p, s);
    case 40: return launch_ln<XT, 2, 8, 8, 4>(p, s);
    case 41: return launch_ln<XT, 4, 10, 8, 4>(p, s);
    case 42: return launch_ln<XT, 4, 8, 4, 2, true>(p, s);
    case 43: return launch_u<XT, 2, false>(p, s);
    case 44: return launch_u<XT, 2, true>(p, s);
    case 45: return launch_u<XT, 4, true>(p, s);
    case 46: return launch_r8lx<XT, 8, 2>(p, s);
    case 47: return launch_r8lx<XT, 10, 4>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::norm
