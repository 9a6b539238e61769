// The "stage" decode variant (stage+coarse_imma): the refine of imma+coarse_imma with the closed chunk's
// records copied into shared memory at the item's start, so an item waits for memory twice (K part,
// V part) instead of at every per-token load (GPU run 19, ncu of warps+coarse_warps at B1 L16K: 13.9K
// instructions a warp at 7 cycles each, 2 warps a scheduler, L1TEX waits the largest stall).
// - a CTA of 2 warps an item, warp g <-> group g of the chunk, as refine_warps_kernel;
// - the chunk's records from v_min on (V min / scale, K fields, V codes: 25.6 KB a group at D 128)
//   are copied by cp.async.bulk (sm_90, the TMA engine) completing on two mbarriers (the K part, then
//   the V part), while the warps load q and set up the q digits (k_min / k_scale from global memory);
// - the scores by mma_s8_16x8x32 as imma_scores, kept in registers (lane (gid, tig): tokens 16 m + gid
//   and + 8, head tig), the chunk max, then p and p * v_scale written over the group's K fields (read
//   by then); the P V loop as refine_warps' (lane 4 channels x 4 heads) on the shared copies, and the
//   l / V-min chains of head h on lane h in the same loop (the same token order, no serial phase);
// - the BF16 item (slot 0) runs refine_warps_item on a WarpSmem laid over the same buffer.
// Every chain is one of the host emulation's (fbla_host.cpp), in its order: the same bits.
// Shared memory: 4.4 KB + 2 x 25.6 KB = 55.7 KB a CTA at D 128, so 4 CTAs an SM (228 KB on sm_90):
// B1 L16K's 520 items in one round.
#pragma once
#include "fbla_decode_warps.cuh"

namespace mlops::fbla {

// ---- staging: global -> shared, one wait a part ------------------------------------------------
// sm_90: cp.async.bulk by thread 0 completing on an mbarrier (no registers or threads spent on the copy).
// Below sm_90 (the compute_61 / 70 / 75 / 80 PTX builds) and in the kernel-on-host runner: 16-byte copies
// by every thread and a CTA barrier at issue time, the wait a no-op (correct everywhere; fast on sm_90
// only, hence the variants' min_sm 90). Waits need not be uniform over the CTA, but every thread keeps
// every barrier's phase: it calls stage_wait once for each completion of each barrier.
// The sm_90 path's cp.async.bulk, mbarrier expect_tx / try_wait and fence.proxy.async are PTX ISA 8.0
// (CUDA 12.0): nvcc 11.8's ptxas rejects them ("Unknown modifier '.mbarrier_init'"). An 11.8 build takes
// the copies and CTA barrier of the path below sm_90 on sm_90 as well: the same values in shared memory,
// so the same results, only without the TMA engine. With nvcc >= 12 this is the sm_90 test it always was.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && __CUDACC_VER_MAJOR__ >= 12
#define MLOPS_FBLA_STAGE_TMA 1
#else
#define MLOPS_FBLA_STAGE_TMA 0
#endif

__device__ __forceinline__ uint8_t* dyn_smem() {
#if defined(MLOPS_FBLA_ON_HOST)
  return emu_dyn_smem();
#else
  extern __shared__ __align__(128) uint8_t fbla_dyn_smem[];
  return fbla_dyn_smem;
#endif
}

#if MLOPS_FBLA_STAGE_TMA
__device__ __forceinline__ uint32_t smem_u32(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}
#endif

// Every thread calls it once, before the first stage_issue (one arrival a phase: thread 0's expect_tx).
__device__ __forceinline__ void stage_init(uint64_t* bars, int n) {
#if MLOPS_FBLA_STAGE_TMA
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bars[i])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
#endif
  (void)bars;
  (void)n;
  __syncthreads();
}

