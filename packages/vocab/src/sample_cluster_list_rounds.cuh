// The sampler's cluster kernel: the tk / tp forms' rounds on the gathered list, in each CTA alone: top-p's
// level 2 and its exact finish by one warp (tp3_rounds), top-p after a gathered top-k (tk_top_p) and top-k's
// exact finish (tk_finish).
#pragma once
#include "sample_cluster_wide_top_p.cuh"

namespace mlops::vocab {
namespace {

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // sample_cluster_shared.cuh: sm_90 device code, or the host runner
// MLOPS_SAMPLE_TK_COUNT_WINDOW (sample_cluster_shared.cuh): level 3 of a fused top-k row from the 32 bins at and below
// the max's (best: the cluster's max, pack_best), by warp 0 (every lane calls it) right after the max's exchange,
// when the C CTAs' cnt[0] are complete. Writes level 3's result where the suffix scan would (b_prefix, b_mask = the
// top byte, b_krem, b_done, b_warp = the bin's count), or b_mask = 0 where the window does not reach k (the round then
// reads the 256 bins); read after the max phase's block barrier, before anything else writes them.
// PUSH (MLOPS_SAMPLE_TK_PUSH): where the window reaches k, also CTA r's count of the keys the listing takes (the bins
// from the crossing one up: lane r's sum of the C counts the lanes read, broadcast bin by bin), their scan into g_off
// (g_off[C]: the total) and g_n: the total where it fits (every CTA's list in kClusterCand, the whole in kGather), the
// push then armed (this CTA's mbarrier expects the whole list's bytes), else -1, as where the window does not reach k.
// The window's counts of the C CTAs: lane j's bin top - j (none past bin 0), summed (c) and, PUSH, CTA r's (cr[r]).
template <int C, int NT, bool PUSH>
struct WindowCounts {
  uint32_t c;
  uint32_t cr[PUSH ? C : 1];
};
template <int C, int NT, bool PUSH>
__device__ __forceinline__ WindowCounts<C, NT, PUSH> window_counts(uint32_t top, const ClusterShared<NT>& sh) {
  const unsigned lane = threadIdx.x & 31u;
  WindowCounts<C, NT, PUSH> w;
  w.c = 0;
#pragma unroll
  for (int r = 0; r < (PUSH ? C : 1); ++r) w.cr[r] = 0;
  if (lane <= top)
#pragma unroll
    for (int r = 0; r < C; ++r) {
      const uint32_t v = remote_load(&sh.cnt[0][top - lane], unsigned(r));
      w.c += v;
      if constexpr (PUSH) w.cr[r] = v;
    }
  return w;
}
// MLOPS_SAMPLE_TK_WINDOW_GUESS (sample_cluster_shared.cuh): `guess` is the bin whose counts warp 0 read beside the
// cluster's maxima (this CTA's own max's bin), `pre` those counts; where the cluster's max lies in that bin they are the
// window's, else the window is read again for the max's bin. Without the macro `pre` is unused (guess = ~0u). Off:
// no gain (the macro's comment).
template <int C, int NT, bool PUSH = false>
__device__ __forceinline__ void tk_count_window(uint64_t best, ClusterShared<NT>& sh, uint32_t guess = ~0u,
                                                const WindowCounts<C, NT, PUSH>* pre = nullptr) {
  const unsigned lane = threadIdx.x & 31u;
  const uint32_t top = best_key(best) >> 24;  // the max's bin: no counted key lies above it
  const uint32_t k = uint32_t(sh.r_cfg.top_k);
  // lane j: bin top - j; PUSH: CTA r's count of that bin in cr[r]
  const WindowCounts<C, NT, PUSH> w = pre && top == guess ? *pre : window_counts<C, NT, PUSH>(top, sh);
  const uint32_t c = w.c;
  const uint32_t* cr = w.cr;
  uint32_t incl = c;  // the count from the top bin down to this lane's
#pragma unroll
  for (unsigned off = 1; off < 32; off <<= 1) {
    const uint32_t o = __shfl_up_sync(kFull, incl, off);
    if (lane >= off) incl += o;
  }
  const unsigned hit = __ballot_sync(kFull, incl >= k);
  if (hit && lane == unsigned(__ffs(hit) - 1)) {  // the crossing bin (lanes past top add nothing: it is at most top)
    const uint32_t cum = incl - c;
    sh.b_prefix = (top - lane) << 24;
    sh.b_mask = 0xff000000u;
    sh.b_done = c == k - cum;
    sh.b_krem = k - cum;
    sh.b_warp = int(c);
  }
  if (!hit && lane == 0) sh.b_mask = 0;
  if constexpr (PUSH) {
    int g = -1;
    if (hit) {
      const unsigned last = unsigned(__ffs(hit) - 1);  // the crossing bin's lane (warp-uniform)
      uint32_t n = 0;  // lane r < C: CTA r's keys in the bins top - last .. top
      for (unsigned j = 0; j <= last; ++j)
#pragma unroll
        for (int r = 0; r < C; ++r) {
          const uint32_t v = __shfl_sync(kFull, cr[r], j);
          if (lane == unsigned(r)) n += v;
        }
      // A 32-bit scan over lanes 0 .. C (the counts are of one row's V < 2^31 keys), the steps that reach lane C only.
      const uint32_t at = warp_incl_scan_to<uint32_t, unsigned(C)>(n);
      const uint32_t total = __shfl_sync(kFull, at, unsigned(C));  // lanes from C on add 0
      bool over = false;  // a CTA's list past kClusterCand: only possible where kClusterCand < kGather
      if constexpr (kClusterCand < kGather) over = __ballot_sync(kFull, n > uint32_t(kClusterCand)) != 0;
      if (lane <= unsigned(C)) sh.g_off[lane] = at - n;
      if (!over && total <= uint32_t(kGather)) g = int(total);
      if (g >= 0 && lane == 0) push_expect(push_bar_of(sh), 4u * uint32_t(g));
    }
    if (lane == 0) sh.g_n = g;
  }
}

// The tk forms (TK, on the gather form) keep the per-element work of a top-k row to the staging, the
// first round's count and the candidate list: the lists hold slice indices (build_candidates<IDX>),
// top-p after a gathered top-k is decided on the gathered list directly (tk_top_p), and the draw of a
// CTA whose list holds every element it keeps walks the list, not the slice (tk_draw).
constexpr int kTkKept = 256;  // the most kept elements a list form takes (else the rounds / the slice)

// tp3_rounds' weighing of a level (bits sb .. sb + 7 of the keys matching prefix / mask) into single copies of 256
// words: the masses' low 16 bits (hl), their high bits (hh), the weighted elements (hn). No barrier.
template <int NT>
__device__ __forceinline__ void tp3_weigh(const float* all, int n, uint32_t prefix, uint32_t mask, const LeanRow& lm,
                                          int sb, uint32_t* hl, uint32_t* hh, uint32_t* hn) {
  for (int i0 = int(threadIdx.x); (i0 & ~31) < n; i0 += 4 * NT) {  // warp-uniform trip count (lean_weights_sparse4)
    float x[4];
    bool on[4];
    uint32_t w[4], k[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = i0 + j * NT;
      x[j] = i < n ? all[i] : 0.0f;
      k[j] = key_of(x[j]);
      on[j] = i < n && (k[j] & mask) == prefix;
    }
    lean_weights_sparse4(lm, x, on, w);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (w[j]) {
        const uint32_t b = (k[j] >> sb) & 255u;
        atomicAdd(&hl[b], w[j] & 0xffffu);  // < 2^27 a word: at most kGather elements
        atomicAdd(&hh[b], w[j] >> 16);
        atomicAdd(&hn[b], 1u);
      }
  }
}

// tp3_rounds' finish where the chosen bin (prefix / mask) holds at most 32 weighted elements: they are collected as
// (key, weight) (b_krem: their count, zero before the caller's last barrier) and one warp finds the smallest kept key
// (tp3_rounds' comment); prefix / mask final. Every thread calls it (three barriers).
template <int NT>
__device__ __forceinline__ void tp3_finish(const float* all, int n, const LeanRow& lm, uint32_t& prefix, uint32_t& mask,
                                           uint64_t acc, double thr, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  uint64_t* sub = reinterpret_cast<uint64_t*>(sh.hlo);  // hlo: free after the wide round's barriers
  for (int i = tid; i < n; i += NT) {
    const float x = all[i];
    const uint32_t k = key_of(x);
    if ((k & mask) == prefix) {
      const uint32_t w = lean_weight1(lm, x, true);
      if (w) {
        const uint32_t at = atomicAdd(&sh.b_krem, 1u);
        if (at < 32u) sub[at] = (uint64_t(k) << 32) | w;
      }
    }
  }
  __syncthreads();
  MLOPS_SAMPLE_TP3_MARK(5);  // collected
  if (tid < 32) {
    const uint32_t c = sh.b_krem < 32u ? sh.b_krem : 32u;  // == nb
    const uint64_t e = lane < c ? sub[lane] : uint64_t(0);
    const uint32_t ke = uint32_t(e >> 32);
    uint64_t above = acc;  // acc plus the weight of the bin's keys above this lane's
    for (uint32_t j = 0; j < c; ++j) {
      const uint64_t o = __shfl_sync(kFull, e, int(j));
      above += uint32_t(o >> 32) > ke ? uint64_t(uint32_t(o)) : uint64_t(0);
    }
    uint32_t kmin = lane < c && double(above) < thr ? ke : 0xffffffffu;
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
      const uint32_t o = __shfl_xor_sync(kFull, kmin, off);
      kmin = o < kmin ? o : kmin;
    }
    if (lane == 0) sh.b_prefix = kmin;  // the bin's largest key is kept (acc < thr): kmin is a key of the bin
  }
  __syncthreads();
  prefix = sh.b_prefix;
  mask = ~0u;
  __syncthreads();
}

// The tp3 forms (TP3, on the tp form): the rounds on the gathered list after the wide top-p round, cut to one
// weighing of the list and one 256-bin round. The tp form weighs the whole list (~1450 elements on the bench's
// rows: the crossing wide bin's ~900 and those above it) in each of its three rounds (levels 2, 1, 0), clears
// 2 x 2048 words and sums 8 copies a round. Here: level 2's masses (bits 13 - 20 of the crossing bin's keys) and
// weighted counts go into single copies of 256 words (cnt[1] / mass[0] / cnt[0]: free after the gather's barrier,
// no other CTA reads them), the same integers and the same choice as the tp form's level 2 (the same early stop
// where the chosen bin holds one weighted element). The chosen bin holds a few of the list's elements (~900 over
// 256 bins); where it holds at most 32 weighted ones, they are weighed again (lean_weight1: the same integers)
// into a list of (key, weight) and one warp finds the threshold exactly: an element is kept where acc (the mass
// above the bin) plus the weight of the bin's strictly larger keys is below thr (double(.) < thr, as the rounds
// compare), and the new prefix is the smallest kept key. Levels 1 and 0 would reach that key (their last bin is
// one key: the highest whose mass from the top reaches thr, which is the smallest key whose larger keys' mass
// does not), or stop at a bin's lower bound that keeps the same weighted elements: the same kept weights, S,
// token and log-probability. Every CTA holds the same list, so every CTA decides alike. Returns the next level of
// the rounds: -1 (done: prefix / mask final) or 1 (the bin holds more than 32 weighted elements: the tp form's
// rounds go on from level 1 with this prefix, mask and acc). Every thread of the CTA calls it.
// MLOPS_SAMPLE_TP3_LEVEL1 (session 46): where level 2's bin holds more than 32, level 1 (bits 5 - 12) the same way,
// and the warp's finish after it (else 0: the rounds go on from level 0). At the bench's rows' crossing (T = 0.8, z
// ~ 4 - 5 of N(0, 3^2) at V = 151936) a level-2 bin is 1/256 of a unit wide and holds ~25 elements on average, so
// whether one warp finishes at level 2 is the row's luck: the probe's row did in run 224 (B = 1 cluster16_wide's rounds
// 3.7 -> 2.1 us with MLOPS_SAMPLE_WIDE_TP3). Off (sample_cluster_shared.cuh): on run 226's seeded bench row it gained
// nothing, and its loop cost the global-slice kernels 8 bytes of stack and B = 64 0.7 - 1.8 us.
template <int NT>
__device__ int tp3_rounds(const mlops_sample_config& cfg, float m, Temperature T, const float* all, int n,
                          uint32_t& prefix, uint32_t& mask, uint64_t& acc, double thr, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint32_t* hl = sh.cnt[1];                                 // a level's masses: the low 16 bits of each weight
  uint32_t* hh = reinterpret_cast<uint32_t*>(sh.mass[0]);  // the high bits
  uint32_t* hn = sh.cnt[0];                                 // the weighted elements a bin
  const LeanRow lm = mass_row(cfg, m, T);
  // MLOPS_SAMPLE_TP3_LEVEL1: where level 2's bin holds more than 32 weighted elements, level 1 (bits 5 - 12) the same
  // way before the generic rounds take over (their level 0 only where level 1's bin holds more than 32 too)
  for (int level = 2;; --level) {
    const int sb = wide_shift(level);
    for (int i = tid; i < 256; i += NT) {
      hl[i] = 0;
      hh[i] = 0;
      hn[i] = 0;
    }
    __syncthreads();  // (level 1) after every read of the words by level 2's selection
    tp3_weigh<NT>(all, n, prefix, mask, lm, sb, hl, hh, hn);
    __syncthreads();
    MLOPS_SAMPLE_TP3_MARK(4);  // weighed
    uint64_t mass = 0;
    uint32_t n_bin = 0;
    if (tid < 256) {
      mass = uint64_t(hl[255 - tid]) + (uint64_t(hh[255 - tid]) << 16);
      n_bin = hn[255 - tid];
    }
    const uint64_t incl = acc + suffix_scan256<NT>(mass, sh);  // syncs before and after
    if (tid == 0) {  // no bin reaches the threshold: the prefix stays, the rounds end
      sh.b_prefix = prefix;
      sh.b_mask = mask;
      sh.b_done = 1;
      sh.b_krem = 0;  // the collected list's count (below)
    }
    __syncthreads();
    if (tid < 256 && double(incl) >= thr && (tid == 0 || !(double(incl - mass) >= thr))) {
      sh.b_prefix = prefix | (uint32_t(255 - tid) << sb);
      sh.b_mask = mask | (255u << sb);
      sh.b_acc = incl - mass;
      sh.b_done = n_bin == 1;  // the tp form's early stop: the bin's lower bound keeps the same weights
      sh.b_warp = int(n_bin);
    }
    __syncthreads();
    prefix = sh.b_prefix;
    mask = sh.b_mask;
    acc = sh.b_acc;
    const int done = sh.b_done, nb = sh.b_warp;
    __syncthreads();
    MLOPS_SAMPLE_TP3_MARK(15);  // the bin chosen
    if (done) return -1;
    if (nb <= 32) break;
    if (level == 1 || !MLOPS_SAMPLE_TP3_LEVEL1) return level - 1;
  }
  tp3_finish<NT>(all, n, lm, prefix, mask, acc, thr, sh);
  return -1;
}

// tp3_rounds_warps' choice of the level-2 bin by one warp (every lane calls it): the 256 bins' masses (hl, hh) and
// weighted elements (hn) read from the top (lane l: bins 255 - 8 l .. 248 - 8 l by 16-byte loads), scanned in
// registers; the first bin from the top whose mass from the top (acc plus the bins above and its own) reaches thr as a
// double, its weighted elements and the mass above it. found false where no bin reaches thr.
struct Tp3Choice {
  bool found;
  uint32_t bin, nb;
  uint64_t above;
};
__device__ __forceinline__ Tp3Choice tp3_choose_in_warp(const uint32_t* hl, const uint32_t* hh, const uint32_t* hn,
                                                        uint64_t acc, double thr) {
  const unsigned lane = threadIdx.x & 31u;
  // word 7 - q of the lane's 8 is bin 255 - 8 l - q
  const uint32_t at = (248u - 8u * lane) / 4u;
  const uint4 l0 = reinterpret_cast<const uint4*>(hl)[at], l1 = reinterpret_cast<const uint4*>(hl)[at + 1];
  const uint4 h0 = reinterpret_cast<const uint4*>(hh)[at], h1 = reinterpret_cast<const uint4*>(hh)[at + 1];
  const uint4 n0 = reinterpret_cast<const uint4*>(hn)[at], n1 = reinterpret_cast<const uint4*>(hn)[at + 1];
  const uint32_t lw[8] = {l0.x, l0.y, l0.z, l0.w, l1.x, l1.y, l1.z, l1.w};
  const uint32_t hw[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
  const uint32_t nw[8] = {n0.x, n0.y, n0.z, n0.w, n1.x, n1.y, n1.z, n1.w};
  uint64_t s = 0;
#pragma unroll
  for (int q = 0; q < 8; ++q) s += uint64_t(lw[q]) + (uint64_t(hw[q]) << 16);
  const uint64_t incl = acc + warp_incl_scan(s);  // the mass from the top down to this lane's last bin
  const unsigned hit = __ballot_sync(kFull, double(incl) >= thr);
  uint32_t bin = 0, nb = 0;  // the crossing lane's: its bin (+ 256: found), the bin's weighted elements
  uint64_t above = incl - s;  // the mass above the lane's first bin, then above its crossing bin
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const uint64_t mq = uint64_t(lw[7 - q]) + (uint64_t(hw[7 - q]) << 16);
    if (bin == 0 && double(above + mq) >= thr) {
      bin = 256u + 255u - 8u * lane - uint32_t(q);
      nb = nw[7 - q];
    } else if (bin == 0) {
      above += mq;
    }
  }
  const int src = hit ? __ffs(hit) - 1 : 0;
  Tp3Choice c;
  c.found = hit != 0u;  // else the prefix stays and the rounds end (acc is not read after)
  c.bin = __shfl_sync(kFull, bin, src) - 256u;
  c.nb = __shfl_sync(kFull, nb, src);
  c.above = __shfl_sync(kFull, above, src);
  return c;
}

// MLOPS_SAMPLE_TP3_WARPS (sample_cluster_shared.cuh; session 53): tp3_rounds' level 2 without its 256-bin scan's and
// the choice's broadcast barriers, as tk_level2_finish does for top-k. After the weighing's barrier every warp reads the
// 256 bins' masses and counts (lane l: bins 255 - 8 l .. 248 - 8 l by 16-byte loads), scans them from the top in
// registers and finds the same bin: the first from the top whose mass from the top (acc plus the bins' above and its
// own) reaches thr as a double, which is the bin the 256 threads' test picks (the sums grow bin by bin, so only one bin
// has the sum before it below thr and its own at or above it). So tp3_rounds' 10 block barriers become 5 on the path
// where the bin holds at most 32 weighted elements (clear, weighing, the bin's collection, the warp's finish, the
// prefix read), and one more before returning early (a one-element bin, or more than 32): the caller's next writes of
// cnt / mass come after every warp's reads. The same prefix, mask, acc and return. NT < 1024 only (cnt is 16-byte
// aligned there), and not with MLOPS_SAMPLE_TP3_LEVEL1 (tp3_rounds then). Off: slower (the macro's comment). ONE
// (MLOPS_SAMPLE_TP3_WARPS = 2, prepared): warp 0 alone chooses and one barrier broadcasts its choice.
template <int NT, bool ONE = false>
__device__ int tp3_rounds_warps(const mlops_sample_config& cfg, float m, Temperature T, const float* all, int n,
                                uint32_t& prefix, uint32_t& mask, uint64_t& acc, double thr, ClusterShared<NT>& sh) {
  static_assert(NT < 1024, "cnt (and mass after it) 16-byte aligned in the 512-thread kernels only");
  const int tid = threadIdx.x;
  uint32_t* hl = sh.cnt[1];                                 // the level's masses: the low 16 bits of each weight
  uint32_t* hh = reinterpret_cast<uint32_t*>(sh.mass[0]);  // the high bits
  uint32_t* hn = sh.cnt[0];                                 // the weighted elements a bin
  const LeanRow lm = mass_row(cfg, m, T);
  constexpr int sb = wide_shift(2);  // bits 13 - 20
  for (int i = tid; i < 256; i += NT) {
    hl[i] = 0;
    hh[i] = 0;
    hn[i] = 0;
  }
  if (tid == 0) sh.b_krem = 0;  // the collected list's count (below)
  __syncthreads();
  tp3_weigh<NT>(all, n, prefix, mask, lm, sb, hl, hh, hn);
  __syncthreads();
  MLOPS_SAMPLE_TP3_MARK(4);  // weighed
  Tp3Choice ch{};  // ONE: warp 0's, read back by every warp below
  if (!ONE || tid < 32) ch = tp3_choose_in_warp(hl, hh, hn, acc, thr);
  if constexpr (ONE) {  // ONE (MLOPS_SAMPLE_TP3_WARPS = 2): warp 0 alone chose; its choice broadcast by one barrier
    if (tid == 0) {
      sh.b_prefix = ch.found ? ch.bin : 0xffffffffu;
      sh.b_warp = int(ch.nb);
      sh.b_acc = ch.above;
    }
    __syncthreads();  // every warp's copy of warp 0's choice; warp 0 alone read hl / hh / hn
    ch.found = sh.b_prefix != 0xffffffffu;
    ch.bin = sh.b_prefix;
    ch.nb = uint32_t(sh.b_warp);
    ch.above = sh.b_acc;
  }
  if (!ch.found) {
    if (!ONE) __syncthreads();  // every warp's reads of hl / hh / hn above before the caller's next writes
    return -1;
  }
  prefix |= ch.bin << sb;
  mask |= 255u << sb;
  acc = ch.above;
  MLOPS_SAMPLE_TP3_MARK(15);  // the bin chosen
  if (ch.nb == 1u || ch.nb > 32u) {  // the tp form's early stop, or the generic rounds from level 1
    __syncthreads();  // every warp's reads of hl / hh / hn (ONE: of b_*) above before the caller's next writes
    return ch.nb == 1u ? -1 : 1;
  }
  tp3_finish<NT>(all, n, lm, prefix, mask, acc, thr, sh);
  return -1;
}

// MLOPS_SAMPLE_TK_TOPP_WARP: tk_top_p's rule for at most 64 weighed elements (kl = hlo's 64-bit words: (key, weight))
// by warp 0, the entries in registers (two a lane) and every entry's weight broadcast by shuffles, so no thread walks
// the list in shared memory and no block_max_u64 (two barriers) follows. S is the sum of the warps' partial sums in
// red (the CTA's, as block_sum_u64 adds them). Entries past nk weigh 0 and add to no sum. Writes the smallest kept
// key to b_prefix (0xffffffff where none weighs, as block_max_u64 of nothing gives).
template <int NT>
__device__ void tk_top_p_warp(const mlops_sample_config& cfg, int nk, ClusterShared<NT>& sh) {
  const unsigned lane = threadIdx.x & 31u;
  const uint64_t* kl = reinterpret_cast<const uint64_t*>(sh.hlo);
  const double thr = top_p_threshold(cfg.top_p, block_partials_total<NT>(sh));
  const uint32_t n = uint32_t(nk);
  const uint64_t e0 = lane < n ? kl[lane] : uint64_t(0), e1 = lane + 32u < n ? kl[lane + 32u] : uint64_t(0);
  const uint32_t k0 = uint32_t(e0 >> 32), k1 = uint32_t(e1 >> 32);
  uint64_t a0 = 0, a1 = 0;  // the weight of the entries with larger keys than this lane's two
#pragma unroll 8
  for (int j = 0; j < 32; ++j) {
    const uint64_t o0 = __shfl_sync(kFull, e0, j), o1 = __shfl_sync(kFull, e1, j);
    const uint32_t ko0 = uint32_t(o0 >> 32), ko1 = uint32_t(o1 >> 32);
    a0 += (ko0 > k0 ? uint64_t(uint32_t(o0)) : 0u) + (ko1 > k0 ? uint64_t(uint32_t(o1)) : 0u);
    a1 += (ko0 > k1 ? uint64_t(uint32_t(o0)) : 0u) + (ko1 > k1 ? uint64_t(uint32_t(o1)) : 0u);
  }
  uint32_t kmin = lane < n && double(a0) < thr ? k0 : 0xffffffffu;
  if (lane + 32u < n && double(a1) < thr && k1 < kmin) kmin = k1;
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    const uint32_t o = __shfl_xor_sync(kFull, kmin, off);
    kmin = o < kmin ? o : kmin;
  }
  if (lane == 0) sh.b_prefix = kmin;
}

