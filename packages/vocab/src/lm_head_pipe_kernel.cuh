// The LM head on tensor cores, fed by a cp.async pipeline (sm_80+): mma.m16n8k16 BF16 with the
// weight staged through shared memory so that the loads stay in flight across the tiles' epilogues.
//
// Why (docs/vocab.md): the register-fed instances (lm_head_mma_kernel.cu) issue a warp's loads
// a few k-steps ahead and drain them at every tile's barrier; on the H200 they reach ~57 % of the
// copy bandwidth. Here each warp runs its own pipeline of S stages (2 .. 6: the variant's cap, or what fits) of
// 4 KB chunks (32 rows x 64 k of W) through shared memory with cp.async.cg; chunk q + S - 1 is issued before chunk q is
// multiplied, and the chunk index runs on across tiles, so a tile's epilogue (one __syncthreads)
// happens while the next tile's first S - 1 chunks are on their way. With S = 4 a CTA keeps
// 8 warps x 3 x 4 KB = 96 KB in flight (Little: ~4.2 TB/s x ~1.5 us / 132 SMs ~ 48 KB per SM).
//
// The order of the sum is the MMA instances' (lm_head_mma_kernel.cu): warp s owns hidden segment s
// (segment_begin, whole units of 256) for every tile the CTA takes; within the segment the MMA's
// own order; the 8 segment values add in segment order in shared memory. So the logits do not
// depend on the grid, and the instance is held to the float64 bound (not bit-equal to the host).
//
// Fragments: lane (g = lane / 4, t = lane % 4) takes 16 bytes of W rows g and g + 8 (each row
// block of 16) and of token g's x at k0 + 8t of a 32-k step: k permuted identically in A and B, so
// each fragment register comes from one 16-byte ld.shared (no ldmatrix). Shared chunk layout: row
// r at r * 128 bytes, its 16-byte column c at (c ^ 4 (r & 1)) * 16: the 8 lanes of a quarter-warp
// read rows 2p and 2p + 1, which then fall in different bank halves (no conflicts); the cp.async
// writes of a quarter-warp are one row (a permutation of its 8 columns: no conflicts either).
// The launch is in lm_head_pipe_kernel.cu; tests/c/lm_head_pipe_kernel_on_host.cpp runs this header's
// CTAs on the host (one host thread a GPU thread, the PTX primitives below given host meanings:
// cp.async copies deferred to the wait that needs them, the MMA gathered over the warp).
#pragma once
#include <cuda_runtime.h>

#include "lm_head_params.h"

