// Shared between the C API, the host emulation and the launches (no CUDA headers needed here
// beyond the runtime types in the launch declarations).
#pragma once
#include <cuda_runtime.h>

#include "fbla_math.h"

namespace mlops::fbla {

// Closed groups of a sequence of length L: group 0 is the sink, groups 1 .. L/128 - 1 are closed.
MLOPS_HD int closed_groups(int L) { return L >= 2 * kGroup ? L / kGroup - 1 : 0; }
MLOPS_HD int chunks_of(int closed) { return (closed + kChunkGroups - 1) / kChunkGroups; }
MLOPS_HD int sink_tokens(int L) { return L < kGroup ? L : kGroup; }
MLOPS_HD int tail_tokens(int L) { return L >= kGroup ? L - kGroup * (closed_groups(L) + 1) : 0; }

// The decode scratch (floats; no initial contents needed: every value read is written first in
// the same call). ub [B][Hq][slots*8]: upper bound score a block; lbmax [B][Hq][nch]: the largest
// lower bound of a chunk; partials [B][Hq][1 + nch]: m, l, acc[D] (slot 0: the BF16 tokens); cnt [B][Hkv] (ints, in
// B * Hq places): the folded combine's count of a (b, kv head)'s finished items, zeroed by the decode's first kernel
// (fold_zero_kernel, or the coarse pass) before the refine counts; work (one int after them): the items the kEarly
// refine has handed out past its first round (session 22), zeroed the same way.
struct Scratch {
  float* ub;
  float* lbmax;
  float* pm;
  float* pl;
  float* pacc;
  int* cnt;
  int* work;
  int nblk, nch, P;
};

inline size_t scratch_floats(int B, int Hq, int D, int slots, Scratch* s, float* base) {
  const int nblk = slots * kBlocksPerGroup, nch = chunks_of(slots), P = 1 + nch;
  auto up = [](size_t n) { return (n + 63) & ~size_t(63); };  // 256-byte aligned parts
  const size_t n_ub = up(size_t(B) * Hq * (nblk > 0 ? nblk : 1));
  const size_t n_lb = up(size_t(B) * Hq * (nch > 0 ? nch : 1));
  const size_t n_m = up(size_t(B) * Hq * P);
  const size_t n_acc = up(size_t(B) * Hq * P * D);
  const size_t n_cnt = up(size_t(B) * Hq + 1);  // + work
  if (s) {
    s->nblk = nblk; s->nch = nch; s->P = P;
    s->ub = base;
    s->lbmax = base + n_ub;
    s->pm = s->lbmax + n_lb;
    s->pl = s->pm + n_m;
    s->pacc = s->pl + n_m;
    s->cnt = reinterpret_cast<int*>(s->pacc + n_acc);
    s->work = s->cnt + size_t(B) * Hq;
  }
  return n_ub + n_lb + 2 * n_m + n_acc + n_cnt;
}

struct DecodeParams {
  mlops_fbla_cache c;
  const uint16_t* q;
  long long qbs, qhs;
  int Hq, Gq;
  void* out;
  int out_fp32;
  const int32_t* lengths;
  float scale, gap;
  int exact;
  int pv;       // MLOPS_FBLA_PV_DIGITS / MLOPS_FBLA_PV_CHAINS: which numerics (fbla_host.cpp runs either)
  int variant;  // 0-based index into kDecodeVariants (the planner's pick resolved)
  int planned;  // 1: variant is the planner's pick for pv chains (decode_device may take kPlannerBelowSm80 instead);
                // 2: the planner's pick for pv digits (decode_t may run kMmaPv4r's kernel instead: on sm_90 always,
                //    elsewhere past kMmaPv's one round of items where kMmaPv4r's CTAs take them in one round)
  int fold;     // set by decode_t only (kMmaPv4f): the refine combines a (b, kv head)'s partials itself
                // (refine_mma4_kernel<.., true>), the coarse pass (when it runs) zeroes s.cnt first
  Scratch s;
};

// The decode variants (mlops_fbla_decode_variants): which refine and combine kernels run.
enum DecodeVariant {
  kItems = 0,
  kItemsCombineWarps = 1,
  kWarps = 2,
  kWarpsCoarse = 3,
  kImmaCoarse = 4,  // warps+coarse_warps with the closed groups' scores by mma.sync s8 (sm_80+; shuffles below)
  kImmaImma = 5,    // kImmaCoarse with the coarse pass's dots by mma.sync s8 too
  kImmaOcc = 6,     // kImmaImma with the refine at more CTAs an SM (fewer registers, some spills)
  kStageImma = 7,   // the chunk's records staged in shared memory (cp.async.bulk on sm_90), IMMA scores
  kStagePipe = 8,   // kStageImma with the V codes in 4 pieces, the P V loop starting on the first
  kStageBf = 9,     // kStageImma with the BF16 item's rows loaded a whole K row / 16 V rows at once, L2-prefetched
  kMmaPv = 10,      // pv digits: 8 warps an item (a warp a 32-token slice), records staged, scores and P V by mma.sync s8
  kMmaPv4 = 11,     // kMmaPv's arithmetic in 54.5 KB of shared memory (D 128): 4 CTAs an SM, 8 warps, <= 64 registers
  kMmaPv4w = 12,    // kMmaPv4 with 4 warps an item (a warp 2 slices), <= 128 registers
  kMmaPv4f = 13,    // kMmaPv4 with the combine folded into the refine (the CTA counting a (b, kv head)'s last item)
  kMmaPv4r = 14,    // kMmaPv4 with the thread index read again at each phase of an item (no spilled index values)
  kDecodeVariantCount = 15
};
// The refine of the digits form: refine_mma_kernel (kMmaPv) or refine_mma4_kernel (kMmaPv4 / kMmaPv4w / kMmaPv4f /
// kMmaPv4r).
inline bool mma_refine(int v) {
  return v == kMmaPv || v == kMmaPv4 || v == kMmaPv4w || v == kMmaPv4f || v == kMmaPv4r;
}
// The P V form each variant computes: the mma_pv variants the digits, every other variant the fp32 chains.
inline int variant_pv(int v) { return mma_refine(v) ? MLOPS_FBLA_PV_DIGITS : MLOPS_FBLA_PV_CHAINS; }
// The planner's pick for pv digits: mma_pv (correct on every arch: below sm_80 its MMA runs by shuffles and DP4A,
// below sm_90 its staging by plain copies); decode_t runs kMmaPv4r's refine past kMmaPv's one round (session 14) and,
// on sm_90, within it too (GPU run 80).
constexpr int kPlannerDigits = kMmaPv;
// The planner's pick: imma_occ+coarse_imma, the fastest variant measured at both target shapes in both modes
// (H200, 3+3: run 18 B1 L16K exact 60.5 us, skip 75.3; B8 L128K exact 1708, skip 2325; against
// warps+coarse_warps 61.7 / 80.7 / 1882 / 2566 and, run 20, stage+coarse_imma 67.2 / 81.6 / 1799 / 2496;
// run 20's own imma_occ / warps rows carried round A's refactor regression, see docs/attention.md).
// Its dots need the tensor core: below sm_80 (the compute_61 / 70 / 75 PTX builds) the planner takes
// warps+coarse_warps (decode_device asks the device). Rows not 16-byte aligned: items+combine_warps (make_decode).
constexpr int kPlannerVariant = kImmaOcc;
constexpr int kPlannerBelowSm80 = kWarpsCoarse;
// Variants whose refine is refine_warps_kernel or runs its BF16 items (2 warps an item, 16-byte BF16 row loads).
inline bool warps_refine(int v) { return v == kWarps || v == kWarpsCoarse || v >= kImmaCoarse; }  // incl. kMmaPv's BF16 rows
inline bool imma_refine(int v) { return v == kImmaCoarse || v == kImmaImma; }  // at 8 CTAs an SM (kImmaOcc: more)
inline bool imma_coarse(int v) { return v == kImmaImma || v == kImmaOcc || v >= kStageImma; }  // incl. kMmaPv
inline bool stage_refine(int v) { return v == kStageImma || v == kStagePipe || v == kStageBf; }  // refine_stage_kernel, PDL combine
// Variants whose coarse pass (skip mode) is coarse_warps_kernel.
inline bool warps_coarse(int v) { return v == kWarpsCoarse || v >= kImmaCoarse; }

struct AppendParams {
  mlops_fbla_cache c;
  mlops_fbla_kv kv;
  int closes;  // groups an append can close a sequence: max_count / 128 + 1
};

void append_host(const AppendParams& p);
void decode_host(const DecodeParams& p);

cudaError_t append_device(const AppendParams& p, cudaStream_t s);
cudaError_t decode_device(const DecodeParams& p, int ctas, cudaStream_t s);

}  // namespace mlops::fbla