// MLOPS_SAMPLE_TK_TOPP_SPLIT (sample_cluster_shared.cuh; session 53): tk_top_p_warp's rule by every warp, the entries
// split among them. Warp 0 alone runs 32 steps of shuffles and 64-bit sums a lane (each lane's two entries against
// every other), one dependent chain. Here warp w takes the entries w, w + NW, ... (at most 64 / NW of them, 4 at 512
// threads): each lane holds two entries of the list (lane, lane + 32) and weighs them against the warp's entries, and
// the warp's butterflies sum each entry's weight above it (the entries interleaved: their shuffles in flight at once);
// an entry is kept where that weight is below thr, and each warp writes the smallest kept key of its entries into its
// word of wtot (free here: its last writer, suffix_scan256, is behind the weighing's barrier, and no later reader of
// this row's wtot comes before a write of its own). The caller's barrier, then every thread takes the least of the NW
// words (0xffffffff where none weighs, as tk_top_p_warp writes). The same keys, sums and compares: the same bound.
template <int NT>
__device__ __forceinline__ void tk_top_p_split(const mlops_sample_config& cfg, int nk, ClusterShared<NT>& sh) {
  constexpr int NW = NT / 32, kPer = (64 + NW - 1) / NW;  // a warp's entries at most
  static_assert(NW <= 2 * int(sizeof(sh.wtot) / sizeof(sh.wtot[0])), "a warp's word in wtot");
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const uint64_t* kl = reinterpret_cast<const uint64_t*>(sh.hlo);
  const double thr = top_p_threshold(cfg.top_p, block_partials_total<NT>(sh));
  const uint32_t n = uint32_t(nk);
  const uint64_t e0 = lane < n ? kl[lane] : uint64_t(0), e1 = lane + 32u < n ? kl[lane + 32u] : uint64_t(0);
  const uint32_t k0 = uint32_t(e0 >> 32), k1 = uint32_t(e1 >> 32);  // 0 past n: above no key
  uint64_t a[kPer];
  uint32_t ka[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const uint32_t j = warp + uint32_t(i * NW);
    ka[i] = j < n ? uint32_t(kl[j] >> 32) : 0u;  // a broadcast load
    a[i] = (k0 > ka[i] ? uint64_t(uint32_t(e0)) : 0u) + (k1 > ka[i] ? uint64_t(uint32_t(e1)) : 0u);
  }
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1)
#pragma unroll
    for (int i = 0; i < kPer; ++i) a[i] += __shfl_xor_sync(kFull, a[i], off);
  uint32_t kmin = 0xffffffffu;