namespace mlops::vocab {
namespace {

constexpr int kThreads = 32 * kSegments;  // warp s owns segment s
constexpr int kTileRows = 32;             // two m16 row blocks
constexpr int kChunkK = 64;               // k of a chunk: 128 bytes a row
constexpr int kChunkBytes = kTileRows * kChunkK * 2;  // 4 KB a warp a stage
constexpr int kStagesMax = 6;
constexpr int kPartPitch = 36;  // floats a (segment, token) row of partials: conflict-free both ways

#if defined(MLOPS_CUDA_ON_HOST) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800)
#define MLOPS_LM_HEAD_PIPE_BODY 1
#endif

#if defined(MLOPS_CUDA_ON_HOST)
// ---- the primitives on the host (tests/c/lm_head_pipe_kernel_on_host.cpp) ----
// Shared addresses are offsets into the stage buffer (blocks run one after another: one buffer).
alignas(128) static unsigned char g_pipe_stage_mem[kStagesMax * kSegments * kChunkBytes];
static unsigned char* pipe_stage_mem() { return g_pipe_stage_mem; }
static inline uint32_t pipe_smem_addr(const void* p) {
  return uint32_t(static_cast<const unsigned char*>(p) - g_pipe_stage_mem);
}
static inline uint64_t evict_first_policy() { return 0; }
// A thread's copies wait in groups until a wait needs them (the latest a GPU may complete them):
// a wait count one too small leaves a stage unfilled and the results wrong.
struct HostCopy { uint32_t dst; const void* src; uint32_t n; };
struct HostCopyGroups {
  std::vector<HostCopy> open;                 // issued since the last commit
  std::vector<std::vector<HostCopy>> groups;  // committed, not yet waited for
};
static inline void cp_async16(uint32_t dst, const void* src, uint32_t src_bytes, uint64_t) {
  host_thread_local<HostCopyGroups>().open.push_back(HostCopy{dst, src, src_bytes});
}
static inline void cp_async_commit() {
  HostCopyGroups& t = host_thread_local<HostCopyGroups>();
  t.groups.push_back(t.open);
  t.open.clear();
}
static inline void cp_async_wait(int n) {
  HostCopyGroups& t = host_thread_local<HostCopyGroups>();
  while (int(t.groups.size()) > (n < 0 ? 0 : n)) {
    for (const HostCopy& c : t.groups.front()) {
      std::memset(g_pipe_stage_mem + c.dst, 0, 16);
      if (c.n) std::memcpy(g_pipe_stage_mem + c.dst, c.src, c.n);
    }
    t.groups.erase(t.groups.begin());
  }
}
static inline uint4 lds128(uint32_t a) {
  uint4 r;
  std::memcpy(&r, g_pipe_stage_mem + a, 16);
  return r;
}
static inline void pipe_syncwarp() { __syncwarp(); }  // cuda_on_host.h: a barrier of the warp's 32 fibers
// mma.m16n8k16.row.col f32.bf16: lane (g, t) holds A (g, 2t..2t+1) in a0, (g + 8, ..) in a1, the
// same at k + 8 in a2 / a3; B (k 2t..2t+1, n g) in b0, k + 8 in b1; D (g, 2t), (g, 2t + 1),
// (g + 8, 2t), (g + 8, 2t + 1) (the low half of a register is the lower k). Sums in double.
static uint32_t g_mma_regs[kSegments][32][6];
static inline void mma_bf16_k16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                uint32_t b1) {
  const unsigned w = tl_threadIdx.x / 32, l = tl_threadIdx.x % 32;
  const uint32_t in[6] = {a0, a1, a2, a3, b0, b1};
  std::memcpy(g_mma_regs[w][l], in, sizeof in);
  pipe_syncwarp();
  auto elem = [](uint32_t r, int hi) { return double(mlops::bf16_to_f32(uint16_t(hi ? r >> 16 : r & 0xffffu))); };
  auto A = [&](int r, int k) { return elem(g_mma_regs[w][(r % 8) * 4 + (k % 8) / 2][(k / 8) * 2 + r / 8], k % 2); };
  auto B = [&](int k, int n) { return elem(g_mma_regs[w][n * 4 + (k % 8) / 2][4 + k / 8], k % 2); };
  const int g = int(l / 4), t = int(l % 4);
  for (int i = 0; i < 4; ++i) {
    const int r = g + 8 * (i / 2), n = 2 * t + i % 2;
    double d = c[i];
    for (int k = 0; k < 16; ++k) d += A(r, k) * B(k, n);
    c[i] = float(d);
  }
  pipe_syncwarp();
}
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// ---- the primitives on the GPU ----
__device__ __forceinline__ unsigned char* pipe_stage_mem() {
  extern __shared__ __align__(128) unsigned char stage_mem[];
  return stage_mem;
}
__device__ __forceinline__ uint32_t pipe_smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void pipe_syncwarp() { __syncwarp(); }
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void mma_bf16_k16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros and reads nothing. The weight
// is read once: evict-first in L2 (x and the logits stay), and the L2 fetches 256 bytes around it
// (the row's next chunk is the warp's next copy).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, uint32_t src_bytes, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2, %3;" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// At most n groups of this thread still pending (n: 0 .. kStagesMax - 2, a runtime stage count).
__device__ __forceinline__ void cp_async_wait(int n) {
  if (n <= 0) asm volatile("cp.async.wait_group 0;" ::: "memory");
  else if (n == 1) asm volatile("cp.async.wait_group 1;" ::: "memory");
  else if (n == 2) asm volatile("cp.async.wait_group 2;" ::: "memory");
  else if (n == 3) asm volatile("cp.async.wait_group 3;" ::: "memory");
  else asm volatile("cp.async.wait_group 4;" ::: "memory");
}
__device__ __forceinline__ uint4 lds128(uint32_t a) {
  uint4 r;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(a));
  return r;
}
#endif
static_assert(kStagesMax - 2 <= 4, "cp_async_wait takes counts 0 .. 4");

#if defined(MLOPS_CUDA_ON_HOST)
static inline void grid_dependency_wait() {}
static inline void launch_dependents() {}
#else
// PDL (griddepcontrol, sm_90 PTX): no-ops when the launch has no programmatic predecessor /
// dependent, and compiled out below sm_90 (the GPU suite's compute_61 .. 80 builds: their launches
// never ask for the attribute, lm_head_launch_pipe / lm_head_launch_stream).
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}
#endif