// ng pieces of `bytes` (multiples of 16, 16-byte aligned): piece i from src + i * sstride to dst + i * dstride,
// completing on *bar. Every thread calls it (uniformly), after a CTA barrier that ends every access to dst.
__device__ __forceinline__ void stage_issue(uint64_t* bar, uint8_t* dst, long long dstride, const uint8_t* src,
                                            long long sstride, int bytes, int ng) {
#if MLOPS_FBLA_STAGE_TMA
  if (threadIdx.x == 0) {
    // the threads' (generic proxy) accesses to dst, ordered by the caller's barrier, before the async proxy's writes
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes * ng) : "memory");
    // The records are read once: their lines leave L2 first (evict_first), so that the lines the L2 prefetch brought
    // in for the CTAs' next items stay (a round of items at B8 L128K is ~27 MB, the H200's L2 60 MB). A hint: no value changes.
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    for (int i = 0; i < ng; ++i)
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
              smem_u32(dst + i * dstride)),
          "l"(src + i * sstride), "r"(bytes), "r"(smem_u32(bar)), "l"(pol)
          : "memory");
  }
#else
  for (int i = 0; i < ng; ++i) {
    const U4* s = reinterpret_cast<const U4*>(src + i * sstride);
    U4* d = reinterpret_cast<U4*>(dst + i * dstride);
    for (int k = threadIdx.x; k < bytes / 16; k += blockDim.x) d[k] = s[k];
  }
  (void)bar;
  __syncthreads();
#endif
}

// n0 + n1 rows of `bytes` (a multiple of 16, 16-byte aligned, as the sources' rows): row i < n0 from src0 + i * sstride,
// row n0 + i from src1 + i * sstride, to dst + (row) * dstride, completing on *bar (one phase for all of them);
// stage_issue's contract (every thread calls it, uniformly, after a CTA barrier that ends every access to dst). sm_90:
// a bulk copy a row, thread r issuing row r (more where there are more rows than threads), so that no thread queues a
// hundred copies; thread 0 announces them all (expect_tx). A row's complete_tx may reach the barrier before that: the
// tx-count is signed (PTX ISA: within +-(2^20 - 1)) and the phase cannot complete before thread 0's arrival, its one.
__device__ __forceinline__ void stage_rows(uint64_t* bar, uint8_t* dst, long long dstride, const uint8_t* src0, int n0,
                                           const uint8_t* src1, int n1, long long sstride, int bytes) {
  const int n = n0 + n1;
#if MLOPS_FBLA_STAGE_TMA
  if (static_cast<int>(threadIdx.x) < n) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the threads' accesses to dst before the copies
    if (threadIdx.x == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes * n) : "memory");
    for (int r = threadIdx.x; r < n; r += blockDim.x)
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       smem_u32(dst + r * dstride)),
                   "l"(r < n0 ? src0 + r * sstride : src1 + (r - n0) * sstride), "r"(bytes), "r"(smem_u32(bar))
                   : "memory");
  }
#else
  const int per = bytes / 16;
  for (int k = threadIdx.x; k < n * per; k += blockDim.x) {
    const int r = k / per, j = k - r * per;
    const uint8_t* src = r < n0 ? src0 + r * sstride : src1 + (r - n0) * sstride;
    reinterpret_cast<U4*>(dst + r * dstride)[j] = reinterpret_cast<const U4*>(src)[j];
  }
  (void)bar;
  __syncthreads();
#endif
}

// Waits for the current phase of bars[i] (its parity: bit i of phases, then flipped); afterwards the part
// completing on it is visible to the calling thread.
__device__ __forceinline__ void stage_wait(uint64_t* bars, int i, uint32_t& phases) {
  const uint32_t phase = (phases >> i) & 1u;
#if MLOPS_FBLA_STAGE_TMA
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(&bars[i])), "r"(phase)
        : "memory");
#else
  (void)bars;
  (void)phase;
#endif
  phases ^= 1u << i;
}

// float(byte i of w), exactly, as byte_f: one byte permute puts the byte under the exponent of 2^23.
__device__ __forceinline__ float code_f(uint32_t w, int i) {
  return bits_f32(__byte_perm(w, 0x4B000000u, 0x7540u + static_cast<uint32_t>(i))) - 8388608.0f;
}