#pragma unroll
  for (int i = 0; i < kPer; ++i)
    if (warp + uint32_t(i * NW) < n && double(a[i]) < thr && ka[i] < kmin) kmin = ka[i];
  if (lane == 0) reinterpret_cast<uint32_t*>(sh.wtot)[warp] = kmin;
}

// Top-p after a gathered top-k (every CTA holds the same list `all` of n elements, a superset of the
// keys >= tau), in each CTA alone: the definition's rule on the list. The elements of non-zero weight
// at or above tau (top-p's masses: no min-p) are compacted as (key, weight) into the hlo / hhi words,
// S_k is their sum, and an element is kept when the weight of the strictly larger keys is below
// top_p_threshold(p, S_k) (the host emulation's walk over the keys from the top: the same keys kept,
// ties included); the new bound is the smallest kept key. Elements of weight 0 add nothing to any sum
// and are never drawn, so the kept weights are the rounds'. Returns false (every CTA alike: the same
// list) where more than kTkKept elements weigh: the rounds run then.
// POS (MLOPS_SAMPLE_TK_TOPP_DRAW, not the global-slice forms): each entry's list position too (kpos), for list_draw_kept.
template <int NT, bool POS = false>
__device__ bool tk_top_p(const mlops_sample_config& cfg, float m, Temperature T, const float* all, int n,
                         uint32_t& tau, ClusterShared<NT>& sh, bool& by_warp) {
  const int tid = threadIdx.x;
  uint64_t* kl = reinterpret_cast<uint64_t*>(sh.hlo);  // hlo, hhi: 2048 64-bit words
  // POS: each entry's list position too, after the kTkKept entries (list_draw_kept reads them)
  uint32_t* kpos = reinterpret_cast<uint32_t*>(kl + kTkKept);
  static_assert(kTkKept * 3 <= 2 * 256 * kRep, "the entries and their positions in the hlo / hhi words");
  // MLOPS_SAMPLE_TK_TOPP_WARP below 1 024 threads only: in the global-slice kernels (cluster2_tp3g / cluster4_tp3g at
  // 1 024 threads) ptxas 13.0 grew the stack 32 -> 40 bytes with it, as with session 49's push there (B = 64 +0.6 -
  // 2.3 us, GPU run 242). Off, the code is session 49's (block_sum_u64), the same SASS.
  constexpr bool kWarp = MLOPS_SAMPLE_TK_TOPP_WARP && NT < 1024;
  by_warp = false;
  LeanRow lm = lean_row(cfg, m, T);
  lm.u_min = -__int_as_float(0x7f800000);
  lm.min_w = 0;
  if (tid == 0) sh.b_krem = 0;
  __syncthreads();
  uint64_t s = 0;
  for (int i = tid; i < n; i += NT) {
    const float x = all[i];
    const uint32_t k = key_of(x);
    const uint32_t w = lean_weight1(lm, x, k >= tau);
    if (w) {
      const uint32_t at = atomicAdd(&sh.b_krem, 1u);
      kl[at] = (uint64_t(k) << 32) | w;
      if (POS && kWarp && at < uint32_t(kTkKept)) kpos[at] = uint32_t(i);
      s += w;
    }
  }
  if constexpr (kWarp) {
    block_partials_u64<NT>(s, sh);  // syncs; the CTA's sum (block_partials_total) is added where it is needed
  } else {
    s = block_sum_u64<NT>(s, sh);  // syncs
  }
  const int nk = int(sh.b_krem);
  if (nk > kTkKept) {
    __syncthreads();
    return false;
  }
  if constexpr (kWarp) {
    if (nk <= 64) {  // warp 0 alone (the macro's comment): one barrier after it
      uint32_t kp;
      if constexpr (MLOPS_SAMPLE_TK_TOPP_SPLIT) {  // every warp a share of the entries, the least of their words
        tk_top_p_split<NT>(cfg, nk, sh);
        __syncthreads();
        kp = 0xffffffffu;
        for (int w = 0; w < NT / 32; ++w) {
          const uint32_t o = reinterpret_cast<const uint32_t*>(sh.wtot)[w];
          kp = o < kp ? o : kp;
        }
      } else {
        if (tid < 32) tk_top_p_warp<NT>(cfg, nk, sh);
        __syncthreads();
        kp = sh.b_prefix;
      }
      if (kp > tau) tau = kp;
      by_warp = true;  // the entries (kl, kpos: nk = b_krem of them) stay for list_draw_kept
      return true;
    }
    s = block_partials_total<NT>(sh);
    __syncthreads();  // red is free again (block_max_u64 below writes it)
  }
  const double thr = top_p_threshold(cfg.top_p, s);
  uint64_t low = 0;  // ~(the smallest kept key) of this thread's elements
  for (int j = tid; j < nk; j += NT) {
    const uint64_t e = kl[j];
    const uint32_t ke = uint32_t(e >> 32);
    uint64_t above = 0;
    for (int f = 0; f < nk; ++f) {
      const uint64_t g = kl[f];
      above += uint32_t(g >> 32) > ke ? uint64_t(uint32_t(g)) : uint64_t(0);
    }
    if (double(above) < thr && uint64_t(~ke) > low) low = uint64_t(~ke);
  }
  const uint32_t kp = ~uint32_t(block_max_u64<NT>(low, sh));  // syncs; the max (nothing above it) is kept
  if (kp > tau) tau = kp;
  return true;
}

