// The "mma_pv4" decode variants (mma_pv4+coarse_imma, mma_pv4w+coarse_imma): refine_mma_kernel's arithmetic
// (pv digits, fbla_decode_mma.cuh; the same bits) in a CTA that fits 4 an SM, so that B1 L16K's 520 work items
// (8 kv heads x 64 chunks + 8 BF16 items) run in one round on an H200's 132 SMs (528 resident CTAs) instead of
// two (refine_mma_kernel: 62 KB of shared memory a CTA at D 128, 3 an SM, 396 CTAs).
// - shared memory: the front keeps only what lives across the item's barriers before the K fields are dead
//   (q digits, q rows, the group constants, maxima, l, refine flags: 4.5 KB); the P V digits of a slice
//   (256 bytes) go over its group's staged K fields after the slice sums (the fields are dead from the chunk-max
//   barrier on: the sums take 64 D of their 96 D bytes, the digits of the group's 4 slices 1 KB of the rest),
//   and the BF16 item's p (512 bytes a slice) over its group's V codes (the BF16 item stages nothing). So
//   4.5 KB + 2 x 25 KB = 54.5 KB a CTA at D 128: 4 CTAs an SM (228 KB, 1 KB reserved a CTA).
// - kNW warps a CTA (8: warp w <-> slice w, at most 64 registers for 4 CTAs of 256 threads an SM; 4: warp w <->
//   slices w and w + 4, the same token range of both groups, at most 128 registers for 4 CTAs of 128 threads).
//   A warp's slices are computed one after another between the same barriers; every value a slice writes is
//   the one refine_mma_kernel's warp of that slice writes, so the partial (the slices in slice order) is too.
#pragma once
#include "fbla_decode_mma.cuh"

namespace mlops::fbla {

constexpr int kMma4Ctas = 4;  // CTAs an SM asked of ptxas (54.5 KB of shared memory a CTA at D 128: 4 fit)

struct alignas(16) Mma4Smem {  // MmaSmem without pt / dig (over the staged codes: mma4_pt, mma4_dig)
  int8_t what[kWarpHeads][kChunkGroups][2][128];  // q digits in perm_channel order (setup_group_warp)
  float qf[kWarpHeads][128];
  float sw[kWarpHeads][kChunkGroups], bias[kWarpHeads][kChunkGroups];
  int32_t wsum[kWarpHeads][kChunkGroups], wabs[kWarpHeads][kChunkGroups];
  float red[kWarpHeads][kSlicesPerChunk];  // a slice's max a head: [head][slice] (the chunk max: 2 16-byte loads)
  float m[kWarpHeads], thr[kWarpHeads];
  float ls[kSlicesPerChunk][kWarpHeads];  // a slice's l
  RefFlags ref;
};
constexpr int kMma4Front = (static_cast<int>(sizeof(Mma4Smem)) + 127) / 128 * 128;
static_assert(offsetof(Mma4Smem, m) % 16 == 0, "the partial reads sm.m as one 16-byte load");

MLOPS_HD constexpr int mma4_smem_bytes(int D) { return kMma4Front + kChunkGroups * stage_group_bytes(D); }
static_assert(kMma4Front >= 8 * 128, "a staged record pointer (8 D before its copy) stays in the buffer");
static_assert(mma4_smem_bytes(128) + 1024 <= 228 * 1024 / kMma4Ctas, "4 CTAs an SM at D 128 (sm_90: 228 KB an SM)");

// Slice sl's P V digits (closed items): 256 bytes after its group's 4 slice sums, over the dead K fields.
typedef int8_t Mma4Dig[2 * kWarpHeads][kSlice];
__device__ __forceinline__ Mma4Dig& mma4_dig(uint8_t* stage0, long long sbytes, const Layout& l, int sl) {
  return *reinterpret_cast<Mma4Dig*>(stage0 + (sl / kSlicesPerGroup) * sbytes + (l.kc - l.vmin) + 64LL * l.D +
                                     (sl % kSlicesPerGroup) * static_cast<long long>(sizeof(Mma4Dig)));
}
static_assert(kSlicesPerGroup * sizeof(Mma4Dig) <= 32 * 64, "the digits fit the K fields' last 32 D bytes at D 64");

// Slice sl's p of a token, 4 heads (BF16 item): 512 bytes a slice over its group's V codes (not staged).
__device__ __forceinline__ F4* mma4_pt(uint8_t* stage0, long long sbytes, const Layout& l, int sl) {
  return reinterpret_cast<F4*>(stage0 + (sl / kSlicesPerGroup) * sbytes + (l.v - l.vmin) +
                               (sl % kSlicesPerGroup) * static_cast<long long>(kSlice * sizeof(F4)));
}

// The BF16 item's staged K rows (stage_bf16_k): a row's 2 D bytes, then 16 more, so that the 8 lanes (8 tokens) of
// one 16-byte shared load of the scores fall in 8 different groups of 4 banks (rows 2 D apart: all in the same 4).
// Over the staged groups' space; dead at the chunk-max barrier, before the item's p and sums are written there.
template <int D>
constexpr int kRowKOf = 2 * D + 16;

// The BF16 item's K rows into the staged groups' space (every thread, uniformly, after the item's barrier; completes on
// bars[0]): sink rows, then the filling group's, kRowKOf<D> bytes apart (a bulk copy a row on sm_90).
template <int D>
__device__ __forceinline__ void stage_bf16_k(uint64_t* bars, uint8_t* stage0, const mlops_fbla_cache& c, size_t kvbase,
                                             int nsink, int ntail) {
  stage_rows(&bars[0], stage0, kRowKOf<D>, reinterpret_cast<const uint8_t*>(c.sink_k + kvbase), nsink,
             reinterpret_cast<const uint8_t*>(c.tail_k + kvbase), ntail, 2 * D, 2 * D);
}

// A global float read from L2 (ld.global.cg): the folded combine reads partials other CTAs of this grid wrote.
__device__ __forceinline__ float ld_l2(const float* a) {
#ifdef MLOPS_FBLA_ON_HOST
  return *a;
#else
  return __ldcg(a);
#endif
}

// setup_group_warp<D, Smem, false> (fbla_decode_warps.cuh) with the q row read from global (qr: the head's bf16 q row)
// instead of sm.qf: the lane's q, k_scale and k_min values loaded together first, then the same operations in the same
// order on the same values (bf16_to_f32 of the q value is what sm.qf holds), so the same bits (session 16).
template <int D, class Smem, bool kVec = false>
__device__ __forceinline__ void setup_group_warp_g(const Layout& l, Smem& sm, const uint8_t* rec, const uint16_t* qr,
                                                   int hi, int g) {
  constexpr int per = D / 32;
  const int lane = threadIdx.x & 31;
  const RecVals kmin(rec, l.kmin);
  const RecVals kscale(rec, l.kscale);
  uint16_t qv[per];
  float ks[per], km[per];
  if constexpr (kVec && per == 4) {  // refine_mma4_kernel's kEarly (session 16 a2's 3bf71d2, session 17): 3 vector
    // loads, k_min / k_scale 8 bytes (4 bf16; a record is 16-byte aligned: the API checks it, the chunk's bulk copy
    // relies on it; k_min at 0, k_scale at 2 D), q 8 bytes where its address allows (a warp-uniform test), else 4 u16
    // loads
    const U2 s4 = *reinterpret_cast<const U2*>(kscale.p + lane * 4);
    const U2 m4 = *reinterpret_cast<const U2*>(kmin.p + lane * 4);
    const uint16_t* qa = qr + lane * 4;
    if ((reinterpret_cast<uintptr_t>(qr) & 7u) == 0u) {
      const U2 q2 = *reinterpret_cast<const U2*>(qa);
      qv[0] = static_cast<uint16_t>(q2.x & 0xffffu);
      qv[1] = static_cast<uint16_t>(q2.x >> 16);
      qv[2] = static_cast<uint16_t>(q2.y & 0xffffu);
      qv[3] = static_cast<uint16_t>(q2.y >> 16);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) qv[i] = qa[i];
    }
    const uint32_t sw[2] = {s4.x, s4.y}, mw[2] = {m4.x, m4.y};  // bf16 pairs: value 2 i low, 2 i + 1 high
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      ks[i] = bf16_to_f32(static_cast<uint16_t>(sw[i / 2] >> (16 * (i % 2))));
      km[i] = bf16_to_f32(static_cast<uint16_t>(mw[i / 2] >> (16 * (i % 2))));
    }
  } else {
#pragma unroll
    for (int i = 0; i < per; ++i) {
      qv[i] = qr[lane * per + i];
      ks[i] = kscale[lane * per + i];
      km[i] = kmin[lane * per + i];
    }
  }
  float qf[per];
  const float s_w = qhat_warp_digits<per>(
      [&](int i) { return qf[i] = bf16_to_f32(qv[i]); }, [&](int i) { return ks[i]; },
      [&](int i, int dh, int dl) {
        const int pc = perm_channel_lane<per>(lane, i);
        sm.what[hi][g][0][pc] = static_cast<int8_t>(dh);
        sm.what[hi][g][1][pc] = static_cast<int8_t>(dl);
      });
  float bsum = 0.0f;
