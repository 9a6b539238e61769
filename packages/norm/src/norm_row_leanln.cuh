// The "ln" lean variants (session 17): LayerNorm on the lean row kernels' structure.
//
// Why (GPU run 92, H200, bf16, L2 flushed): LayerNorm had no lean kernel. Its calls ran the shape
// planner's w8c2 / w8 (norm_kernel.cuh: a CTA of 256 threads a row or two, a CTA barrier between the
// row's loads and its stores, every flag a run-time branch), 0.68-0.70x F.layer_norm's speed at
// H 8192 (2048 and 16384 rows), 0.84-0.92x at H 4096, while RMSNorm's lean kernels run near the copy
// bandwidth (16384x8192 y 134 us, 94 % of it).
//
// The call taken (leanln_call): LayerNorm in the single order (nn.LayerNorm's: y = round(n * w_eff
// [+ b]), n = (v - mean) * r), a weight of x's dtype (bf16 / fp16) with any weight_offset (0: applied
// as -0, w itself; 1: LayerNorm1P), with or without a bias of the weight's dtype, y only, no residual /
// gate / group / quantized output, exactly U units a row (U = 8, 16, 32: H = 2048, 4096, 8192). The
// bias is a compile-time flag; everything else the general kernels' run-time flags decide is fixed.
// A row is held by N warps (1, 2 or 4; U / N units each) as 16-byte loads of every unit issued up
// front; the unit sums meet in shared memory (PartRow of norm_row_leanq.cuh, one array a sum, so the
// second meeting cannot overwrite what a warp still reads of the first) and every warp folds all U
// of them in unit order.
//
// The same arithmetic and order as row_finish / the host emulation (norm_host.cpp), so its bits:
//   * the mean: per unit the lane fold of 8 FADDs from +0 (lane_sum8) and the xor butterfly, units
//     folded left to right from +0, mean = s / float(H) (IEEE division);
//   * the variance: d = v - mean per element, per unit lane_sumsq8(d) (8 FFMAs from +0) and the
//     butterfly, units folded in order, r = rms_r(s2, H, eps) = 1 / sqrtf(s2 / H + eps);
//   * y = round_x(((v - mean) * r) * (w + weight_offset) [+ b]): the FMUL, FMUL, FADD of epilogue()'s
//     single order (-fmad=false: nothing is contracted), one rounding by pack8.
// x's fp32 values are kept in registers from the mean to y where they fit the registers of kMinCtas
// CTAs an SM, else unpacked again from the packed x (kAgain: the same values).
#pragma once
#include "norm_row_leanq.cuh"