// The tk forms' top-k after a round on (or before the gather of) the gathered list `all` of n elements
// (every CTA holds the same), where the round's crossing bin (the keys k with (k & mask) == prefix)
// holds at most 32 keys of the row, all in the list: the bin's k_rem-th largest key (ties counted
// as the rounds count them), by one warp, instead of the rounds below. The rounds end at the same key,
// or stop early at the bin's lower bound where every key of a bin is kept; either bound keeps the
// same elements as this exact key (no key lies between a bin's bound and its smallest key), so the
// same weights, S_k, token and log-probability. Every thread of the CTA calls it (two barriers).
// tk_finish's pass and warp, where hhi[0] (the bin's key count) is already 0 for every thread: the bin's keys into
// hlo, then the k_rem-th largest by one warp (two barriers). tk_finish and tk_level2_finish take it.
template <int NT>
__device__ uint32_t tk_finish_keys(const float* all, int n, uint32_t prefix, uint32_t mask, uint32_t k_rem,
                                   ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  uint32_t* keys = sh.hlo;  // the bin's keys (hlo is dead after the round's sums, hhi[0] the count)
  for (int i = tid; i < n; i += NT) {
    const uint32_t k = key_of(all[i]);
    if ((k & mask) == prefix) {
      const uint32_t at = atomicAdd(&sh.hhi[0], 1u);
      if (at < 32u) keys[at] = k;
    }
  }
  __syncthreads();
  if (tid < 32) {
    const uint32_t nb = sh.hhi[0] < 32u ? sh.hhi[0] : 32u;
    const uint32_t k = lane < nb ? keys[lane] : 0u;
    uint32_t gt = 0, ge = 0;  // keys of the bin above / at or above this lane's
    for (uint32_t j = 0; j < nb; ++j) {
      const uint32_t o = __shfl_sync(kFull, k, int(j));
      gt += o > k ? 1u : 0u;
      ge += o >= k ? 1u : 0u;
    }
    if (lane < nb && gt < k_rem && k_rem <= ge) sh.b_prefix = k;  // lanes of equal keys write the same
  }
  __syncthreads();
  return sh.b_prefix;
}