// The front of the dynamic shared memory (the rest: the staged records, then the aliases over the K fields).
struct alignas(16) StageSmem {
  int8_t what[kWarpHeads][kChunkGroups][2][128];  // q digits in perm_channel order
  float qf[kWarpHeads][128];
  float sw[kWarpHeads][kChunkGroups], bias[kWarpHeads][kChunkGroups];
  int32_t wsum[kWarpHeads][kChunkGroups], wabs[kWarpHeads][kChunkGroups];
  float red[kChunkGroups][kWarpHeads], m[kWarpHeads], thr[kWarpHeads];
  float lg[kChunkGroups][kWarpHeads], bs[kChunkGroups][kWarpHeads];
  RefFlags ref;
};
constexpr int kStageFront = (static_cast<int>(sizeof(StageSmem)) + 127) / 128 * 128;
static_assert(kStageFront >= 2 * kScaleBytes * 128,
              "a staged group's record pointer (srec, l.vmin = 2 kScaleBytes D before its copy) stays in the buffer");

// Bytes staged a group (from v_min on) and the dynamic shared memory of refine_stage_kernel.
// (the V min / scale arrays and the codes: the same in both modes)
MLOPS_HD constexpr int stage_group_bytes(int D) {
  return static_cast<int>(layout(D, MLOPS_FBLA_3_3).bytes - layout(D, MLOPS_FBLA_3_3).vmin);
}
MLOPS_HD constexpr int stage_smem_bytes(int D) { return kStageFront + kChunkGroups * stage_group_bytes(D); }
static_assert(stage_smem_bytes(128) >= static_cast<int>(sizeof(WarpSmem)) && stage_smem_bytes(64) >= static_cast<int>(sizeof(WarpSmem)),
              "the BF16 item's WarpSmem fits the buffer");

// imma_scores with the scores left in registers: sc[m][r] = the score of token 16 (m0 + m) + gid + 8 r, head tig,
// or -inf (block not refined for the head, or head >= nh), for kNB blocks from block m0 (mma_pv: a slice's 2).
// rec: the staged record (shared memory). The K codes' fragment-ordered fields (fo_k_block_dots: the coarse and fine
// registers by 2 - 3 vector loads each, two accumulators; until session 25 bit planes, gathered by merge_pairs /
// code4_from_pairs: the same integers).
// kCB (refine_mma4_kernel, session 17 a2): l.cb known to the caller (3 or 4: layout()'s two modes; 0 = read from l), so
// the field widths and every word's offset are immediates; else the two forms behind a uniform branch.
template <int D, class Smem, int kNB = kBlocksPerGroup, int kCB = 0>
__device__ __forceinline__ void imma_scores_regs(const Layout& l, const Smem& sm, const uint8_t* rec, int g, int nh,
                                                 float scale, float (&sc)[kNB][2], int m0 = 0) {
  static_assert(kCB == 0 || kCB == 3 || kCB == 4, "layout(): cb is 3 or 4");
  constexpr int S = D / 32;
  const int lane = threadIdx.x & 31, tig = lane & 3;
  uint32_t bf[S][2];
  load_bfrag<D>(sm, g, bf);
  const float bias = sm.bias[tig][g], sw = sm.sw[tig][g];
  const uint32_t* kc = reinterpret_cast<const uint32_t*>(rec + l.kc);
  const uint32_t* kf = reinterpret_cast<const uint32_t*>(rec + (kCB ? l.kc + int64_t(kGroup) * kCB * (D / 8) : l.kf));
#pragma unroll
  for (int m = 0; m < kNB; ++m) {
    const bool any = sm.ref.any(g * kBlocksPerGroup + m0 + m);  // (heads >= nh: 0)
    const bool mine = tig < nh && sm.ref.on(tig, g * kBlocksPerGroup + m0 + m);
    sc[m][0] = neg_inf();
    sc[m][1] = neg_inf();
    if (!any) continue;  // uniform over the warp
    int32_t c[4];
    if constexpr (kCB != 0)
      fo_k_block_dots<D, kCB>(kc, kf, m0 + m, lane, bf, c);
    else
      fo_k_block_dots<D>(l.cb, kc, kf, m0 + m, lane, bf, c);
    if (mine) {
      sc[m][0] = score_of(bias, sw, c[0] * 256 + c[1], scale);
      sc[m][1] = score_of(bias, sw, c[2] * 256 + c[3], scale);
    }
  }
}

