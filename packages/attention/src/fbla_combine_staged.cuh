// combine_staged_kernel: the combine of long rows, its partials staged in shared memory by bulk copies (session 29).
// The arithmetic is combine_warps_kernel's in its order (docs/attention.md "Fixed order"): M = the maximum of the row's
// partial m (exact in any order), e_k = exp_att(m_k - M) (-1 marks an empty partial), then per channel the slot-order
// chains lt = fmaf(l_k, e_k, lt), acc = fmaf(a_k, e_k, acc) and o = acc / lt: the same bits.
// Why a second combine: combine_warps_kernel's one-warp CTAs keep a row's next two tiles of partials in registers
// (8 KB a warp in flight); for B8 L128K's 67 MB of partials (513 slots a row) it took 24.7 us in situ after the refine
// (GPU run 146, torch.profiler). Here a CTA of D threads takes a whole row (thread d <-> channel d), so a tile of 32
// slots is one contiguous 16 KB bulk copy (cp.async.bulk on sm_90: no load instructions or registers spent on it), and
// kStagedStages tiles are in flight while the threads run the chains on the tile that has landed: 18.9 us in situ
// (runs 146 / 147), B8 L128K 3+3 exact 486.4 -> 480.3 us by events (run 147). Measured and not kept (run 146 / 147):
// CTAs of 64 or 32 channels (a bulk copy a slot: B8 L128K +8 / +12 us, B1 L128K +14 us), 3 or 6 stages (the same
// times as 4), an L2 prefetch of the tiles 4 past the ring (+4 us).
// Below sm_90 (the PTX builds) and in the kernel-on-host runner stage_issue copies with the CTA's threads: the same
// values in shared memory.
#pragma once
#include "fbla_decode_stage.cuh"

namespace mlops::fbla {

constexpr int kStagedTile = 32;    // slots a stage (chain_tile's tile)
constexpr int kStagedStages = 4;  // stages in flight a CTA
// The rows (p.s.P slots, ~64 K tokens) from which the kEarly refine's combine is it. GPU run 150 started it at 17, 65
// and 129 slots too: 1.4 - 2.4 us faster in skip modes below 256, ~1 us slower in 4+2 exact; no lower threshold won
// everywhere.
constexpr int kStagedMinP = 256;
constexpr int kStagedMaxP = 4096;  // and up to which (its e / l live in shared memory: 32 KB at this P)

MLOPS_HD bool staged_rows(int P) { return P >= kStagedMinP && P <= kStagedMaxP; }

// The dynamic shared memory of combine_staged_kernel<D> for rows of P slots: the ring of stages, their mbarriers, then
// e and l of every slot.
template <int D>
constexpr int staged_smem_bytes(int P) {
  return kStagedStages * kStagedTile * D * 4 + kStagedStages * 8 + 2 * P * 4;
}

// A CTA of D threads a row; grid: the rows (batch * q heads).
template <int D>
__global__ void __launch_bounds__(D) combine_staged_kernel(DecodeParams p) {
  constexpr int S = kStagedStages, kTileFloats = kStagedTile * D;
  uint8_t* const sm = dyn_smem();
  float* const ring = reinterpret_cast<float*>(sm);
  uint64_t* const bars = reinterpret_cast<uint64_t*>(sm + S * kTileFloats * 4);
  float* const se = reinterpret_cast<float*>(bars + S);
  __shared__ float red[D / 32];
  const int row = blockIdx.x, tid = threadIdx.x, b = row / p.Hq;
  const int P = 1 + chunks_of(closed_groups(len_of(p, b))), T = (P + kStagedTile - 1) / kStagedTile;
  float* const sl = se + P;
  const float* pm = p.s.pm + static_cast<size_t>(row) * p.s.P;
  const float* pl = p.s.pl + static_cast<size_t>(row) * p.s.P;
  // 16-byte aligned, as bulk copies need (the API checks the scratch base; scratch_floats' parts: 256-byte multiples)
  const float* pacc = p.s.pacc + static_cast<size_t>(row) * p.s.P * D;
  // Tile t's partials (contiguous: n slots of D floats) into stage t % S. Every thread calls it, after a barrier that
  // ends every read of the stage (stage_issue's contract).
  auto issue = [&](int t) {
    const int n = P - kStagedTile * t < kStagedTile ? P - kStagedTile * t : kStagedTile;
    stage_issue(&bars[t % S], reinterpret_cast<uint8_t*>(ring + (t % S) * kTileFloats), 0,
                reinterpret_cast<const uint8_t*>(pacc + static_cast<size_t>(kStagedTile) * t * D), 0, n * D * 4, 1);
  };
  stage_init(bars, S);
  for (int t = 0; t < S && t < T; ++t) issue(t);  // the partials do not depend on M: in flight from the start
  float mx = neg_inf();
  for (int i = tid; i < P; i += D) mx = fmax_score(mx, pm[i]);
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) mx = fmax_score(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  if (tid % 32 == 0) red[tid / 32] = mx;
  __syncthreads();
  float Mx = red[0];
#pragma unroll
  for (int w = 1; w < D / 32; ++w) Mx = fmax_score(Mx, red[w]);
  for (int i = tid; i < P; i += D) {
    const float m = pm[i];
    se[i] = m == neg_inf() ? -1.0f : exp_att(m - Mx);
    sl[i] = pl[i];
  }
  __syncthreads();
  // Every tile is waited for, M finite or not (no copy may land in the shared memory of a CTA that has left); with
  // M = -inf every e is -1 and the chains take no step.
  uint32_t phases = 0;
  float lt = 0.0f, acc = 0.0f;
  for (int t = 0; t < T; ++t) {
    const int i0 = kStagedTile * t, n = P - i0 < kStagedTile ? P - i0 : kStagedTile;
    stage_wait(bars, t % S, phases);
    const float* tile = ring + (t % S) * kTileFloats + tid;
    chain_tile(n, [&](int k, float& e, float& l, float& a) { e = se[i0 + k], l = sl[i0 + k], a = tile[k * D]; }, lt, acc);
    if (t + S < T) {
      __syncthreads();  // every thread's reads of stage t % S, before its next copy
      issue(t + S);
    }
  }
  store_combined(p, static_cast<size_t>(row) * D + tid, Mx != neg_inf(), acc, lt);
}

}  // namespace mlops::fbla