template <int NT>
__device__ uint32_t tk_finish(const float* all, int n, uint32_t prefix, uint32_t mask, uint32_t k_rem,
                              ClusterShared<NT>& sh) {
  if (threadIdx.x == 0) sh.hhi[0] = 0;
  __syncthreads();
  return tk_finish_keys<NT>(all, n, prefix, mask, k_rem, sh);
}

// MLOPS_SAMPLE_TK_FINISH2 (session 49): a gathered top-k row's level 2 and tk_finish in one, with 4 block barriers
// where the generic gathered round (its 8 histogram copies cleared and summed, suffix_scan256's barriers, the b_*
// broadcast) and tk_finish take ~9: GPU run 242's probe put the two at 1.75 us of B = 1 cluster16_tk's 10.8. The
// level-2 counts of the crossing bin's elements go into one copy of 256 words (cnt[1]: no other CTA reads it once the
// list is gathered); every warp reads them (two 16-byte loads a lane, 8 bins from the top) and finds the crossing bin
// by its own scan, so no barrier publishes the choice; where the bin holds at most 32 keys, they are collected and one
// warp finds the k_rem-th as tk_finish does. The same integers, bin, remaining count and done as the generic round and
// the same threshold as tk_finish. Returns done with prefix final (done, or finished), else not done with prefix /
// mask / k_rem of level 2 (more than 32 keys in its bin: the generic rounds go on from level 1). Every thread calls it.
// Out of line (session 52; MLOPS_SAMPLE_TK_FINISH2_INLINE=1 inlines it): inlined, ptxas 13.0 grew the stack of the 8
// staged tk / tp kernels at 512 threads from 8 - 24 to 40 - 48 bytes (64 registers a thread); a call keeps its
// registers to itself (with TK_TOPP_WARP / LIST_DRAW / TK_TOPP_DRAW too: 16 - 24 bytes, cluster8_tp / tp2 40), so it
// returns its state (Level2) rather than writing the caller's registers through references (those would live on the
// stack).
struct Level2 {
  uint32_t prefix, mask, k_rem;
  bool done;  // prefix final; else the generic rounds go on from level 1
};
#ifndef MLOPS_SAMPLE_TK_FINISH2_INLINE
#define MLOPS_SAMPLE_TK_FINISH2_INLINE 0
#endif
#if MLOPS_SAMPLE_TK_FINISH2_INLINE
#define MLOPS_SAMPLE_LEVEL2_LINKAGE __forceinline__
#else
#define MLOPS_SAMPLE_LEVEL2_LINKAGE MLOPS_SAMPLE_OUT_OF_LINE
#endif
template <int NT>
__device__ MLOPS_SAMPLE_LEVEL2_LINKAGE Level2 tk_level2_finish(const float* all, int n, uint32_t prefix, uint32_t mask,
                                                               uint32_t k_rem, ClusterShared<NT>& sh) {
  static_assert(NT < 1024, "cnt is 16-byte aligned in the 512-thread kernels (its two 16-byte loads a lane)");
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  uint32_t* h = sh.cnt[1];
  if (tid < 256) h[tid] = 0;
  if (tid == 0) sh.hhi[0] = 0;  // tk_finish_keys' count of the bin's keys
  __syncthreads();
  for (int i = tid; i < n; i += NT) {
    const uint32_t k = key_of(all[i]);
    if ((k & mask) == prefix) atomicAdd(&h[(k >> 16) & 255u], 1u);
  }
  __syncthreads();
  // lane l: bins 255 - 8 l .. 248 - 8 l, the top first (v[7 - q] is bin 255 - 8 l - q)
  const uint4 lo4 = reinterpret_cast<const uint4*>(h)[(248u - 8u * lane) / 4u];
  const uint4 hi4 = reinterpret_cast<const uint4*>(h)[(252u - 8u * lane) / 4u];
  const uint32_t v[8] = {lo4.x, lo4.y, lo4.z, lo4.w, hi4.x, hi4.y, hi4.z, hi4.w};
  uint32_t s = 0;
#pragma unroll
  for (int q = 0; q < 8; ++q) s += v[q];
  uint32_t incl = s;
#pragma unroll
  for (unsigned off = 1; off < 32; off <<= 1) {
    const uint32_t o = __shfl_up_sync(kFull, incl, off);
    if (lane >= off) incl += o;
  }
  const unsigned hit = __ballot_sync(kFull, incl - s < k_rem && k_rem <= incl);
  if (!hit) {  // no bin reaches the remaining count (cannot happen): keep everything, as the generic round
    return Level2{0u, 0u, k_rem, true};
  }
  uint32_t bin = 0, c = 0, cum = incl - s;  // the crossing lane's: its bin, the bin's count, the count above it
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const uint32_t x = v[7 - q];
    if (bin == 0 && cum + x >= k_rem) {
      bin = 256u + 255u - 8u * lane - uint32_t(q);  // + 256: found (bin 0 is a bin)
      c = x;
    } else if (bin == 0) {
      cum += x;
    }
  }
  const int src = __ffs(hit) - 1;
  bin = __shfl_sync(kFull, bin, src) - 256u;
  c = __shfl_sync(kFull, c, src);
  cum = __shfl_sync(kFull, cum, src);
  prefix |= bin << 16;
  mask |= 255u << 16;
  k_rem -= cum;
  if (c == k_rem) return Level2{prefix, mask, k_rem, true};  // every key of the bin is kept
  if (c > 32u) return Level2{prefix, mask, k_rem, false};
  return Level2{tk_finish_keys<NT>(all, n, prefix, mask, k_rem, sh), mask, k_rem, true};
}
#endif

}  // namespace
}  // namespace mlops::vocab