namespace mlops::norm {

// Whether the "ln" kernels take the call (U fixed by the caller's dispatch on p.units).
template <class XT>
inline bool leanln_call(const Params& p) {
  return p.lean_rows && p.quant == MLOPS_QUANT_NONE && p.y != nullptr && p.kind == MLOPS_NORM_LAYER &&
         p.order == MLOPS_ORDER_SINGLE && p.weight != nullptr && p.residual == nullptr &&
         p.w_dtype == dtype_code<XT>() && p.group == p.hidden && int64_t(p.units) * kUnit == p.hidden;
}

// U units a row on N warps (H = U / N a warp; CTAs of 4 / N rows) at kMinCtas CTAs an SM; kBias: a
// bias of the weight's dtype is added after the weight. kPre ("ln4wp", for few rows): the warp's units of
// w (and b) are loaded with x, before the two sums, instead of in the epilogue after the row's second
// meeting: at a few rows an SM the kernel is one chain of latencies, and with L2 cold the weight's DRAM
// round trip otherwise follows the reductions. Costs registers (4 or 8 more a unit), so fewer CTAs an SM.
template <class XT, int U, int kMinCtas, int N, bool kBias, bool kPre = false>
__global__ void __launch_bounds__(kRowThreads, kMinCtas) norm_row_leanln_kernel(Params p) {
  static_assert(sizeof(XT) == 2, "ln rows: bf16 / fp16 x");
  static_assert(kRowWarps == 4 && (N == 1 || N == 2 || N == 4) && U % N == 0, "ln rows: 1, 2 or 4 warps a row");
  constexpr int H = U / N;
  constexpr int kSlots = kRowWarps / N;
  constexpr bool kAgain = H * 8 + 40 > 65536 / (kRowThreads * kMinCtas);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int slot = warp / N, part = warp % N;
  const int64_t row = int64_t(blockIdx.x) * kSlots + slot;
  // All N warps of a row leave together (N = 4: the whole CTA; N = 2: the pair of a named barrier).
  if (row >= p.rows) return;
  const int k0 = part * H;
  const XT* xr = static_cast<const XT*>(p.x) + row * p.x_stride + k0 * kUnit + lane * 8;
  Raw8<XT> raw[H];
#pragma unroll
  for (int k = 0; k < H; ++k) raw[k].q[0] = ld_stream16(xr + k * kUnit);
  Raw8<XT> wpre[kPre ? H : 1], bpre[kPre && kBias ? H : 1];
  if constexpr (kPre) {
    const XT* wr = static_cast<const XT*>(p.weight) + k0 * kUnit + lane * 8;
    const XT* br = static_cast<const XT*>(p.bias) + k0 * kUnit + lane * 8;
#pragma unroll
    for (int k = 0; k < H; ++k) {
      wpre[k].q[0] = ld_const16(wr + k * kUnit);
      if constexpr (kBias) bpre[k].q[0] = ld_const16(br + k * kUnit);
    }
  }
  __shared__ float us_mean[kSlots][N * H];
  __shared__ float us_var[kSlots][N * H];
  auto fold = [&](const float(&u)[H], float(*us)[N * H]) {
    if constexpr (N == 1) {
      (void)us;
      return WholeRow<H>{}.fold(u);
    } else {
      return PartRow<H, N>{us, nullptr, slot, part}.fold(u);
    }
  };
  auto unpack_x = [&](int k, float e[8]) {
    if constexpr (kAgain) unpack8_again(raw[k], e);
    else unpack8_pairs(raw[k], e);
  };
  float u[H];
#pragma unroll
  for (int k = 0; k < H; ++k) {
    float e[8];
    unpack8_pairs(raw[k], e);
    u[k] = warp_butterfly32(lane_sum8(e));
  }
  const float mean = fold(u, us_mean) / float(p.group);
#pragma unroll
  for (int k = 0; k < H; ++k) {
    float e[8];
    unpack_x(k, e);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = e[i] - mean;
    u[k] = warp_butterfly32(lane_sumsq8(e));
  }
  const float r = rms_r(fold(u, us_var), p.group, p.eps);
  const float off = p.weight_offset;
  const XT* wr = static_cast<const XT*>(p.weight) + k0 * kUnit + lane * 8;
  const XT* br = kBias ? static_cast<const XT*>(p.bias) + k0 * kUnit + lane * 8 : nullptr;
  XT* yr = static_cast<XT*>(p.y) + row * p.y_stride + k0 * kUnit + lane * 8;
#pragma unroll
  for (int k = 0; k < H; ++k) {
    Raw8<XT> wq;
    if constexpr (kPre) wq = wpre[k];
    else wq.q[0] = ld_const16(wr + k * kUnit);  // L1-cached: every row re-reads w (and b)
    float e[8], w[8];
    unpack_x(k, e);
    unpack8_pairs(wq, w);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = ((e[i] - mean) * r) * (w[i] + off);
    if constexpr (kBias) {
      Raw8<XT> bq;
      if constexpr (kPre) bq = bpre[k];
      else bq.q[0] = ld_const16(br + k * kUnit);
      float b[8];
      unpack8_pairs(bq, b);
#pragma unroll
      for (int i = 0; i < 8; ++i) e[i] = e[i] + b[i];
    }
    Raw8<XT> o;
    pack8<XT>(e, o);  // y = round_x(u): cvt.rn
    st16<false>(yr + k * kUnit, o.q[0]);
  }
}

}  // namespace mlops::norm
