#pragma once
#include <cuda_runtime.h>
#include "mlops/common/status.h"
#include "rope_params.h"

namespace mlops::rope {
constexpr int kCtaThreads = 256;
constexpr int kDecWarps = kCtaThreads / 32;  // the dec variants: a CTA's warps = its tokens

// The kernel variants as data (mlops_rope_variants lists them, bench --variants times them side by
// side). All give the same bits: they differ in when a thread issues its q / k loads and how many
// items (16 bytes of each half of a head) it keeps in registers.
//  step2:  the run-4 kernel: positions -> cos/sin into shared memory, barrier, then 2 items a
//          thread a step (3 DRAM round trips before the first store).
//  earlyU: a thread issues the loads of its first U items before the CTA reads its positions, so
//          the data round trip overlaps the positions -> cos/sin chain (2 round trips before the
//          first store); the planner gives a CTA about U items a thread so they all go at once.
//          U = 2 / 4 / 8 at 4 / 3 / 2 CTAs an SM (64 / 80 / 128 registers).
//  early2x5 / early2x6: early2 compiled for 5 / 6 CTAs an SM (<= 51 / 42 registers): round-B
//          candidates, more warps to hide the cache path's positions -> cos/sin round trip.
//  stage4 / stage8: earlyU with the U items' q / k copied into the thread's own shared-memory slots
//          by cp.async (sm_80+) instead of registers: the data costs no registers, so U items a
//          thread at 5 / 3 CTAs an SM put 160 / 192 KB an SM in flight before the positions arrive
//          (early2x5: 80 KB); stage4x6: stage4 at 6 CTAs (192 KB; ptxas's 40 registers spill 8
//          bytes on sm_90 bf16 NeoX, stage4 at 5 CTAs none); the cos/sin phase reads all its positions (and on the fly its
//          inv_freq values) before any data load, so at decode on the fly the chain is one DRAM
//          round trip, then sincos in registers (round-A candidates of session 4).
//  flat2 / flat2p / flat4p: no shared memory, no barrier: the call's items as one grid-stride list,
//          each item fetching its own cos/sin (cache row loads or P sincos); flat2 one step a thread
//          (a grid over every item), flat2p / flat4p a persistent grid of SMs x 4 / 2 CTAs, 2 / 4 items
//          a thread a step (round-B candidates of session 4, rope_kernel_flat.cuh; sm_90 bf16 NeoX
//          16-byte: 64 registers, 12 B spilled / 111, none).
//  dec / dec2 / dec4: a warp is one token and a few heads (grid: 8 tokens a CTA, head groups), no CTA barrier:
//          the lane reads its cos/sin straight from the cache row, or on the fly the token's frequencies
//          are spread over the warp's lanes and handed over through the warp's own shared row and
//          __syncwarp; dec one item a lane (32 / chunks a head heads a warp: decode), dec2 / dec4 up
//          to 2 / 4 (T = 4096 on-the-fly candidates: a token's sincos computed 5 / 3 times, not 10)
//          at 4 / 3 / 2 CTAs an SM (sm_90 bf16 NeoX 16-byte: 64 / 80 / 118 registers, no spills;
//          dec2 at 4 CTAs spilled 72 bytes, dec4 at 3 164) (session 5, round A, rope_kernel_dec.cuh).
//  decx5: dec at 5 CTAs an SM for the direct cache path (16-byte aligned cache, no mrope), compiled
//          without the shared-row code (48 registers, no spills on sm_90 bf16 NeoX 16-byte; the full dec
//          kernel at 5 CTAs spills 56 bytes, its data across the sincos code; at 6 CTAs the direct-only
//          kernel spills 8): 40 KB an SM in flight instead of 32, a T = 4096 / prefill candidate from the
//          cache (run 27: dec from the cache 22.06 us of kernel at T = 4096, 220 at 32768 against
//          early2x5's 169); every other call of this variant runs dec's kernel (kernel_variant) (session 5,
//          round B).
// (pipe4 / pipe8, a persistent grid pipelining token blocks, were ids 5 / 6 in round A: slower than
// early2 / early4 at every T on the H200, run 14 (spills, loop overhead), so removed; docs/positional.md.)
struct VariantInfo {
  int id;                // 1 ...; 0 in the C API means the planner's pick
  const char* name;
  int items_per_thread;  // items a thread keeps in flight
  int early;             // 1: q / k loads issued before the positions are read
  int pipe;              // always 0 now (the C API's field stays for ABI 2)
  int ctas_per_sm;       // what __launch_bounds__ allows
  int stage;             // 1: q / k staged in shared memory (cp.async), items_per_thread slots a thread
  int flat;              // 1: flat grid over every item; 2: flat on a persistent grid (SMs x ctas_per_sm)
  int dec;               // 1: a warp a (token, head group) (dec_grid), items_per_thread items a lane;
                         // 2: the same, its own kernel on the direct cache path only (dec's kernel otherwise)
};
constexpr VariantInfo kVariants[] = {{1, "step2", 2, 0, 0, 4, 0, 0},    {2, "early2", 2, 1, 0, 4, 0, 0},
                                     {3, "early4", 4, 1, 0, 3, 0, 0},   {4, "early8", 8, 1, 0, 2, 0, 0},
                                     {5, "early2x5", 2, 1, 0, 5, 0, 0}, {6, "early2x6", 2, 1, 0, 6, 0, 0},
                                     {7, "stage4", 4, 1, 0, 5, 1, 0},   {8, "stage8", 8, 1, 0, 3, 1, 0},
                                     {9, "stage4x6", 4, 1, 0, 6, 1, 0}, {10, "flat2", 2, 1, 0, 4, 0, 1},
                                     {11, "flat2p", 2, 1, 0, 4, 0, 2},  {12, "flat4p", 4, 1, 0, 2, 0, 2},
                                     {13, "dec", 1, 1, 0, 4, 0, 0, 1},  {14, "dec2", 2, 1, 0, 3, 0, 0, 1},
                                     {15, "dec4", 4, 1, 0, 2, 0, 0, 1}, {16, "decx5", 1, 1, 0, 5, 0, 0, 2}};
constexpr int kNumVariants = int(sizeof(kVariants) / sizeof(kVariants[0]));
// The planner's kernels (mlops_rope_plan_path, since H200 run 27): dec from the cache up to kDecWaves
// waves of its grid (decx5 there past decode, run 29) and on the fly up to kDecWarps tokens; stage4 for
// the rest of decode on the fly
// (run 20); early2x5 for prefill from the cache and on the fly (run 17, run 20, run 27). early2 (the
// decode pick from the cache before run 27) stays the split kernel for a caller's own split.
constexpr int kEarly2 = 2, kEarly2x5 = 5, kStage4 = 7, kDec = 13, kDecx5 = 16;
constexpr int kDecWaves = 10;

// One object a dtype (rope_launch_<dtype>.cu), so the three compile in parallel. variant: 1 ... kNumVariants.
cudaError_t launch_bf16(const Params& p, bool vec, int layout, int variant, cudaStream_t s);
cudaError_t launch_fp16(const Params& p, bool vec, int layout, int variant, cudaStream_t s);
cudaError_t launch_fp32(const Params& p, bool vec, int layout, int variant, cudaStream_t s);
cudaError_t launch_cache(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache,
                         cudaStream_t s);

inline cudaError_t launch(const Params& p, mlops_dtype t, bool vec, int layout, int variant, cudaStream_t s) {
  switch (t) {
    case MLOPS_DTYPE_BF16: return launch_bf16(p, vec, layout, variant, s);
    case MLOPS_DTYPE_FP16: return launch_fp16(p, vec, layout, variant, s);
    case MLOPS_DTYPE_FP32: return launch_fp32(p, vec, layout, variant, s);
    default: return cudaErrorInvalidValue;
  }
}

// cos/sin of each token, then 4 base offsets (q in/out, k in/out) and a bad flag a token (the early
// variants use the cos/sin and the flags only: the same size keeps one formula).
inline size_t smem_bytes(const Params& p) {
  return sizeof(float) * size_t(p.tpc) * p.rotary_dim + sizeof(long long) * 4 * p.tpc + sizeof(int) * p.tpc;
}
// The stage variants: cos/sin and the flags, then (16-byte aligned) the slots; a slot holds 16
// bytes of each of kCtaThreads threads, an item takes 2 (NeoX) or 1 (GPT-J).
MLOPS_ROPE_HD unsigned stage_offset(const Params& p) {
  return (unsigned(sizeof(float)) * unsigned(p.tpc) * unsigned(p.rotary_dim) + unsigned(sizeof(int)) * unsigned(p.tpc) +
          15u) / 16u * 16u;
}
// Slots a CTA uses: its first batch's items (at most U a thread) in 16-byte slots.
inline size_t stage_smem_bytes(const Params& p, int U, int layout, int chunks_per_head) {
  const long long items = (long long)p.tpc * p.hpc * chunks_per_head;
  const long long used = (items + kCtaThreads - 1) / kCtaThreads;
  const long long slots = (used < U ? used : U) * (layout == kNeox ? 2 : 1);
  return stage_offset(p) + size_t(slots) * kCtaThreads * 16;
}

// (chunks a head, P pairs a rotation chunk) of a call: what the kernels' Geometry gives for its dtype
// size, path (16-byte or scalar) and layout; the flat variants size their grid by it.
inline int chunks_per_head(const Params& p, int dsize, bool vec, int layout) {
  const int E = vec ? 16 / dsize : 1;
  const int P = !vec ? 1 : (layout == kNeox ? E : E / 2);
  return p.half / P + (p.tail ? (p.head_dim - p.rotary_dim) / E : 0);
}
// The flat variants' grid: every item in one grid row (hpc = heads), grid_x CTAs of kCtaThreads
// threads with U items a step; flat2p / flat4p at most sms x ctas_per_sm CTAs (persistent).
inline void flat_grid(Params& p, const VariantInfo& v, int dsize, bool vec, int layout, int sms) {
  p.hpc = p.heads;
  const long long items = p.tokens * p.heads * chunks_per_head(p, dsize, vec, layout);
  const long long per_cta = (long long)kCtaThreads * v.items_per_thread;
  long long g = (items + per_cta - 1) / per_cta;
  if (v.flat == 2 && g > (long long)sms * v.ctas_per_sm) g = (long long)sms * v.ctas_per_sm;
  if (g > 0x7fffffffLL) g = 0x7fffffffLL;  // the grid-stride loop takes what is left
  p.grid_x = int(g < 1 ? 1 : g);
}

// The dec variants' heads a warp: about 32 U items (U = items a lane), the groups of a token balanced
// (40 heads of 8 chunks: dec 4 heads a warp, 10 groups; dec2 5 of 8; dec4 3 groups of 14, 14, 12).
inline int dec_heads(long long heads, int cph, int U) {
  long long h = 32LL * U / (cph > 0 ? cph : 1);
  h = h < 1 ? 1 : (h > heads ? heads : h);
  const long long groups = (heads + h - 1) / h;
  return int((heads + groups - 1) / groups);
}
// The dec variants' grid: kDecWarps tokens a CTA (a warp each), grid.y the head groups.
inline void dec_grid(Params& p, const VariantInfo& v, int dsize, bool vec, int layout) {
  p.tpc = kDecWarps;
  p.dec_cph = chunks_per_head(p, dsize, vec, layout);
  p.dec_lg = -1;  // a shift instead of a division an item when the chunks a head are a power of two
  for (int lg = 0; lg < 31; ++lg)
    if (p.dec_cph == 1 << lg) p.dec_lg = lg;
  p.hpc = dec_heads(p.heads, p.dec_cph, v.items_per_thread);
  p.grid_x = int((p.tokens + kDecWarps - 1) / kDecWarps);
}

void run_host(const Params& p, mlops_dtype t, int layout);
void cache_host(const float* inv_freq, long long half, float scaling, long long max_pos, float* cache);
}  // namespace mlops::rope