// A refine pass's q rows (sm.qf) and refine flags (sm.ref) for heads hq0 .. hq0 + nh - 1, by the CTA's kN threads:
// every block of the ng groups when `all` (exact mode, or mma_pv's BF16 item), else the blocks whose bound ub
// reaches the head's threshold (max over the row's chunks of lbmax, - gap: warp 0 into sm.thr). A CTA barrier
// inside; the flags of the !all case are written after it (the caller's next barrier publishes them).
// refine_stage_kernel and refine_mma_kernel (StageSmem / MmaSmem: the same field names). kLoadQ false
// (refine_mma4_kernel at D 128, session 16): the rows are left out; the caller writes sm.qf where it is read.
// kAllNoBar (refine_mma4_kernel's kEarly instance, session 17): the barrier is left out where `all` (nothing after it
// reads sm.thr then; the caller's next barrier publishes the flags and, for the BF16 item, sm.qf).
template <int D, int kN, class Smem, bool kLoadQ = true, bool kAllNoBar = false>
__device__ __forceinline__ void pass_q_and_flags(const DecodeParams& p, Smem& sm, const Item& it, int hq0, int nh,
                                                 int ng, int ch, int nch, bool all, int tid) {
  constexpr int kRef = kChunkGroups * kBlocksPerGroup;
  if constexpr (kLoadQ)
    for (int i = tid; i < nh * D; i += kN) {
      const int hi = i / D, d = i % D;
      sm.qf[hi][d] = bf16_to_f32(p.q[it.b * p.qbs + static_cast<long long>(hq0 + hi) * p.qhs + d]);
    }
  for (int rb = tid; rb < kRef; rb += kN)  // !all: set below from the bounds
    sm.ref.set_block(rb, nh, all && rb / kBlocksPerGroup < ng);
  if (!all && tid < 32) {
    for (int hi = 0; hi < nh; ++hi) {
      const float M = row_lbmax(p, it.b, hq0, hi, nch, tid);
      if (tid == 0) sm.thr[hi] = M - p.gap;
    }
  }
  if (!kAllNoBar || !all) __syncthreads();  // all: uniform over the CTA
  if (!all) {
    for (int i = tid; i < nh * kRef; i += kN) {
      const int hi = i / kRef, rb = i % kRef;
      if (rb / kBlocksPerGroup < ng) {
        const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
        sm.ref.set(hi, rb, p.s.ub[row * p.s.nblk + (ch * kChunkGroups) * kBlocksPerGroup + rb] >= sm.thr[hi]);
      }
    }
  }
}