#if !defined(MLOPS_CUDA_ON_HOST)
// Clears best and key_hist (the statistics the LM head's atomics add into) and lets the head, launched as its
// programmatic dependent, start at once: the head waits for this grid only before its atomics, so the clear is off
// the critical path, where a memset node sat in front (run 17: 317.0 -> 320.1 us with the memset and the decode;
// session 18 (l), run 100: the pipe kernels' statistics 3.0-3.9 -> 2.1-2.7 us over the plain call at 151936 x 4096).
// One definition for the stream and pipe kernels; each launching .cu gets its own instance (nvcc >= 12.8: launch
// stubs are local to their object).
__global__ void lm_head_stats_clear_kernel(uint64_t* best, uint32_t* key_hist, int tokens) {
  launch_dependents();
  if (best)
    for (int i = threadIdx.x; i < tokens; i += blockDim.x) best[i] = 0;
  if (key_hist)
    for (int i = threadIdx.x; i < 256 * tokens; i += blockDim.x) key_hist[i] = 0;
}
#endif

// Each warp's stream of chunks: for the CTA's tiles j = 0, 1, ... (tile blockIdx.x + j gridDim.x),
// chunks kc = 0 .. nk - 1 of the warp's segment. The next chunk to issue, and its stage.
struct ChunkIssuer {
  int64_t tile;          // its tile
  int kc;                // its chunk within the segment
  int slot;              // its stage
  const uint16_t* row;   // the lane's first row of the tile (v0 + lane / 8) at its segment's column kb + 8 (lane % 8)
  int64_t rows_left;     // rows of the tile from that first row on that exist (V - v0 - lane / 8)
};

