// The LM head as one stream per SM (sm_90 candidates, `mma_m16n8k16_bf16_stream*`): the pipe kernel's
// MMA, segment rule and epilogue (lm_head_pipe_kernel.cuh), with what GPU run 19's ncu profile and
// bench run 17 point at changed:
//
// - Contiguous rows per CTA. CTA b of G owns rows [V b / G, V (b + 1) / G) and streams them in
//   order, where the pipe kernel's CTAs take 32-row tiles in turn (tile b + j G). Every SM then
//   reads the same number of bytes (32000 rows: 7 or 8 tiles a CTA before, a 5 % tail), and each SM
//   walks its own ~9 MB (151936 x 4096) instead of all 132 SMs entering the same 2 MB pages
//   together: in run 19 the kernel read at 4.40 TB/s under ncu (one weight buffer) but 317 us =
//   3.93 TB/s in the bench (two 1.2 GB copies in rotation); if translation misses are that gap,
//   they stall one SM at a time here, not all at once.
// - Longer runs of a row a chunk. A warp's chunk is 8 KB = ROWS rows x (4096 / ROWS) k: 1 KB of
//   each of 8 rows (ROWS = 8), 512 B of 16 or 256 B of 32, so the bench says whether DRAM prefers
//   the longer runs. ROWS = 8 fills only rows g of the m16 MMA (rows g + 8 are zeros): twice the
//   MMAs, still ~7 % of the tensor pipe at the copy rate.
// - x in registers. Warp s multiplies every row by the same segment of x, so its B fragments are
//   loaded once (16 x 16 bytes a lane: segments of <= 512 k, i.e. H <= 4096; larger H runs the
//   6-stage pipe). The pipe kernel re-reads them from L1 every chunk, and at M = 8 (64 KB of x)
//   they no longer fit next to 192 KB of stages (the 6-stage pipe: 379 vs 337 us at M = 8).
// - Statistics without extra graph nodes on the critical path: the launch clears best / key_hist
//   with a small kernel and starts this one as its programmatic dependent (PDL): the stream starts
//   at once and waits (griddepcontrol.wait) only before its final atomics; it also lets the decode
//   kernel launch early (griddepcontrol.launch_dependents at its start).
// - Optionally (tlb) warp 0 touches the row 2 MB ahead of its next chunk with prefetch.global.L2,
//   so the translation of the next page is there before the stream reaches it.
// - Optionally (rr, round B) the pipe kernel's order instead of contiguous rows: CTA b takes the
//   ROWS-row blocks b, b + G, b + 2G, ... of the whole head, so the 132 SMs read one moving window
//   of the weight together. GPU run 21 with L2 left clean (the standard bench from run 22 on) timed
//   the 6-stage pipe, whose CTAs walk such a window, at 291 us for 151936 x 4096 and stream8 at
//   302; rr asks whether that order is what wins, with the stream's x in registers (the 6-stage
//   pipe re-reads x from L1 and loses from M = 3 on). Blocks of 8 rows also balance a small head:
//   32000 rows are 4000 blocks, 30.3 a CTA (at most 31: a 2 % tail, the pipe's 32-row tiles 5.5 %).
// - Optionally (CHUNK = 4096, the _deep forms, round B) chunks of 4 KB (16 rows x 256 B) in 6
//   stages: 5 x 4 KB x 8 warps = 160 KB in flight a CTA while one chunk is multiplied, as in the
//   6-stage pipe, where 8 KB chunks in 3 stages keep 128 KB (run 21 after the write flush: the pipe
//   with 160 KB in flight 318.9 us, with 96 KB 325.6; the loaded DRAM latency is more than
//   Little's unloaded ~1.5 us).
//
// Order of the sum: as the pipe kernel's (warp s owns segment s; within it the MMA's order over
// 32-k steps in k order; the 8 segment values added in segment order), so the same float64 bound;
// not bit-equal to the host emulation. The chunk geometry and the grid do not change a row's
// arithmetic. tests/c/lm_head_stream_kernel_on_host.cpp runs this kernel on the host.
#pragma once
#include "lm_head_pipe_kernel.cuh"