#pragma unroll
  for (int i = 0; i < per; ++i) bsum = fmaf(qf[i], km[i], bsum);
  bsum = warp_butterfly32(bsum);
  if (lane == 0) {
    sm.sw[hi][g] = s_w;
    sm.bias[hi][g] = bsum;
  }
}

// The folded combine's shared memory (floats over the staged groups, dead after the item's partial): the row maxima
// of kWarpHeads heads, then e and l of every (head, slot).
MLOPS_HD constexpr int fold_smem_floats(int P) { return kWarpHeads + 2 * kWarpHeads * P; }

// combine_warps_kernel / combine_kernel for the q heads of (b, kv head kh), run by the CTA that finished the pair's last
// item (the same bits: M the max of the partials' m, then in slot order lt = fmaf(l, e, lt), acc = fmaf(acc_i, e, acc)
// with e = exp_att(m - M), empty partials (m = -inf) left out; out = acc / lt, 0 when nothing was refined). Thread u:
// head u / (D / 2), channels u % (D / 2) and + D / 2, the partials loaded kStep slots at once.
template <int D, int kN>
__device__ __forceinline__ void fold_combine(const DecodeParams& p, int b, int kh, float* fs, int tid) {
  constexpr int kStep = 8, H2 = D / 2;
  const int P = 1 + chunks_of(closed_groups(len_of(p, b)));
  const int w = tid / 32, lane = tid & 31;
  float* const fM = fs;
  float* const se = fs + kWarpHeads;
  float* const sl = se + kWarpHeads * P;
  for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
    const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
    const size_t row0 = static_cast<size_t>(b) * p.Hq + static_cast<size_t>(kh) * p.Gq + h0;
    if (h0 > 0) __syncthreads();  // the previous heads' chains are done with fs
    if (w < nh) {  // warp w: head h0 + w's M (maxima: exact in any order)
      const float* pm = p.s.pm + (row0 + w) * p.s.P;
      float Mx = neg_inf();
      for (int i = lane; i < P; i += 32) Mx = fmax_step(Mx, ld_l2(pm + i));
#pragma unroll
      for (int off = 16; off >= 1; off >>= 1) Mx = fmax_step(Mx, __shfl_xor_sync(0xffffffffu, Mx, off));
      if (lane == 0) fM[w] = Mx;
    }
    __syncthreads();
    for (int k = tid; k < nh * P; k += kN) {  // e and l of (head k / P, slot k % P)
      const int hi = k / P, i = k - hi * P;
      const float m = ld_l2(p.s.pm + (row0 + hi) * p.s.P + i);
      se[k] = m == neg_inf() ? -1.0f : exp_att(m - fM[hi]);  // -1: an empty partial (e in [0, 1])
      sl[k] = ld_l2(p.s.pl + (row0 + hi) * p.s.P + i);
    }
    __syncthreads();
    for (int u = tid; u < nh * H2; u += kN) {
      const int hi = u / H2, d = u - hi * H2;
      const size_t row = row0 + hi;
      const float Mx = fM[hi];
      const float* pa = p.s.pacc + row * p.s.P * D + d;
      float lt = 0.0f, a0 = 0.0f, a1 = 0.0f;
      if (Mx != neg_inf()) {
        for (int i0 = 0; i0 < P; i0 += kStep) {
          float x0[kStep], x1[kStep];
#pragma unroll
          for (int k = 0; k < kStep; ++k) {
            const bool in = i0 + k < P;
            x0[k] = in ? ld_l2(pa + static_cast<size_t>(i0 + k) * D) : 0.0f;
            x1[k] = in ? ld_l2(pa + static_cast<size_t>(i0 + k) * D + H2) : 0.0f;
          }
#pragma unroll
          for (int k = 0; k < kStep; ++k) {
            if (i0 + k >= P) break;
            const float e = se[hi * P + i0 + k];
            if (e < 0.0f) continue;
            lt = fmaf(sl[hi * P + i0 + k], e, lt);
            a0 = fmaf(x0[k], e, a0);
            a1 = fmaf(x1[k], e, a1);
          }
        }
      }
      store_combined(p, row * D + d, Mx != neg_inf(), a0, lt);
      store_combined(p, row * D + d + H2, Mx != neg_inf(), a1, lt);
    }
  }
}