// Refine pass, "stage" layout (above). __launch_bounds__(64, 4): 4 CTAs an SM is what the shared memory
// allows, so ptxas may use up to 255 registers.
// kVParts (variant stage_pipe+coarse_imma: 4): the V codes copied in kVParts pieces of 128 / kVParts tokens,
// each on its own mbarrier, and the P V loop waits for a piece just before its first block, so the loop
// starts when the first 32 tokens' codes have landed instead of all 128 (copy and compute overlap).
// kBf: how the BF16 item loads its rows (refine_warps_item): 1 (round A: V 8 tokens a batch), 2 (variant
// stage_bf+coarse_imma: a lane's whole K row at once, V 16 tokens a batch, the rows asked of L2 first).
template <int D, int kVParts = 1, int kBf = 1>
__global__ void __launch_bounds__(kWarpThreads, 4) refine_stage_kernel(DecodeParams p, int items) {
  static_assert(kBlocksPerGroup % kVParts == 0, "whole blocks a V piece");
  __shared__ uint64_t bars[1 + kVParts];  // 0: the K part (V min / scale, K fields), 1 ..: the V codes' pieces
  uint8_t* const dyn = dyn_smem();
  StageSmem& sm = *reinterpret_cast<StageSmem*>(dyn);
  constexpr int W = D / 32;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x, g = tid / 32, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
  const long long sbytes = stage_group_bytes(D);
  uint8_t* const stage0 = dyn + kStageFront;
  stage_init(bars, 1 + kVParts);
  pdl_launch_dependents();  // every CTA of this grid is resident: the combine's CTAs may queue behind them
  uint32_t ph = 0u;  // bit i: the parity of bars[i]'s current phase
  const int vpiece = static_cast<int>(l.bytes - l.v) / kVParts;  // bytes of a V piece (a multiple of 16)
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const Item it = item_of(item, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq);
    if (it.slot > nch) continue;  // uniform over the CTA
    if (it.slot == 0) {           // the BF16 tokens: the warps layout (it begins with a CTA barrier)
      refine_warps_item<D, false, kBf>(p, *reinterpret_cast<WarpSmem*>(dyn), item, items);
      continue;
    }
    const int ch = it.slot - 1;
    const int ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
    const uint8_t* grec0 = record_of(c, it.b, it.kh, ch * kChunkGroups);  // the chunk's records are contiguous
    __syncthreads();  // the previous item is done with the buffer
    stage_issue(&bars[0], stage0, sbytes, grec0 + l.vmin, c.record_bytes, static_cast<int>(l.v - l.vmin), ng);
#pragma unroll
    for (int i = 0; i < kVParts; ++i)
      stage_issue(&bars[1 + i], stage0 + (l.v - l.vmin) + i * vpiece, sbytes, grec0 + l.v + i * vpiece, c.record_bytes,
                  vpiece, ng);
    prefetch_item(p, item + gridDim.x, items, 1);
    const uint8_t* grec = g < ng ? grec0 + g * c.record_bytes : nullptr;  // k_min / k_scale (the setup) from global
    const uint8_t* srec = g < ng ? stage0 + g * sbytes - l.vmin : nullptr;  // the staged record, at its own offsets
    // over the group's K fields once its scores are in registers: p, p * v_scale (4 heads a token), P V sums
    F4* const pw = reinterpret_cast<F4*>(stage0 + g * sbytes + (l.kc - l.vmin));
    F4* const aw = pw + kGroup;
    auto gv_of = [&](int gg) { return reinterpret_cast<float*>(stage0 + gg * sbytes + (l.kc - l.vmin)) + 2 * 4 * kGroup; };
    for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
      const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
      const int hq0 = it.kh * p.Gq + h0;
      if (h0 > 0) {  // the previous pass wrote over the K fields: copy them again
        __syncthreads();
        stage_issue(&bars[0], stage0 + (l.kc - l.vmin), sbytes, grec0 + l.kc, c.record_bytes, static_cast<int>(l.v - l.kc), ng);
      }
      pass_q_and_flags<D, kWarpThreads>(p, sm, it, hq0, nh, ng, ch, nch, p.exact != 0, tid);
      if (grec)
        for (int hi = 0; hi < nh; ++hi) setup_group_warp<D>(l, sm, grec, hi, g);
      __syncthreads();
      stage_wait(bars, 0, ph);
      // ---- scores (registers), the chunk max a head
      float sc[kBlocksPerGroup][2];
      float wmax = neg_inf();
      if (srec) {
        imma_scores_regs<D>(l, sm, srec, g, nh, p.scale, sc);
#pragma unroll
        for (int m = 0; m < kBlocksPerGroup; ++m) wmax = fmax_step(fmax_step(wmax, sc[m][0]), sc[m][1]);
      }
#pragma unroll
      for (int off = 4; off <= 16; off <<= 1) wmax = fmax_step(wmax, __shfl_xor_sync(0xffffffffu, wmax, off));
      if (gid == 0) sm.red[g][tig] = wmax;
      __syncthreads();  // also: both warps are done reading their K fields
      const float mh = fmax_step(fmax_step(neg_inf(), sm.red[0][tig]), sm.red[1][tig]);
      if (tid < kWarpHeads) sm.m[tid] = mh;
      // ---- p and the P V weight of (token, head tig), over the K fields
      if (srec) {
        const RecVals vsc(srec, l.vscale);
#pragma unroll
        for (int m = 0; m < kBlocksPerGroup; ++m) {
          const bool valid = tig < nh && sm.ref.on(tig, g * kBlocksPerGroup + m);
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int t = kBlock * m + gid + 8 * r;
            const float pt = valid ? exp_att(sc[m][r] - mh) : 0.0f;
            reinterpret_cast<float*>(&pw[t])[tig] = pt;
            reinterpret_cast<float*>(&aw[t])[tig] = pt * vsc[t];
          }
        }
      }
      __syncwarp();  // a warp reads only its own group's p / weights
      constexpr int kBlkPart = kBlocksPerGroup / kVParts;  // blocks a V piece
      if (h0 == 0 && !srec)  // no group for this warp: keep the barriers' phases