// agg: the key-byte counts of a warp's 32 rows go to shared memory as one atomicAdd per distinct
// byte (__match_any_sync groups the lanes; the leader adds the group's size) instead of one per row:
// a tile's logits share a few top bytes, so the per-row atomics serialise on one address. The
// same integer counts.
__global__ void __launch_bounds__(kThreads, 2) lm_head_pipe_kernel(LmHeadParams p, int stages, bool agg) {
#if defined(MLOPS_LM_HEAD_PIPE_BODY)
  __shared__ float part[2][kSegments][8][kPartPitch];
  __shared__ uint32_t hist[8][256];
  // Session 18 (l): with the statistics on sm_90 the launch clears best / key_hist with a small kernel
  // whose programmatic dependent this is (as the stream kernels' launch), instead of a memset node
  // before it; the decode kernel may take its slot now and waits for this grid's end.
  launch_dependents();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ub = segment_begin(warp, p.units), ue = segment_begin(warp + 1, p.units);
  const int64_t kb = int64_t(ub) * kUnit;
  const int64_t ke = int64_t(ue) * kUnit < p.hidden ? int64_t(ue) * kUnit : p.hidden;
  const int nk = ke > kb ? int((ke - kb + kChunkK - 1) / kChunkK) : 0;
  const int64_t tiles = (p.vocab + kTileRows - 1) / kTileRows;
  const bool stats = p.best || p.key_hist;
  if (p.key_hist)
    for (int i = threadIdx.x; i < 8 * 256; i += kThreads) (&hist[0][0])[i] = 0u;

  const uint32_t my_stages = pipe_smem_addr(pipe_stage_mem()) + uint32_t(warp * stages * kChunkBytes);
  const uint64_t policy = evict_first_policy();

  // copy lanes: instruction i moves rows 4i + lane / 8, 16-byte column lane % 8 (4 rows x 128 B);
  // in the stage, row r's column c sits at (c ^ 4 (r & 1)), and r & 1 = (lane / 8) & 1
  const int cr = lane >> 3, cc = lane & 7;
  const uint32_t lane_dst = uint32_t(cr * 128 + ((cc ^ ((cr & 1) << 2)) << 4));
  const int64_t stride4 = 4 * p.weight_stride;
  ChunkIssuer is{int64_t(blockIdx.x), 0, 0, nullptr, 0};
  auto to_tile = [&]() {
    const int64_t v = is.tile * kTileRows + cr;
    is.row = p.weight + v * p.weight_stride + kb + cc * 8;
    is.rows_left = p.vocab - v;
  };
  to_tile();
  auto issue = [&]() {
    if (nk > 0 && is.tile < tiles) {
      // H % 8 == 0: a lane's 16 bytes are all in or all out
      const bool col_in = kb + int64_t(is.kc) * kChunkK + cc * 8 < p.hidden;
      const uint16_t* src = is.row + int64_t(is.kc) * kChunkK;
      const uint32_t dst = my_stages + uint32_t(is.slot * kChunkBytes) + lane_dst;
      // rows past V (the last tile) and columns past H: zero fill, nothing read
      const int full = col_in ? (is.rows_left >= kTileRows ? kTileRows / 4 : int((is.rows_left + 3) / 4)) : 0;
#pragma unroll
      for (int i = 0; i < kTileRows / 4; ++i, src += stride4) {
        const bool in = i < full;
        cp_async16(dst + uint32_t(i * 512), in ? src : p.weight, in ? 16u : 0u, policy);
      }
      if (++is.kc == nk) {
        is.kc = 0;
        is.tile += gridDim.x;
        to_tile();
      }
    }
    cp_async_commit();  // empty past the end: keeps every lane's group count uniform
    is.slot = is.slot + 1 == stages ? 0 : is.slot + 1;
  };
  for (int s = 0; s < stages - 1; ++s) issue();

  // epilogue ownership: warp m takes token m, lane the tile's rows lane (and nothing else)
  uint64_t best = 0;
  int buf = 0, rd = 0;
  const uint32_t swz = uint32_t((g & 1) << 2);
  __syncthreads();  // hist zeroed
#pragma unroll 1
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x, buf ^= 1) {
    float c[2][4] = {};
#pragma unroll 1
    for (int kc = 0; kc < nk; ++kc) {
      cp_async_wait(stages - 2);  // this lane's copies of chunk (tile, kc) have landed
      pipe_syncwarp();            // ... and every lane's; the stage issued next was read by all
      issue();
      const uint32_t base = my_stages + uint32_t(rd * kChunkBytes);
      rd = rd + 1 == stages ? 0 : rd + 1;
      const int64_t k0 = kb + int64_t(kc) * kChunkK;
#pragma unroll
      for (int h = 0; h < kChunkK / 32; ++h) {
        const int64_t k = k0 + 32 * h + 8 * t;
        uint4 xg = make_uint4(0, 0, 0, 0);
        if (g < p.tokens && k < p.hidden) xg = __ldg(reinterpret_cast<const uint4*>(p.x + g * p.x_stride + k));
        const uint32_t col = ((uint32_t(4 * h + t)) ^ swz) << 4;
#pragma unroll
        for (int rb = 0; rb < 2; ++rb) {
          const uint4 wg = lds128(base + uint32_t((rb * 16 + g) * 128) + col);
          const uint4 wg8 = lds128(base + uint32_t((rb * 16 + g + 8) * 128) + col);
          mma_bf16_k16(c[rb], wg.x, wg8.x, wg.y, wg8.y, xg.x, xg.y);
          mma_bf16_k16(c[rb], wg.z, wg8.z, wg.w, wg8.w, xg.z, xg.w);
        }
      }
    }
    // accumulators: (row g, token 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of each row block
#pragma unroll
    for (int rb = 0; rb < 2; ++rb) {
      part[buf][warp][2 * t][rb * 16 + g] = c[rb][0];
      part[buf][warp][2 * t + 1][rb * 16 + g] = c[rb][1];
      part[buf][warp][2 * t][rb * 16 + g + 8] = c[rb][2];
      part[buf][warp][2 * t + 1][rb * 16 + g + 8] = c[rb][3];
    }
    __syncthreads();  // part[buf] complete; part[buf ^ 1] read by everyone (the previous tile)
    const int m = warp;
    const int64_t v = tile * kTileRows + lane;
    uint32_t bin = 0xffffffffu;  // lanes past V: a value no key byte has
    if (m < p.tokens && v < p.vocab) {
      float total = part[buf][0][m][lane];
#pragma unroll
      for (int s = 1; s < kSegments; ++s) total = total + part[buf][s][m][lane];
      const float logit = lm_head_epilogue(total, p.row_scale, m, p.logit_scale);
      p.logits[m * p.logits_stride + v] = logit;
      if (stats) {
        const uint32_t key = key_of(logit);
        const uint64_t b = pack_best(key, uint32_t(v));
        best = b > best ? b : best;
        if (p.key_hist && !agg) atomicAdd(&hist[m][key >> 24], 1u);
        bin = key >> 24;
      }
    }
    if (agg && p.key_hist && m < p.tokens) {  // warp-uniform: every lane of the warp is here
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      if (bin != 0xffffffffu && lane == __ffs(peers) - 1) atomicAdd(&hist[m][bin], uint32_t(__popc(peers)));
    }
  }
  cp_async_wait(0);
  if (!stats) return;
  __syncthreads();
  grid_dependency_wait();  // the clear kernel (a PDL launch's predecessor) is done; else a no-op
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
  (void)agg;
#endif
}

}  // namespace
}  // namespace mlops::vocab