// This thread's index, opaque to the compiler (mma_pv4r: read again at each phase of an item rather than held live;
// ptxas neither hoists it nor what it derives from it out of the item loop, so nothing of it is spilled).
__device__ __forceinline__ int thread_index() {
#ifdef MLOPS_FBLA_ON_HOST
  return static_cast<int>(threadIdx.x);
#else
  int x;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(x));
  return x;
#endif
}

// A thread's indices: tid, warp, lane, the MMA fragments' group (gid) and thread in group (tig).
struct ThreadIx {
  int tid, w, lane, gid, tig;
};
__device__ __forceinline__ ThreadIx thread_ix(int tid) {
  const int lane = tid & 31;
  return ThreadIx{tid, tid / 32, lane, lane >> 2, lane & 3};
}

// This CTA's index, opaque to the compiler (fold_tail decodes its items again after the item loop rather than keeping
// the loop's first decode live through it).
__device__ __forceinline__ int cta_index() {
#ifdef MLOPS_FBLA_ON_HOST
  return static_cast<int>(blockIdx.x);
#else
  int x;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(x));
  return x;
#endif
}

// After the CTA's items (every partial of them written): an item a count of its (b, kv head) (s.cnt, zeroed earlier in
// the decode); the CTA whose count is the pair's last (1 + nch items: slots 0 .. nch) runs the pair's combine. The
// split-K "last CTA reduces" form: every thread's partial stores, a barrier, thread 0's fence and atomic; the last
// one's fence, a barrier, reads from L2. After the item loop, not in it: inside, ptxas sm_90 spilled 268 / 388 bytes
// of refine_mma4_kernel<128, 8, true> (the tail's values live through the P V loop) against 128 / 148 without it.
template <int D, int kN>
__device__ __forceinline__ void fold_tail(const DecodeParams& p, int items, uint8_t* stage0, int tid) {
  for (int item = cta_index(); item < items; item += gridDim.x) {
    const Item it = item_of(item, p.c.batch, p.c.kv_heads);
    const int nch = chunks_of(closed_groups(len_of(p, it.b)));
    if (it.slot > nch) continue;  // uniform over the CTA; nothing written, not counted
    __syncthreads();  // the partials' stores (and a previous combine's reads of the shared memory) are done
    int last = 0;
    if (tid == 0) {
      pdl_wait();  // fold_zero_kernel's zeros (a no-op without a programmatic launch: the coarse pass zeroed them)
      __threadfence();
      last = atomicAdd(p.s.cnt + it.b * p.c.kv_heads + it.kh, 1) == nch;
      if (last) __threadfence();
    }
    if (__syncthreads_or(last)) fold_combine<D, kN>(p, it.b, it.kh, reinterpret_cast<float*>(stage0), tid);
  }
}

// The folded combine's counters (s.cnt, one a (b, kv head)) and the kEarly refine's item counter (s.work) zeroed: the
// decode's first kernel where no coarse pass runs (exact mode), the refine a programmatic dependent of it (its counting
// waits for this grid: griddepcontrol.wait).
__global__ void __launch_bounds__(128) fold_zero_kernel(DecodeParams p) {
  pdl_launch_dependents();
  for (int i = threadIdx.x; i < p.c.batch * p.c.kv_heads; i += blockDim.x) p.s.cnt[i] = 0;
  if (threadIdx.x == 0) p.s.work[0] = 0;
}