#pragma unroll
        for (int i = 0; i < kVParts; ++i) stage_wait(bars, 1 + i, ph);
      // ---- P V (lane (w, k): channels 32w + 8i + k, 4 heads) and the l / V-min chains (lane h: head h)
      if (srec) {
        const int w = lane / 8, k = lane % 8;
        const uint32_t* vp = reinterpret_cast<const uint32_t*>(srec + l.v);
        const RecVals vmn(srec, l.vmin);
        const int hc = lane & (kWarpHeads - 1);  // the chain's head on lanes 0 .. nh - 1
        float acc[kWarpHeads][4];
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[hi][i] = 0.0f;
        float lg = 0.0f, bs = 0.0f;
#pragma unroll 1
        for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
          bool rf[kWarpHeads];
          bool any = false;
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) {
            rf[hi] = hi < nh && sm.ref.on(hi, g * kBlocksPerGroup + blk);
            any = any || rf[hi];
          }
          if (h0 == 0 && blk % kBlkPart == 0) stage_wait(bars, 1 + blk / kBlkPart, ph);
          if (!any) continue;  // uniform over the warp
          const bool chain = lane < nh && sm.ref.on(hc, g * kBlocksPerGroup + blk);
#pragma unroll
          for (int u0 = blk * kBlock; u0 < (blk + 1) * kBlock; u0 += 4) {
            uint32_t codes4[4] = {0u, 0u, 0u, 0u};  // [q]: token u0 + q, byte i: channel 32 w + 8 i + k
            if (w < W) fo_v_codes4<D>(vp, u0, w, k, codes4);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const uint32_t code = codes4[q];
              float cf[4];
#pragma unroll
              for (int i = 0; i < 4; ++i) cf[i] = code_f(code, i);
              const F4 a = aw[u0 + q];
#pragma unroll
              for (int hi = 0; hi < kWarpHeads; ++hi)
                if (rf[hi])
#pragma unroll
                  for (int i = 0; i < 4; ++i) acc[hi][i] = fmaf(f4_at(a, hi), cf[i], acc[hi][i]);
              if (chain) {
                const float pu = reinterpret_cast<const float*>(&pw[u0 + q])[hc];
                lg = lg + pu;
                bs = bs + pu * vmn[u0 + q];
              }
            }
          }
        }
        float* gv = gv_of(g);
        if (w < W)
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
            if (hi < nh)
#pragma unroll
              for (int i = 0; i < 4; ++i) gv[hi * D + 32 * w + 8 * i + k] = acc[hi][i];
        if (lane < nh) {
          sm.lg[g][lane] = lg;
          sm.bs[g][lane] = bs;
        }
      }
      __syncthreads();
      // ---- the partial: groups in order (as refine_kernel)
      for (int i = tid; i < nh * D; i += kWarpThreads) {
        const int hi = i / D, d = i % D;
        const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
        float a = 0.0f;
        const bool any_tok = sm.m[hi] != neg_inf();
        if (any_tok)
          for (int gg = 0; gg < ng; ++gg) a = a + (gv_of(gg)[hi * D + d] + sm.bs[gg][hi]);
        p.s.pacc[(row * p.s.P + it.slot) * D + d] = a;
        if (d == 0) {
          float lt = 0.0f;
          if (any_tok)
            for (int gg = 0; gg < ng; ++gg) lt = lt + sm.lg[gg][hi];
          p.s.pm[row * p.s.P + it.slot] = sm.m[hi];
          p.s.pl[row * p.s.P + it.slot] = lt;
        }
      }
    }
  }
}

}  // namespace mlops::fbla