namespace mlops::vocab {
namespace {

constexpr int kStreamChunkBytes = 8192;  // a warp's chunk (the _deep forms: 4096)
constexpr int kStreamXSteps = 16;        // 32-k steps of x held in registers (a segment <= 512 k)
constexpr int kStreamStagesMax = 3;      // 3 x 8 warps x 8 KB = 192 KB (the H200's 227 KB a block)
static_assert(kStreamStagesMax * kSegments * kStreamChunkBytes <= kStagesMax * kSegments * kChunkBytes,
              "the host runner's stage buffer (lm_head_pipe_kernel.cuh) holds the stream's stages");

template <int ROWS, int CHUNK>
struct StreamGeom {
  static constexpr int kChunk = CHUNK;                      // bytes of a warp's chunk
  static constexpr int kStages = kStreamStagesMax * kStreamChunkBytes / CHUNK;  // 192 KB of stages
  static constexpr int kCK = CHUNK / 2 / ROWS;              // k of a chunk: 512, 256, 128
  static constexpr int kRowBytes = 2 * kCK;                 // a chunk row in shared memory
  static constexpr int kCols = kCK / 8;                     // its 16-byte columns
  static constexpr int kCopies = CHUNK / 512;               // copy instructions a lane a chunk
  static constexpr int kSteps = kCK / 32;                   // 32-k steps a chunk
  static constexpr int kMaxChunks = kStreamXSteps / kSteps; // chunks of a segment <= 512 k
  static constexpr int kBlocks = ROWS >= 16 ? ROWS / 16 : 1;
  static constexpr int kSubs = 32 / ROWS;                   // chunks' rows in a 32-row epilogue tile
  static_assert(kCols % 8 == 0 && kCols >= 16, "a quarter-warp's copies are one row's aligned 8 columns");
};

// grid_dependency_wait / launch_dependents (PDL): lm_head_pipe_kernel.cuh
#if defined(MLOPS_CUDA_ON_HOST)
static inline void prefetch_l2(const void*) {}
#else
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}
#endif

// CTA b's rows: [V b / G, V (b + 1) / G).
MLOPS_HD int64_t stream_row_begin(int64_t vocab, int64_t b, int64_t grid) { return vocab * b / grid; }

// stages: 2 .. G::kStages (what fits); tlb: the page-ahead prefetch; rr: row blocks in turn
// (block b + i G of the head is the CTA's block i) instead of contiguous rows. Needs every segment
// <= 512 k (units <= 16), which the launch checks.
template <int ROWS, int CHUNK>
__global__ void __launch_bounds__(kThreads, 1) lm_head_stream_kernel(LmHeadParams p, int stages, bool tlb, bool rr) {
#if defined(MLOPS_LM_HEAD_PIPE_BODY)
  using G = StreamGeom<ROWS, CHUNK>;
  __shared__ float part[2][kSegments][8][kPartPitch];
  __shared__ uint32_t hist[8][256];
  launch_dependents();  // the decode kernel may take its slot now; it waits for this grid's end
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int64_t kb = int64_t(segment_begin(warp, p.units)) * kUnit;
  const int64_t ke_unit = int64_t(segment_begin(warp + 1, p.units)) * kUnit;
  const int64_t ke = ke_unit < p.hidden ? ke_unit : p.hidden;
  const int nk = ke > kb ? int((ke - kb + G::kCK - 1) / G::kCK) : 0;
  // the CTA's blocks of ROWS rows (sub-tiles): block i starts at row sub_row(i); rows from hi on are
  // not the CTA's (contiguous: its range [lo, hi); rr: the head's end)
  const int64_t cta = blockIdx.x, grid = gridDim.x;
  const int64_t lo = rr ? 0 : stream_row_begin(p.vocab, cta, grid);
  const int64_t hi = rr ? p.vocab : stream_row_begin(p.vocab, cta + 1, grid);
  const int64_t blocks = (p.vocab + ROWS - 1) / ROWS;
  const int nsub = rr ? (blocks > cta ? int((blocks - cta + grid - 1) / grid) : 0) : int((hi - lo + ROWS - 1) / ROWS);
  const int ntile = (nsub + G::kSubs - 1) / G::kSubs;  // 32-row epilogue tiles (contiguous: 32 rows)
  auto sub_row = [&](int i) { return rr ? (cta + int64_t(i) * grid) * ROWS : lo + int64_t(i) * ROWS; };
  const bool stats = p.best || p.key_hist;
  if (p.key_hist)
    for (int i = threadIdx.x; i < 8 * 256; i += kThreads) (&hist[0][0])[i] = 0u;

  const uint32_t my_stages = pipe_smem_addr(pipe_stage_mem()) + uint32_t(warp * stages * CHUNK);
  const uint64_t policy = evict_first_policy();
  // 2 MB ahead, in rows (at least one)
  const int64_t ahead = (int64_t(2) << 20) / (2 * p.weight_stride) + 1;

  // the warp's next chunk to issue: chunk ikc of its segment for rows lo + isub * ROWS ..
  int isub = 0, ikc = 0, islot = 0;
  auto issue = [&]() {
    if (nk > 0 && isub < nsub) {
      const int64_t v0 = sub_row(isub);
      const int64_t k0 = kb + int64_t(ikc) * G::kCK;
      const uint32_t dst0 = my_stages + uint32_t(islot * CHUNK);
#pragma unroll
      for (int i = 0; i < G::kCopies; ++i) {
        const int u = 32 * i + lane, r = u / G::kCols, c = u % G::kCols;
        const int64_t v = v0 + r, k = k0 + 8 * c;
        // rows past the CTA's and columns past the segment (or H): zero fill, nothing read
        const bool in = v < hi && k < ke;
        const uint16_t* src = in ? p.weight + v * p.weight_stride + k : p.weight;
        const uint32_t dst = dst0 + uint32_t(r * G::kRowBytes) + (uint32_t(c ^ ((r & 1) << 2)) << 4);
        cp_async16(dst, src, in ? 16u : 0u, policy);
      }
      if (tlb && lane == 0 && warp == 0 && ikc == 0) {
        const int64_t va = v0 + ahead < p.vocab ? v0 + ahead : p.vocab - 1;
        prefetch_l2(p.weight + va * p.weight_stride);
      }
      if (++ikc == nk) {
        ikc = 0;
        ++isub;
      }
    }
    cp_async_commit();  // empty past the end: keeps every lane's group count uniform
    islot = islot + 1 == stages ? 0 : islot + 1;
  };
  for (int s = 0; s < stages - 1; ++s) issue();

  // B fragments (token g, k = kb + 32 j + 8 t .. + 7), loaded once while the first chunks fly
  uint4 xr[kStreamXSteps];
#pragma unroll
  for (int j = 0; j < kStreamXSteps; ++j) {
    const int64_t k = kb + 32 * j + 8 * t;
    xr[j] = make_uint4(0, 0, 0, 0);
    if (g < p.tokens && k < ke) xr[j] = __ldg(reinterpret_cast<const uint4*>(p.x + g * p.x_stride + k));
  }

  uint64_t best = 0;
  int buf = 0, rd = 0;
  const uint32_t swz = uint32_t((g & 1) << 2);
  __syncthreads();  // hist zeroed
#pragma unroll 1
  for (int tile = 0; tile < ntile; ++tile, buf ^= 1) {
#pragma unroll 1
    for (int j = 0; j < G::kSubs; ++j) {
      if (tile * G::kSubs + j >= nsub) break;  // CTA-uniform
      float c[G::kBlocks][4] = {};
#pragma unroll
      for (int kc = 0; kc < G::kMaxChunks; ++kc) {
        if (kc < nk) {
          cp_async_wait(stages - 2);  // this lane's copies of the chunk have landed
          pipe_syncwarp();            // ... and every lane's; the stage issued next was read by all
          issue();
          const uint32_t base = my_stages + uint32_t(rd * CHUNK);
          rd = rd + 1 == stages ? 0 : rd + 1;
#pragma unroll
          for (int h = 0; h < G::kSteps; ++h) {
            const uint4 xg = xr[kc * G::kSteps + h];
            const uint32_t col = ((uint32_t(4 * h + t)) ^ swz) << 4;
#pragma unroll
            for (int rb = 0; rb < G::kBlocks; ++rb) {
              const uint4 wg = lds128(base + uint32_t((rb * 16 + g) * G::kRowBytes) + col);
              uint4 wg8 = make_uint4(0, 0, 0, 0);  // ROWS = 8: the MMA's rows g + 8 are zeros
              if (ROWS >= 16) wg8 = lds128(base + uint32_t((rb * 16 + g + 8) * G::kRowBytes) + col);
              mma_bf16_k16(c[rb], wg.x, wg8.x, wg.y, wg8.y, xg.x, xg.y);
              mma_bf16_k16(c[rb], wg.z, wg8.z, wg.w, wg8.w, xg.z, xg.w);
            }
          }
        }
      }
      // accumulators: (row g, token 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of each block
#pragma unroll
      for (int rb = 0; rb < G::kBlocks; ++rb) {
        const int r = j * ROWS + rb * 16 + g;
        part[buf][warp][2 * t][r] = c[rb][0];
        part[buf][warp][2 * t + 1][r] = c[rb][1];
        if (ROWS >= 16) {
          part[buf][warp][2 * t][r + 8] = c[rb][2];
          part[buf][warp][2 * t + 1][r + 8] = c[rb][3];
        }
      }
    }
    __syncthreads();  // part[buf] complete; part[buf ^ 1] read by everyone (the previous tile)
    const int m = warp;
    const int i = tile * G::kSubs + lane / ROWS;  // lane's row: of sub-tile j = lane / ROWS
    const int64_t v = sub_row(i) + lane % ROWS;
    if (m < p.tokens && i < nsub && v < hi) {
      float total = part[buf][0][m][lane];
#pragma unroll
      for (int s = 1; s < kSegments; ++s) total = total + part[buf][s][m][lane];
      const float logit = lm_head_epilogue(total, p.row_scale, m, p.logit_scale);
      p.logits[m * p.logits_stride + v] = logit;
      if (stats) {
        const uint32_t key = key_of(logit);
        const uint64_t b = pack_best(key, uint32_t(v));
        best = b > best ? b : best;
        if (p.key_hist) atomicAdd(&hist[m][key >> 24], 1u);
      }
    }
  }
  cp_async_wait(0);
  if (!stats) return;
  __syncthreads();
  grid_dependency_wait();  // the clear kernel (this launch's programmatic predecessor) is done
  if (p.key_hist)
    for (int i = threadIdx.x; i < p.tokens * 256; i += kThreads) {
      const uint32_t n = (&hist[0][0])[i];
      if (n) atomicAdd(p.key_hist + i, n);
    }
  if (p.best && warp < p.tokens) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
      const uint64_t o = __shfl_xor_sync(0xffffffffu, best, off);
      best = o > best ? o : best;
    }
    if (lane == 0 && best != 0) atomicMax(reinterpret_cast<unsigned long long*>(p.best + warp), (unsigned long long)best);
  }
#else
  (void)p;
  (void)stages;
  (void)tlb;
  (void)rr;
#endif
}

}  // namespace
}  // namespace mlops::vocab