// kDyn (the kEarly refine): the CTA's next item, taken by thread 0 from the decode's item counter (s.work, zeroed by the
// decode's first kernel: pdl_wait orders the first take after fold_zero_kernel; a no-op after a coarse pass): the
// items past the first round (gridDim.x .. items - 1) go out one at a time in the order the CTAs ask. Every item is
// computed by one CTA and writes its own partial slot, so which CTA takes it changes no value (the combine reads the
// slots in slot order). Values >= items: none left.
__device__ __forceinline__ int next_item_dyn(const DecodeParams& p) {
  pdl_wait();
  return static_cast<int>(gridDim.x) + atomicAdd(p.s.work, 1);
}

// Refine pass, "mma_pv4" layout (above), pv digits only: kNW warps a CTA (8 or 4), 4 CTAs an SM.
// kFold (the planner's one-round launch): no combine kernel; after its items the CTA counts them (fold_tail), and the
// CTA that counts a (b, kv head)'s last item runs the combine of its q heads (fold_combine: the same bits). Correct
// for any grid (a count follows all of the CTA's partials); launched with a CTA an item.
// kReread (mma_pv4r, session 14): the thread index and what derives from it (warp, lane, gid, tig) read again
// (thread_index) at a head pass's start, at the P V phase (after the chunk-max barrier) and at the partial, instead of
// once at the kernel's start: the same arithmetic, so the same bits; ptxas sm_90 (nvcc 13.0, D 128) spills 8 / 8
// bytes instead of 128 / 148 (the index values and their derived addresses hoisted out of the item loop, and the 4
// scores a lane holds over the chunk-max barrier, no longer spilled).
template <int D, int kNW, bool kFold = false, bool kReread = false, bool kEarly = false>
__global__ void __launch_bounds__(32 * kNW, kMma4Ctas) refine_mma4_kernel(DecodeParams p, int items) {
  constexpr int kN = 32 * kNW, kJ = kSlicesPerChunk / kNW;  // threads; slices a warp
  constexpr int kQ = (kWarpHeads * D + kN - 1) / kN;  // q row values a thread (the BF16 item)
  constexpr bool kQg = D == 128;  // session 16's front (below): D 128 only
  constexpr int kRowK = kRowKOf<D>;
  // kSplitV (session 22, the planner's one-round instance: mma_pv4r at D 128 without kEarly): a closed item's copy in
  // two parts on two mbarriers. The item's top issues V min / scale and the K fields (bars[0]); the V codes (bars[1]) are
  // issued once the K part has landed (after the front), and waited for just before P V. In one round every CTA issues
  // its copy at once (520 x 51 KB at B1 L16K): with one copy the front's global reads (k_scale / k_min) queued behind
  // all of them and ended with the last byte (GPU run 115's timeline: front 6.6 us of an 11.5 us item, then no wait);
  // with the V codes behind every CTA's K part, the scores can run while the V codes arrive. The same values.
  constexpr bool kSplitV = kReread && !kEarly && D == 128;
  static_assert(!kSplitV || kJ == 1, "kSplitV: one slice a warp (the V wait in the slice loop)");
  // kDyn (session 22, the kEarly instance: more than one round of items): after its first item (blockIdx.x) a CTA
  // takes its next one from a counter (next_item_dyn) instead of blockIdx.x + k gridDim.x. GPU run 115's timeline at
  // B8 L128K: the 4 CTAs of an SM do not share its issue slots evenly (the lowest blockIdx 6.8 us an item, the highest
  // 12.7), so with a fixed share of the items the slowest CTAs set the end (~62 items each) while the SM's others idle.
  constexpr bool kDyn = kEarly;
  static_assert(!kDyn || !kFold, "fold_tail walks the CTA's items as blockIdx.x + k gridDim.x");
  // kDyn: thread 0's take and that item decoded (n, b, kh, slot: take_next), read by every thread after the barriers that
  // follow it (read_next). Thread 0 decodes the item anyway for its prefetch; every warp decoding it again at the item's
  // top (item_of: three integer divisions) was ~70 of a warp's ~1,570 instructions an item (session 24).
  // (Session 27 tried thread 0 computing the item's length, chunk count and first record with its next item, ~280 of
  // the ~1,200 warp instructions an item of the item's top lines: B8 L128K 3 us faster with the partial's change, but
  // B8 L4K 2.5 us slower: the length's load after the take's atomic, in thread 0, lengthened every item's front.
  // GPU run 135.)
  __shared__ int dyn_next[4];
  static_assert(kJ * kNW == kSlicesPerChunk, "kNW divides the 8 slices");
  __shared__ uint64_t bars[kSplitV ? 2 : 1];
  uint8_t* const dyn = dyn_smem();
  Mma4Smem& sm = *reinterpret_cast<Mma4Smem*>(dyn);
  uint8_t* const stage0 = dyn + kMma4Front;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const ThreadIx ix0 = thread_ix(threadIdx.x);
  auto tix = [&] {  // the thread's indices where each phase starts (kReread: read again, opaque; else ix0's)
    if constexpr (kReread) return thread_ix(thread_index());
    else return ix0;
  };
  const long long sbytes = stage_group_bytes(D);
  const size_t tile = static_cast<size_t>(kGroup) * D;
  stage_init(bars, kSplitV ? 2 : 1);
  // every CTA of this grid is resident: the combine's CTAs may queue behind them (kDyn: in take_next, below)
  if constexpr (!kDyn) pdl_launch_dependents();
  uint32_t ph = 0u;
  // the items blockIdx.x + k gridDim.x, decoded by item_add (two divisions a CTA, not a few an item); the step's
  // divisions only in a CTA with a second item (one item a CTA, as at B1 L16K, never reads it: there they were 4.6 % of
  // the refine's instructions, GPU run 108)
  const Item step = !kDyn && static_cast<int>(blockIdx.x + gridDim.x) < items ? item_of(gridDim.x, c.batch, c.kv_heads)
                                                                              : Item{0, 0, 0};
  Item nxt = items > 0 ? item_of(blockIdx.x, c.batch, c.kv_heads) : Item{0, 0, 0};  // the next item, decoded
  int next = 0;  // kDyn: the item after this one (dyn_next's value)
  auto take_next = [&] {  // kDyn, thread 0: the next item from the counter, decoded, into dyn_next
    const int n = next_item_dyn(p);
    // kDyn's trigger (session 30): after the CTA's first take (the first call; later ones are no-ops), not at the
    // kernel's start. GPU run 154 (events, means of 4 calls): with the PDL combine_warps_kernel after it (rows below
    // kStagedMinP slots) B8 L4K 3+3 exact 32.5 -> 30.1 us, both skip modes -3.3; B8 L16K 3+3 exact -1.3, skip -2.7; 4+2
    // exact and B1 within +-0.3; B8 / B1 L128K (an ordinary launch after it) within +-0.5. The same bits.
    pdl_launch_dependents();
    const Item ni = item_of(n, c.batch, c.kv_heads);
    dyn_next[0] = n, dyn_next[1] = ni.b, dyn_next[2] = ni.kh, dyn_next[3] = ni.slot;
  };
  auto read_next = [&] {  // kDyn, every thread, after a barrier that follows take_next
    next = dyn_next[0];
    nxt = Item{dyn_next[1], dyn_next[2], dyn_next[3]};
  };
  for (int item = blockIdx.x; item < items; item = kDyn ? next : item + static_cast<int>(gridDim.x)) {
    const Item it = nxt;
    if constexpr (!kDyn) nxt = item_add(it, step, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq);
    if (it.slot > nch) {  // uniform over the CTA
      if constexpr (kDyn) {
        __syncthreads();  // every thread has read dyn_next's last value
        if (threadIdx.x == 0) take_next();
        __syncthreads();
        read_next();
      }
      continue;
    }
    const bool bf16 = it.slot == 0;
    const int ch = it.slot - 1;
    const int ng = bf16 ? 2 : (nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups);
    const uint8_t* grec0 = bf16 ? nullptr : record_of(c, it.b, it.kh, ch * kChunkGroups);  // contiguous records
    const size_t kvbase = (static_cast<size_t>(it.b) * c.kv_heads + it.kh) * tile;
    // kStK: the BF16 item's K rows staged where they fit (sink, then the filling group; rows kRowK bytes apart); its
    // scores then read K from shared memory, not in ~4 dependent rounds of global loads (session 23)
    const int nsink = bf16 ? sink_tokens(L) : 0, ntail = bf16 ? tail_tokens(L) : 0;
    const bool kst = bf16 && (nsink + ntail) * kRowK <= kChunkGroups * sbytes;
    __syncthreads();  // the previous item is done with the shared memory
    if (bf16) prefetch_bf16_rows(p, kvbase, L, !kst);
    if (kst) stage_bf16_k<D>(bars, stage0, c, kvbase, nsink, ntail);
    if (!bf16)
      stage_issue(&bars[0], stage0, sbytes, grec0 + l.vmin, c.record_bytes,
                  static_cast<int>((kSplitV ? l.v : l.bytes) - l.vmin), ng);
    if constexpr (kDyn) {
      // The next item now (thread 0). Its records are no longer prefetched to L2 here (session 22 did, the whole range
      // by one bulk prefetch): with the K codes fragment-ordered the refine runs the L2 at ~94 % of its throughput
      // (GPU run 130), where each prefetched byte crossed it twice; without the prefetch (run 131) B8 L128K 3+3 exact
      // 537.4 -> 534.8 us, B1 L128K 98.5 -> 94.0, B8 L16K 84.6 -> 82.6, no case slower.
      if (threadIdx.x == 0) take_next();
    } else {
      prefetch_item_at(p, nxt, item + static_cast<int>(gridDim.x) < items, 1);
    }
    bool waited = bf16 && !kst;
    bool v_due = kSplitV && !bf16;  // kSplitV: the V codes' copy still to issue (then to wait for)
    for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
      const ThreadIx tx = tix();
      const int tid = tx.tid, w = tx.w, lane = tx.lane, gid = tx.gid, tig = tx.tig;
      const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
      const int hq0 = it.kh * p.Gq + h0;
      if (h0 > 0) {  // the previous pass is done with sm and wrote its sums over the K fields: copy them again
        __syncthreads();
        if (!bf16) {
          stage_issue(&bars[0], stage0 + (l.kc - l.vmin), sbytes, grec0 + l.kc, c.record_bytes,
                      static_cast<int>(l.v - l.kc), ng);
          waited = false;
        } else if (kst) {  // the BF16 item's K rows, under the last pass's p and sums
          stage_bf16_k<D>(bars, stage0, c, kvbase, nsink, ntail);
          waited = false;
        }
      }
      if constexpr (kQg) {
        // The q rows (sm.qf) only where they are read: the BF16 item's scores (session 16: a closed item's q digits read
        // q from global with k_scale / k_min, below, so its front no longer waits for the rows' loads and the q barrier
        // before issuing those). The rows: thread i, positions i + kN k, the loads issued together.
        if (bf16) {
          uint16_t q0[kQ];
#pragma unroll
          for (int k = 0; k < kQ; ++k) {
            const int i = tid + kN * k, hi = i / D, d = i % D;
            q0[k] = i < nh * D ? p.q[it.b * p.qbs + static_cast<long long>(hq0 + hi) * p.qhs + d] : uint16_t{0};
          }
#pragma unroll
          for (int k = 0; k < kQ; ++k) {
            const int i = tid + kN * k;
            if (i < nh * D) sm.qf[i / D][i % D] = bf16_to_f32(q0[k]);
          }
        }
        // kEarly (session 16 a2's 3bf71d2 as its own instance, session 17: the planner's pick where the refine's CTAs
        // take more than one round of items, GPU run 95: B8 L128K -2.5 %, slower at B1 L16K): a closed item's q digits
        // before the refine flags (they read only global memory and write sm.what / sw / bias, which pass_q_and_flags
        // does not touch; the item's / pass's barrier above ends their last readers, the flags' barrier or the one
        // below publishes them), their 12 values as 3 vector loads, and the flags' barrier left out where `all`.
        if constexpr (!kEarly)
          pass_q_and_flags<D, kN, Mma4Smem, false>(p, sm, it, hq0, nh, ng, ch, nch, p.exact || bf16, tid);
#pragma unroll
        for (int j = 0; j < kJ; ++j) {  // slice w + kNW j: the q digits of (head sl % 4, group sl / 4)
          const int sl = w + kNW * j, hs = sl % kWarpHeads, gs = sl / kWarpHeads;
          if (!bf16 && hs < nh && gs < ng)
            setup_group_warp_g<D, Mma4Smem, kEarly>(l, sm, grec0 + gs * c.record_bytes,
                                                    p.q + it.b * p.qbs + static_cast<long long>(hq0 + hs) * p.qhs, hs, gs);
        }
        if constexpr (kEarly)
          pass_q_and_flags<D, kN, Mma4Smem, false, true>(p, sm, it, hq0, nh, ng, ch, nch, p.exact || bf16, tid);
      } else {  // D 64: the form before session 16 (its ptxas spills rose with the new one: 8 / 8 -> 80 / 56 bytes)
        pass_q_and_flags<D, kN>(p, sm, it, hq0, nh, ng, ch, nch, p.exact || bf16, tid);
#pragma unroll
        for (int j = 0; j < kJ; ++j) {  // slice w + kNW j: the q digits of (head sl % 4, group sl / 4)
          const int sl = w + kNW * j, hs = sl % kWarpHeads, gs = sl / kWarpHeads;
          if (!bf16 && hs < nh && gs < ng) setup_group_warp<D, Mma4Smem, false>(l, sm, grec0 + gs * c.record_bytes, hs, gs);
        }
      }
      __syncthreads();
      if (!waited) {  // every thread, once a copy
        stage_wait(bars, 0, ph);
        waited = true;
        if (kSplitV && v_due)  // the first pass: the K part is here, the V codes behind it (the front's barrier above
          // ended the last item's reads of their slots)
          stage_issue(&bars[1], stage0 + (l.v - l.vmin), sbytes, grec0 + l.v, c.record_bytes,
                      static_cast<int>(l.bytes - l.v), ng);
      }
      // ---- scores, the slice's max a head
      float sc[kJ][2][2];          // closed: token t0 + 16 m + gid + 8 r, head tig
      float s4[kJ][kWarpHeads];    // BF16: token t0 + lane, head hi
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        const int sl = w + kNW * j, g = sl / kSlicesPerGroup, t0 = kSlice * (sl % kSlicesPerGroup);
        if (bf16) {
          const int cnt = g == 0 ? sink_tokens(L) : tail_tokens(L);
          const int nt = cnt - t0 < 0 ? 0 : (cnt - t0 > kSlice ? kSlice : cnt - t0);
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) s4[j][hi] = neg_inf();
          if (lane < nt) {
            const uint16_t* kr =
                kst ? reinterpret_cast<const uint16_t*>(stage0 + (g == 0 ? 0 : nsink * kRowK) + (t0 + lane) * kRowK)
                    : (g == 0 ? c.sink_k : c.tail_k) + kvbase + static_cast<size_t>(t0 + lane) * D;
            float dot[kWarpHeads] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 2  // (4, with bf16_dot8_all: ptxas 13.0 sm_90 spilled 18 / 12 bytes of the planned one-round instance)
            for (int d0 = 0; d0 < D; d0 += 8)
              bf16_dot8_all(*reinterpret_cast<const U4*>(kr + d0), sm.qf, d0, dot);  // 8 channels, 16 bytes
#pragma unroll
            for (int hi = 0; hi < kWarpHeads; ++hi)
              if (hi < nh) s4[j][hi] = dot[hi] * p.scale;
          }
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) {
            float x = s4[j][hi];
#pragma unroll
            for (int off = 16; off >= 1; off >>= 1) x = fmax_score(x, __shfl_xor_sync(0xffffffffu, x, off));
            if (lane == 0) sm.red[hi][sl] = x;
          }
        } else {
          float wm = neg_inf();
#pragma unroll
          for (int m = 0; m < 2; ++m) sc[j][m][0] = sc[j][m][1] = neg_inf();
          if (g < ng) {
            const uint8_t* srec = stage0 + g * sbytes - l.vmin;  // at the record's offsets
            if (l.cb == 3)  // the mode's two forms (immediate field offsets: imma_scores_regs' kCB), uniform
              imma_scores_regs<D, Mma4Smem, 2, 3>(l, sm, srec, g, nh, p.scale, sc[j], t0 / kBlock);
            else
              imma_scores_regs<D, Mma4Smem, 2, 4>(l, sm, srec, g, nh, p.scale, sc[j], t0 / kBlock);
            wm = fmax_score(fmax_score(wm, fmax_score(sc[j][0][0], sc[j][0][1])), fmax_score(sc[j][1][0], sc[j][1][1]));
          }
#pragma unroll
          for (int off = 4; off <= 16; off <<= 1) wm = fmax_score(wm, __shfl_xor_sync(0xffffffffu, wm, off));
          if (gid == 0) sm.red[tig][sl] = wm;
        }
      }
      __syncthreads();
      // The chunk's max a head (maxima: exact in any order; each head's the same loop as before). A closed item's
      // thread needs only head tig's (its p; threads 0 .. 3, tig = tid, write sm.m): 8 loads and maxima, not 32
      // (session 17); the BF16 item's threads take every head's below (sm.red is not written again before the
      // next barrier).
      float mt = neg_inf();
      {
        const int tg = tix().tig;  // (kReread) read again
#pragma unroll
        for (int ww = 0; ww < kSlicesPerChunk; ++ww) mt = fmax_score(mt, sm.red[tg][ww]);
      }
      if (tid < kWarpHeads) sm.m[tid] = mt;  // tid < 4: tig = tid
#pragma unroll
      for (int j = 0; j < kJ; ++j) {
        const ThreadIx ty = tix();  // (kReread) read again
        const int w = ty.w, lane = ty.lane, gid = ty.gid, tig = ty.tig;
        const int sl = w + kNW * j, g = sl / kSlicesPerGroup, t0 = kSlice * (sl % kSlicesPerGroup);
        float* const aw = slice_sums(stage0, sbytes, l, sl);  // this slice's P V sums (over dead K fields)
        if (bf16) {
          // ---- p (lane a token), l (lane h: head h, token order), P V (lane 4 channels x 4 heads, token order)
          const int cnt = g == 0 ? sink_tokens(L) : tail_tokens(L);
          const int nt = cnt - t0 < 0 ? 0 : (cnt - t0 > kSlice ? kSlice : cnt - t0);
          F4* const pts = mma4_pt(stage0, sbytes, l, sl);
          float mh[kWarpHeads];
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) {
            float x = neg_inf();
#pragma unroll
            for (int ww = 0; ww < kSlicesPerChunk; ++ww) x = fmax_score(x, sm.red[hi][ww]);
            mh[hi] = x;
          }
          float pt[kWarpHeads];
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) pt[hi] = lane < nt && hi < nh ? exp_att(s4[j][hi] - mh[hi]) : 0.0f;
          pts[lane] = F4{pt[0], pt[1], pt[2], pt[3]};
          __syncwarp();
          if (lane < kWarpHeads) {  // head lane's l: the adds in token order, 8 tokens' p loaded before their adds
            float ls = 0.0f;
            for (int u0 = 0; u0 < nt; u0 += 8) {
              float x[8];
#pragma unroll
              for (int k = 0; k < 8; ++k) x[k] = u0 + k < nt ? f4_at(pts[u0 + k], lane) : 0.0f;
#pragma unroll
              for (int k = 0; k < 8; ++k)
                if (u0 + k < nt) ls = ls + x[k];
            }
            sm.ls[sl][lane] = ls;
          }
          float acc[kWarpHeads][4];
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[hi][i] = 0.0f;
          if (4 * lane < D) {
            const uint16_t* vr = (g == 0 ? c.sink_v : c.tail_v) + kvbase + static_cast<size_t>(t0) * D + 4 * lane;
            bf16_pv_rows<D, 8>(vr, nt, pts, kWarpHeads, acc);  // 8 tokens' V rows loaded together
#pragma unroll
            for (int i = 0; i < 4; ++i)  // channel 4 lane + i's 4 heads in one 16-byte store (position 4 d + h;
              // heads past nh store their zeros, which the partial does not read): 4-way bank conflicts, 16-way as 16 floats
              reinterpret_cast<F4*>(aw)[4 * lane + i] = F4{acc[0][i], acc[1][i], acc[2][i], acc[3][i]};
          }
        } else if (g < ng) {
          // ---- p, the weights p * v_scale and their digits (lane (gid, tig): 4 tokens of head tig)
          const uint8_t* srec = stage0 + g * sbytes - l.vmin;
          const RecVals vsc(srec, l.vscale);
          const RecVals vmn(srec, l.vmin);
          Mma4Dig& dig = mma4_dig(stage0, sbytes, l, sl);
          float wt[2][2];
          float wmax = 0.0f, ls = 0.0f, bs = 0.0f;  // l and the V-min term: the lane's 4 tokens, then a butterfly
#pragma unroll
          for (int m = 0; m < 2; ++m) {
            const bool valid = tig < nh && sm.ref.on(tig, g * kBlocksPerGroup + t0 / kBlock + m);
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const int i = kBlock * m + gid + 8 * r;
              const float pr = exp_att(valid ? sc[j][m][r] - mt : neg_inf());  // = valid ? exp_att(..) : 0
              ls = ls + pr;
              bs = bs + pr * vmn[t0 + i];
              wt[m][r] = pr * vsc[t0 + i];
              wmax = fmax_nonneg(wmax, wt[m][r]);  // = fmax_step here
            }
          }
#pragma unroll
          for (int off = 4; off <= 16; off <<= 1) {  // over the 8 gid lanes of head tig (every lane: the same bits)
            wmax = fmax_nonneg(wmax, __shfl_xor_sync(0xffffffffu, wmax, off));
            ls = ls + __shfl_xor_sync(0xffffffffu, ls, off);
            bs = bs + __shfl_xor_sync(0xffffffffu, bs, off);
          }
          if (gid == 0) sm.ls[sl][tig] = ls;
          const DigitScale ds = digit_scale(wmax);
          // token i = 16 m + gid + 8 r sits at k = i: one address a lane, the 8 stores at immediate offsets
          int8_t* const dg = &dig[2 * tig][gid];
#pragma unroll
          for (int m = 0; m < 2; ++m)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              int dh, dl;
              digits_of(wt[m][r], ds.S, dh, dl);
              dg[kBlock * m + 8 * r] = static_cast<int8_t>(dh);          // dig[2 tig][i]
              dg[kSlice + kBlock * m + 8 * r] = static_cast<int8_t>(dl);  // dig[2 tig + 1][i]
            }
          __syncwarp();
          if (kSplitV && v_due) stage_wait(bars, 1, ph);  // the V codes (p and the digits needed only V min / scale)
          const float bsh = bs;  // head tig's
          // (the chunk-max barrier above: every warp has its scores, so the K fields under aw / dig are dead)
          pv_mma<D>(reinterpret_cast<const uint32_t*>(srec + l.v), t0, dig, [&](int T, const int32_t (&c4)[4]) {
#pragma unroll
            for (int h = 0; h < 2; ++h)
              aw[pv_sum_index(T, h, gid, tig)] =
                  fmaf(ds.step, static_cast<float>(c4[2 * h] * 256 + c4[2 * h + 1]), bsh);
          });
        } else if (kSplitV && v_due) {
          stage_wait(bars, 1, ph);  // a slice past ng: every thread waits once a completion
        }
      }
      v_due = false;  // (kSplitV: kJ is 1, so every thread waited above)
      __syncthreads();
      // ---- the partial: the slices in order (fbla_host.cpp, pv digits)
      const int nsl = ng * kSlicesPerGroup;
      // the rows' first partial: an int (check_decode: B Hq P < 2^31), its floats at r0 D by one 32 x 32 -> 64-bit product
      const int r0 = (it.b * p.Hq + hq0) * p.s.P + it.slot;
      float* const pacc = p.s.pacc + static_cast<size_t>(static_cast<unsigned>(r0)) * D;
      auto store_ml = [&](int hi) {  // head hi's m and l (the slices' l in slice order; 0 without a token)
        float lt = 0.0f;
        if (sm.m[hi] != neg_inf()) {
#pragma unroll
          for (int sl = 0; sl < kSlicesPerChunk; ++sl)
            if (sl < nsl) lt = lt + sm.ls[sl][hi];
        }
        p.s.pm[r0 + hi * p.s.P] = sm.m[hi];
        p.s.pl[r0 + hi * p.s.P] = lt;
      };
      if constexpr (D == 128) {
        // D 128 (session 31): thread d < D takes channel d's 4 heads, positions 4 d .. 4 d + 3 of every slice's sums,
        // one 16-byte load a slice (the other kN - D threads go on to the next item): the same adds in slice order a
        // position, where each of the kN threads took 2 positions by 2 scalar loads a slice (16 loads and 16 adds a
        // thread; ~9 % of the refine's warp instructions went to the partial, GPU run 160). A head without a token in
        // the chunk (m = -inf) stores 0 (its sums are formed and dropped: the select, not a product, so a NaN there
        // changes nothing).
        const int d = tix().tid;  // (kReread) the index again
        if (d < D) {
          const F4 m4 = *reinterpret_cast<const F4*>(sm.m);
          const float mh[kWarpHeads] = {m4.x, m4.y, m4.z, m4.w};
          float a[kWarpHeads] = {0.0f, 0.0f, 0.0f, 0.0f};
          auto add = [&](int sl) {
            const F4 x = reinterpret_cast<const F4*>(slice_sums(stage0, sbytes, l, sl))[d];
            a[0] = a[0] + x.x, a[1] = a[1] + x.y, a[2] = a[2] + x.z, a[3] = a[3] + x.w;
          };
          if (nsl == kSlicesPerChunk) {  // a full chunk (all but a sequence's last): the adds without the slice tests
#pragma unroll
            for (int sl = 0; sl < kSlicesPerChunk; ++sl) add(sl);
          } else {
#pragma unroll
            for (int sl = 0; sl < kSlicesPerChunk; ++sl)
              if (sl < nsl) add(sl);
          }
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
            if (hi < nh) pacc[static_cast<long long>(hi) * (p.s.P * D) + d] = mh[hi] != neg_inf() ? a[hi] : 0.0f;
          if (d < nh) store_ml(d);  // threads 0 .. nh - 1
        }
      } else {
        // D 64: thread i, position i of the sums (head i & 3, channel i / 4: pv_sum_index). The pair's rows (b, hq0 +
        // hi) at slot it.slot: r0 and pacc are uniform, a position adds hi P D + d (session 27: the row's 64-bit index a
        // position was ~13 instructions, the loop's runtime bound and pv_channel's decode ~20 more; the partial was ~10 %
        // of B8 L128K's instructions, run 133). The loop over the slices kept (ptxas 13.0 spilled 8 / 4 bytes of the
        // D 64 instance with the unrolled form).
#pragma unroll
        for (int k = 0; k < (kWarpHeads * D + kN - 1) / kN; ++k) {
          const int i = tix().tid + kN * k;  // (kReread) the index again
          if ((kWarpHeads * D) % kN != 0 && i >= kWarpHeads * D) break;
          const int hi = i & 3, d = i >> 2;
          if (hi >= nh) continue;
          float a = 0.0f;
          const bool any_tok = sm.m[hi] != neg_inf();
          if (any_tok)
            for (int sl = 0; sl < nsl; ++sl) a = a + slice_sums(stage0, sbytes, l, sl)[i];
          pacc[static_cast<long long>(hi) * (p.s.P * D) + d] = a;
          if (d == 0) store_ml(hi);
        }
      }
    }
    if constexpr (kDyn) read_next();  // written at the item's top, before its barriers
  }
  if constexpr (kFold) fold_tail<D, kN>(p, items, stage0, ix0.tid);
}

}  // namespace mlops::fbla
