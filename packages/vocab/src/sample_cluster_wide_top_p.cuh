// The sampler's cluster kernel: top-p's first round on the wide digit (wide_top_p): near the max
// (wide_near_pass) or over every bin (wide_full_pass), then the list of the crossing bin and above
// (session 37's list_near / bin_first where their macros are on) and its gather.
#pragma once
#include "sample_cluster_wide.cuh"

namespace mlops::vocab {
namespace {

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // sample_cluster_shared.cuh: sm_90 device code, or the host runner
// Top-p's first round near the max (session 37): the crossing bin of a real row is a few wide bins below the max's,
// yet the full round (below) adds every element's weight into one of 2048 bins and reads them back across the
// cluster in two barriers (run 187: ~6 of a B = 1 call's 20.5 us, ~10 of a B = 64 row's 31.7). Here one pass sums
// every weight in registers (S: the same integer) and adds into shared memory only the weights of the kNearBins wide
// bins from the max's down to the one holding m - 10 T (a few % of the bench's elements); one cluster barrier, and
// every CTA reads the C CTAs' near bins (a lane a bin) and their sums. Every element of those bins is counted and no
// key lies above the max's bin, so each near bin's mass, and the mass from the top to it, are the full round's:
// where they reach p * S the crossing bin and the mass above it (acc) are the full round's too. Returns the crossing
// bin, or -1 where the near bins do not reach (a flat row: the caller runs the full round after a cluster barrier,
// every CTA deciding alike from the same integers). sh.b_total = S. Near bins in hlo / hhi [0, kNearBins), bin j the
// max's less j; their other readers are behind the gather's barrier (or the full round's).
#ifndef MLOPS_SAMPLE_NEAR_MASK
// Session 37's two steps after wide_near_pass (checked on the host: tests/c/sample_kernel_on_host.cpp, every
// combination): the near elements' positions kept as a 64-bit mask a thread and listed from it (list_near), and the tp
// forms' gather of the crossing bin's entries alone (bin_first). On since session 39 (GPU run 202, docs/vocab.md
// "Session 39": the timeline probe's whole kernel, B = 1 top-p cluster16_wide 17.41 -> 16.70 us, B = 64 cluster8_tp3 row
// 0 26.18 -> 24.07, the launch's span 85.8 -> 81.5; list_near is the gain, bin_first within the noise; both GPU test
// files whole passed on the wheel with both on). -D...=0 builds the form before them (the probes' "old" side).
#define MLOPS_SAMPLE_NEAR_MASK 1
#endif
#ifndef MLOPS_SAMPLE_BIN_FIRST
#define MLOPS_SAMPLE_BIN_FIRST 1
#endif
// The global-slice forms' near pass in 16-byte loads (session 40; U below): their slice is the row in global memory
// (L2 after the max's pass), and the strided pass's 4 scalar loads a thread a trip left too few bytes in flight for
// L2's latency (run 201: 22.9 of a B = 64 top-p row's 51.5 us, where the max's pass, 8 float4 a trip, reads the slices
// from HBM in 9.9). MLOPS_SAMPLE_GSL_QUADS = U float4 loads a trip (1, 2 or 4), 0 the strided pass (the form before).
// MLOPS_SAMPLE_GSL_LEAN = 1 (with U > 0) cuts the pass's instructions an element (~40 of them: with every SM busy at
// B = 64, ~12 us of issue): the trips whose U quads all lie in the slice test no bound; a near element is found by one
// float compare against the near bins' lowest key's float and told exactly inside; lean_weights4 without its NaN test
// (the same weights). The same bins, mask and S. GPU run 203 (session 40, an H100: docs/vocab.md "Session 40"): the
// probe's B = 64 top-p row's near pass 26.5 -> 21.6 us with U = 4 alone, 18.4 with LEAN too (U = 2 and 4 alike); the
// bench's B = 64 top-p 69.4 -> 61.8 us. On (U = 4, LEAN) since; -DMLOPS_SAMPLE_GSL_QUADS=0 -DMLOPS_SAMPLE_GSL_LEAN=0
// builds the pass before (the kernel-on-host runner checks both).
#ifndef MLOPS_SAMPLE_GSL_QUADS
#define MLOPS_SAMPLE_GSL_QUADS 4
#endif
#ifndef MLOPS_SAMPLE_GSL_LEAN
#define MLOPS_SAMPLE_GSL_LEAN 1
#endif
// MLOPS_SAMPLE_GSL_LIST_LOADS = K (session 40, prepared; 1, the listing before, until a GPU run times it): the
// global-slice forms' list_near takes a lane's next K near elements a round, their K L2 loads in flight at once (run
// 205's ncu: the listing's one load a lane a round ~8 % of a B = 64 top-p launch's stall samples). The same set listed.
#ifndef MLOPS_SAMPLE_GSL_LIST_LOADS
#define MLOPS_SAMPLE_GSL_LIST_LOADS 1
#endif
constexpr int kNearBins = 32;               // a lane a bin (8 octaves below the max's bin)
constexpr float kNearSpan = 10.0f / 24.0f;  // of Temperature::cutoff (-24 T): down to m - 10 T
// An element's near code (MLOPS_SAMPLE_GSL_NIBBLES): 1 + its near bin b (counted from the max's) for b < 15, else 0,
// as for an element of no near bin: list_nib serves crossing bins b < 15 alone, where a code 0 is never listed.
constexpr uint32_t kNibBins = 15;
__device__ __forceinline__ uint64_t near_code(uint32_t b) { return b < kNibBins ? uint64_t(b + 1u) : uint64_t(0); }
// W (MLOPS_SAMPLE_NEAR_MASK): the mask's words a thread, 2 for the global-slice forms (near2: elements 64 .. 127 of the
// thread's, for their 1024-thread CTAs' ~75 elements a thread at C = 2), else 1 (near2 untouched).
// U (MLOPS_SAMPLE_GSL_QUADS, the global-slice forms): 0, element tid + e NT is the thread's e-th (bit e); else the
// thread's quads tid + u NT (elements 4 (tid + u NT) .. + 3), U of them loaded a trip before any is weighed, element j
// of quad u being bit 4 u + j (near_element); zs 16-byte aligned (gsl_slice; a last partial quad read by elements).
// NIB (the global-slice forms' LEAN pass, MLOPS_SAMPLE_GSL_NIBBLES): each element's near code in nib (wide_top_p's
// comment), a word a trip, the tail's quads in one more word, and no mask (near, near2 stay 0): the trip's compare and
// select an element, the or a trip and 4 live registers less in the hottest loop; where the crossing lies past the
// codes' 15 bins (flat rows at high T), the list comes from a pass over the slice (build_candidates_staged).
// wide_near_pass's crossing, by warp 0: lane j holds near bin j's mass over the cluster (0 for j >= nb: the first
// reaching lane is below nb) and every lane the row's S; the first lane whose mass from the top reaches p S into
// b_warp (-1: none), the mass above it into b_acc, S into b_total.
template <int NT>
__device__ __forceinline__ void near_crossing(const mlops_sample_config& cfg, uint64_t mb, uint64_t S,
                                              ClusterShared<NT>& sh) {
  const unsigned lane = threadIdx.x & 31u;
  const double th = top_p_threshold(cfg.top_p, S);
  const uint64_t incl = warp_incl_scan(mb);
  const unsigned hit = __ballot_sync(kFull, double(incl) >= th);
  const int h = hit ? __ffs(hit) - 1 : -1;
  const uint64_t above = __shfl_sync(kFull, incl - mb, h < 0 ? 0 : h);
  if (lane == 0) {
    sh.b_total = S;
    sh.b_warp = h;
    sh.b_acc = above;
  }
}

template <int C, int NT, int W = 1, int U = 0, bool NIB = false, bool PUSH = false>
__device__ int wide_near_pass(const mlops_sample_config& cfg, float m, Temperature T, const float* zs, int n,
                              ClusterShared<NT>& sh, uint64_t& acc, double& thr, uint64_t& near, uint64_t& near2,
                              uint64_t* nib = nullptr, int* shift = nullptr) {
  static_assert(W == 1 || W == 2, "one or two mask words");
  static_assert(U == 0 || U == 1 || U == 2 || U == 4, "0, 1, 2 or 4 quads a trip");
  static_assert(C <= 32 && C * 32 <= 768, "a lane a CTA; C near-bin rows fit cnt / mass (768 words)");
  static_assert(!NIB || (U == 4 && MLOPS_SAMPLE_GSL_LEAN && MLOPS_SAMPLE_NEAR_MASK), "a word a LEAN trip of 4 quads");
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  // ns: the bins' shift, kWideShift or (MLOPS_SAMPLE_NEAR_FINE = F, W = 1) the finest of up to F bits finer where 32
  // such bins reach m - 10 T's (every CTA alike: the row's m and T); returned in *shift
  const uint32_t kf = key_of(m), kl = key_of(m + kNearSpan * T.cutoff);  // m - 10 T (m for a NaN)
  int ns = kWideShift;
  if constexpr (W == 1) {
#pragma unroll
    for (int f = MLOPS_SAMPLE_NEAR_FINE; f > 0; --f) {
      const int t = kWideShift - f;
      if ((kl >> t) < (kf >> t) && (kf >> t) - (kl >> t) < uint32_t(kNearBins)) {
        ns = t;
        break;
      }
    }
  }
  if (shift) *shift = ns;
  const uint32_t wm = kf >> ns;
  const uint32_t wl = kl >> ns;  // m - 10 T's bin (m's for a NaN)
  const uint32_t nb = wl < wm ? (wm - wl + 1 < uint32_t(kNearBins) ? wm - wl + 1 : uint32_t(kNearBins)) : 1u;
  // The near bins' copies (session 41): a copy sums the 16-bit halves of its weights in two 32-bit words, which wrap
  // past 65 537 elements, and a global-slice CTA (W = 2) takes up to kGslMaxSlice = 131 072 (~76 000 at C = 2: the
  // runner's "spike over 100 000 ones" gave another token): there each half of the CTA's warps adds into a copy of its
  // own (bins 32 .. 63 the second half's), and the copies are summed in 64 bits after the pass, the mass's two 32-bit
  // halves left in the bin's words. A copy a warp (bank-skewed, GPU run 209, H200) made the pass ~1.2 us slower at B = 64
  // and 0.35 at B = 1: the atomics on the lowest near bin are not what its rows' 28.7 - 34.3 us differ by.
  constexpr int kCopies = W == 2 ? 2 : 1;
  static_assert(kCopies == 1 || kGslMaxSlice / 2 <= 65537, "a copy's halves do not wrap");
  const int copy = (tid >> 5) * kCopies / (NT / 32);  // 0, or 1 for the second half of the warps
  for (int i = tid; i < 32 * kCopies; i += NT) {
    sh.hlo[i] = 0;
    sh.hhi[i] = 0;
  }
  __syncthreads();
  const LeanRow lm = mass_row(cfg, m, T);
  uint64_t s = 0;
  near = 0;
  if constexpr (W == 2) near2 = 0;
  // weight wj into near bin b's words (this thread's copy)
  auto bin_add = [&](uint32_t b, uint32_t wj) {
    const int at = 32 * copy + int(b);
    atomicAdd(&sh.hlo[at], wj & 0xffffu);
    atomicAdd(&sh.hhi[at], wj >> 16);
  };
  uint64_t tail_nib = 0;  // NIB: the tail's codes (its quads' bits all in one word)
  // element j of the 4 from mask bit `bit` (a multiple of 4: the 4 in one word; MLOPS_SAMPLE_NEAR_MASK) in near bin b,
  // its weight wj added into the bin's words
  auto near_add = [&](uint32_t b, uint32_t wj, int bit, int j) {
#if MLOPS_SAMPLE_NEAR_MASK
    if constexpr (!NIB) {  // NIB keeps no mask: the codes list (or the slice, past them)
      if (W == 1 || bit < 64)
        near |= 1ull << ((bit + j) & 63);
      else
        near2 |= 1ull << ((bit + j) & 63);
    }
#endif
    if constexpr (NIB) tail_nib |= near_code(b) << (4 * ((bit + j) & 15));
    if (wj) bin_add(b, wj);
  };
  // 4 elements weighed (w) into S and, in a near bin, into its words; their bits from `bit`
  auto take4 = [&](const float (&x)[4], const bool (&on)[4], const uint32_t (&w)[4], int bit) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s += w[j];
      const uint32_t b = wm - (key_of(x[j]) >> ns);  // a weighed element's key is at most the max's
      if ((MLOPS_SAMPLE_NEAR_MASK ? on[j] : w[j] != 0u) && b < nb) near_add(b, w[j], bit, j);
    }
  };
  if constexpr (U > 0 && MLOPS_SAMPLE_GSL_LEAN) {
    // take4 for 4 elements of a whole trip (LEAN): near ones found by one float compare against the near bins' lowest
    // key's float (every element whose key reaches it passes, and -0.0 too where that float is +0.0, which list_near's
    // key test drops). Their mask bits are set without a branch (session 41): bit 4 u + j of the trip's 16-bit word tm
    // for element j of its quad u, tm or-ed into the mask once a trip (bit is a multiple of 16); only the bins'
    // atomics stay in the (rare) branch, the element told exactly there by its bin's index. GPU run 211 (an H100,
    // against 2bf0ef7's branch holding the 64-bit mask update too): the B = 64 top-p rows with ~12 % of their elements
    // near 23.5 -> 20.0 us in this pass, those with ~1 % 14.3 -> 15.6, the launch's span 55.4 -> 51.8.
    const uint32_t klo = (wm - nb + 1u) << ns;
    const float xlo = float_of_bound(klo);
    // NIB: the element's code into the trip's word tn too, for every element of a near bin (weight 0 or not: the
    // list takes them as list_near does)
    auto take4_in = [&](const float (&x)[4], const uint32_t (&w)[4], uint32_t& tm, uint64_t& tn, int k0) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s += w[j];
        const bool in = x[j] >= xlo;
        if constexpr (!NIB) tm |= in ? 1u << (k0 + j) : 0u;
        if constexpr (NIB) {
          if (in) {
            const uint32_t b = wm - (key_of(x[j]) >> ns);
            if (b < nb) {
              tn |= near_code(b) << (4 * (k0 + j));
              if (w[j]) bin_add(b, w[j]);
            }
          }
        } else if (in && w[j]) {
          const uint32_t b = wm - (key_of(x[j]) >> ns);
          if (b < nb) bin_add(b, w[j]);
        }
      }
    };
    const int nq = (n + 3) >> 2, nfull = n >> 2;  // quads; those wholly in the slice
    constexpr bool kOn[4] = {true, true, true, true};
    int q0 = tid, bit = 0;  // bit: 4 ((q0 - tid) / NT), quad q0's first
    for (; q0 + (U - 1) * NT < nfull; q0 += U * NT, bit += 4 * U) {  // the trip's U quads all in the slice
      float4 r[U];
#pragma unroll
      for (int u = 0; u < U; ++u) r[u] = reinterpret_cast<const float4*>(zs)[q0 + u * NT];
      uint32_t tm = 0;
      uint64_t tn = 0;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float x[4] = {r[u].x, r[u].y, r[u].z, r[u].w};
        uint32_t w[4];
        lean_weights4<false>(lm, x, kOn, w);
        take4_in(x, w, tm, tn, 4 * u);
      }
      if constexpr (NIB) nib[(bit >> 4) * NT + tid] = tn;  // bit: a multiple of 16
#if MLOPS_SAMPLE_NEAR_MASK
      static_assert(4 * U <= 16, "a trip's bits in one 16-bit step of a word");
      if constexpr (!NIB) {  // no mask with the codes (near_add's comment)
        if (W == 1 || bit < 64)
          near |= uint64_t(tm) << (bit & 63);
        else
          near2 |= uint64_t(tm) << (bit & 63);
      }
#endif
    }
    const int tail = bit;  // NIB: the tail's word, bit >> 4
    const bool has_tail = q0 < nq;
    for (; q0 < nq; q0 += NT, bit += 4) {  // the rest, a quad at a time (at most U - 1 and a partial one)
      const float4 r = load_quad(zs, n, q0);
      const int e0 = 4 * q0;
      const float x[4] = {r.x, r.y, r.z, r.w};
      const bool on[4] = {e0 < n, e0 + 1 < n, e0 + 2 < n, e0 + 3 < n};
      uint32_t w[4];
      lean_weights4(lm, x, on, w);
      take4(x, on, w, bit);
    }
    if constexpr (NIB) {
      if (has_tail) nib[(tail >> 4) * NT + tid] = tail_nib;
    }
  } else if constexpr (U > 0) {
    const int nq = (n + 3) >> 2;
    for (int q0 = tid, bit = 0; q0 < nq; q0 += U * NT, bit += 4 * U) {  // bit: quad u's first bit is bit + 4 u
      float4 r[U];
#pragma unroll
      for (int u = 0; u < U; ++u) r[u] = load_quad(zs, n, q0 + u * NT);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e0 = 4 * (q0 + u * NT);
        const float x[4] = {r[u].x, r[u].y, r[u].z, r[u].w};
        const bool on[4] = {e0 < n, e0 + 1 < n, e0 + 2 < n, e0 + 3 < n};
        uint32_t w[4];
        lean_weights4(lm, x, on, w);
        take4(x, on, w, bit + 4 * u);
      }
    }
  } else {
    // element tid + e NT is bit e of near (e < 64; W = 2: bit e - 64 of near2 for e < 128)
    int i0 = tid, bit = 0;
    if constexpr (MLOPS_SAMPLE_WIDE_LEAN != 0) {  // whole trips: no bound, no NaN or min-p test (the macro's comment)
      for (; i0 + 3 * NT < n; i0 += 4 * NT, bit += 4) {
        float x[4];
        bool on[4];
        uint32_t w[4];
        weigh_strided4<NT, true>(lm, zs, n, i0, x, on, w);
        take4(x, on, w, bit);
      }
    }
    for (; i0 < n; i0 += 4 * NT, bit += 4) {  // 8 a trip (two groups of 4): -0.2 us at C = 8, +0.2 at C = 16 (GPU run 200)
      float x[4];
      bool on[4];
      uint32_t w[4];
      weigh_strided4<NT>(lm, zs, n, i0, x, on, w);
      take4(x, on, w, bit);
    }
  }
  MLOPS_SAMPLE_NEAR_MARK(4);     // thread 0's pass done
  s = block_sum_u64<NT>(s, sh);  // its barriers: every copy complete
  MLOPS_SAMPLE_NEAR_MARK(15);
  if constexpr (PUSH) {  // MLOPS_SAMPLE_PUSH_X bit 4 (the macro's comment), in a row the max's exchange measured
    static_assert(W == 1 && C <= NT / 32, "one copy of the bins; a warp a receiving CTA");
    if (!sh.r_stats) {  // CTA-uniform (written before the staging's barrier)
      const unsigned rank = cluster_rank();
      const int warp = tid >> 5;
      uint64_t* red = reinterpret_cast<uint64_t*>(&sh.cnt[0][0]);  // CTA r's bin j at 32 r + j, pushed by CTA r
      uint64_t* sums = &sh.mass[1][2 * C];                          // CTA r's S at r (after bit 2's max pairs)
      // warp w sends this CTA's 32 bins (and lane 0 its S) to CTA w; the bins below nb hold 0 (zeroed, never added)
      if (warp < C) {
        push_store_u64(&red[32 * rank + lane], unsigned(warp), mass_of<true>(sh.hlo[lane], sh.hhi[lane]), &sh.pub_wide);
        if (lane == 0) push_store_u64(&sums[rank], unsigned(warp), s, &sh.pub_wide);
      }
      MLOPS_SAMPLE_MARK(11);
      if (tid < 32) {  // lane j: near bin j (from the top), as the pulled form's warp 0 below
        if (lane == 0) push_expect(&sh.pub_wide, 33u * 8u * unsigned(C));
        push_wait(&sh.pub_wide);
        MLOPS_SAMPLE_MARK(12);
        uint64_t mb = 0;
        for (int r = 0; r < C; ++r) mb += red[32 * r + int(lane)];
        near_crossing(cfg, mb, warp_sum(lane < unsigned(C) ? sums[lane] : uint64_t(0)), sh);  // bins >= nb hold 0
      }
      __syncthreads();
      thr = top_p_threshold(cfg.top_p, sh.b_total);
      acc = sh.b_acc;
      if (sh.b_warp < 0 && tid == 0) push_bar_inval(&sh.pub_wide);  // wide_full_pass publishes its part there
      return sh.b_warp < 0 ? -1 : int(wm) - sh.b_warp;
    }
  }
  if (tid < kNearBins) {  // bin tid's copies summed (the first at word tid: no other thread reads it), the 64-bit
    uint64_t mb = 0;      // mass's two 32-bit halves left in its words (mass_of<false>)
#pragma unroll
    for (int c = 0; c < kCopies; ++c) mb += mass_of<true>(sh.hlo[32 * c + tid], sh.hhi[32 * c + tid]);
    sh.hlo[tid] = uint32_t(mb);
    sh.hhi[tid] = uint32_t(mb >> 32);
  }
  if (tid == 0) sh.pub_wide = s;
  MLOPS_SAMPLE_MARK(11);
  cluster_sync_smem();  // every CTA's near bins and sum complete
  uint64_t* red = reinterpret_cast<uint64_t*>(&sh.cnt[0][0]);  // CTA r's bin j at 32 r + j
  for (int t = tid; t < C * 32; t += NT) {
    const unsigned r = unsigned(t) >> 5, b = unsigned(t) & 31u;
    red[t] = b < nb ? mass_of<false>(remote_load(&sh.hlo[b], r), remote_load(&sh.hhi[b], r)) : uint64_t(0);
  }
  __syncthreads();
  MLOPS_SAMPLE_MARK(12);
  if (tid < 32) {  // lane j: near bin j (from the top)
    uint64_t mb = 0;
    for (int r = 0; r < C; ++r) mb += red[32 * r + int(lane)];
    near_crossing(cfg, mb, warp_sum(lane < unsigned(C) ? remote_load(&sh.pub_wide, lane) : uint64_t(0)), sh);
  }
  __syncthreads();
  thr = top_p_threshold(cfg.top_p, sh.b_total);
  acc = sh.b_acc;
  return sh.b_warp < 0 ? -1 : int(wm) - sh.b_warp;
}

// The full round (the caller's comment), where wide_near_pass's bins do not reach: the crossing bin, or -1 where
// no bin reaches; acc, thr and sh.b_total as wide_near_pass's.
// CARRY (the global-slice forms, session 41): a bin's mass as one 64-bit integer in its two words, the low word's
// carries into the high one (add_mass): their slices reach kGslMaxSlice elements, and the 32-bit sums of the 16-bit
// halves wrap past 65 537 (the runner's "spike over 100 000 zeros", a flat row whose near bins do not reach).
template <int C, int NT, bool TP, bool TP2, bool CARRY = false>
__device__ int wide_full_pass(const mlops_sample_config& cfg, float m, Temperature T, const float* zs, int n,
                              ClusterShared<NT>& sh, uint64_t& acc, double& thr) {
  // A CTA's portion of the wide bins, summed over the cluster, goes to cnt then mass (768 64-bit words) at C >= 3;
  // at C = 2 (the global-slice forms) to the candidate list's words (1024), free until the list is built after this
  // round: a cluster barrier at the end keeps the other CTA's reads of them (find_from_top) before it.
  static_assert(C >= 3 || (C == 2 && kClusterCand >= 2 * ((kWideBins + 1) / 2) &&
                           offsetof(ClusterShared<NT>, cand) % 8 == 0), "a portion of the wide bins fits cnt / mass");
  static_assert(!(CARRY && TP2), "the carrying bins take the tp form's atomics");
  constexpr int P = (kWideBins + C - 1) / C;
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u, rank = cluster_rank();
  for (int i = tid; i < kWideBins; i += NT) {
    sh.hlo[i] = 0;
    sh.hhi[i] = 0;
  }
  __syncthreads();
  const LeanRow lm = mass_row(cfg, m, T);
  for (int i0 = tid; i0 < n; i0 += 4 * NT) {
    float x[4];
    bool on[4];
    uint32_t w[4];
    weigh_strided4<NT>(lm, zs, n, i0, x, on, w);
    if constexpr (TP2) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t b = key_of(x[j]) >> kWideShift, hi = w[j] >> 16;
        atomicAdd(&sh.hlo[w[j] ? b : lane], w[j] & 0xffffu);  // 0 into the lane's own word where it weighs nothing
        atomicAdd(&sh.hhi[hi ? b : lane], hi);
      }
      continue;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (w[j]) {
        const uint32_t b = key_of(x[j]) >> kWideShift;
        if constexpr (CARRY) {
          add_mass(&sh.hlo[b], &sh.hhi[b], w[j]);
        } else if constexpr (TP) {
          atomicAdd(&sh.hlo[b], w[j] & 0xffffu);
          if (w[j] >> 16) atomicAdd(&sh.hhi[b], w[j] >> 16);
        } else {
          add_mass_of<true>(&sh.hlo[b], &sh.hhi[b], w[j]);
        }
      }
  }
  MLOPS_SAMPLE_MARK(11);
  cluster_sync_smem();  // every CTA's bins complete
  uint64_t* red = C >= 3 ? reinterpret_cast<uint64_t*>(&sh.cnt[0][0]) : reinterpret_cast<uint64_t*>(sh.cand);
  uint64_t part = 0;
  for (int t = tid; t < P; t += NT) {
    const int b = int(rank) * P + t;
    uint64_t s = 0;
    if (b < kWideBins)
      for (int r = 0; r < C; ++r)
        s += mass_of<!CARRY>(remote_load(&sh.hlo[b], unsigned(r)), remote_load(&sh.hhi[b], unsigned(r)));
    red[t] = s;
    part += s;
  }
  part = block_sum_u64<NT>(part, sh);
  if (tid == 0) sh.pub_wide = part;
  MLOPS_SAMPLE_MARK(12);
  cluster_sync_smem();  // every portion published
  if (tid < 32) {  // lane j: the portion of CTA C - 1 - j (from the top)
    const uint64_t t = lane < unsigned(C) ? remote_load(&sh.pub_wide, unsigned(C - 1) - lane) : uint64_t(0);
    const uint64_t incl = warp_incl_scan(t);
    const uint64_t S = __shfl_sync(kFull, incl, 31);
    const double th = top_p_threshold(cfg.top_p, S);
    const unsigned hit = __ballot_sync(kFull, lane < unsigned(C) && double(incl) >= th);
    const int h = hit ? __ffs(hit) - 1 : 0;
    const uint64_t above = __shfl_sync(kFull, incl - t, h);
    if (lane == 0) {
      sh.b_total = S;
      sh.b_krem = hit ? uint32_t(C - 1 - h) : ~0u;
      sh.b_acc = above;
    }
  }
  __syncthreads();
  thr = top_p_threshold(cfg.top_p, sh.b_total);
  const uint32_t rp = sh.b_krem;
  const uint64_t above = sh.b_acc;  // find_from_top writes it only after a barrier
  if (rp == ~0u) return -1;
  find_from_top<NT>(
      P, above,
      [&](int i) { return int(rp) * P + i < kWideBins ? remote_load(&red[i], rp) : uint64_t(0); },
      [&](uint64_t s) { return double(s) >= thr; }, sh);
  acc = sh.b_acc;
  const int bin = int(rp) * P + sh.b_warp;  // b_warp >= 0: the portion reaches
  if constexpr (C < 3) cluster_sync_smem();  // the other CTA's last read of red (cand) is behind it
  return bin;
}

// A warp's push of one entry a lane where `on`: the lanes' places from one atomic on *n (warp order among them). The
// whole warp calls it; the place is meaningless where !on.
__device__ __forceinline__ uint32_t warp_slot(bool on, uint32_t* n) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned b = __ballot_sync(kFull, on);
  uint32_t at = 0;
  if (lane == 0 && b) at = atomicAdd(n, uint32_t(__popc(b)));
  return __shfl_sync(kFull, at, 0) + uint32_t(__popc(b & ((1u << lane) - 1u)));
}

// mask_draw's first chunk word in hlo / hhi: NT with MLOPS_SAMPLE_MASK_DRAW_PREZERO (wide_top_p zeroes [NT, 2 NT)
// before list_near; the near bins, which other CTAs read until the gather, and tp3_finish's entries lie below NT), else 0
template <int NT>
constexpr int kMaskDrawWords = MLOPS_SAMPLE_MASK_DRAW_PREZERO ? NT : 0;

// build_candidates_staged's list (keys in [lo, hi]; IDX: slice indices, else values) from wide_near_pass's bit masks
// (bit e of a thread's: its element tid + e NT lies in a near bin; the crossing bin and everything above it are near
// bins): a thread visits its few near elements only, a warp pushing them a round at a time (one ballot, one atomic).
// The same set; the list is unordered. Every thread calls it.
// W = 2 (the global-slice forms): near2's elements (64 + e) after near's; W = 1: the caller's near2 is 0. Q: the
// mask of the quad-loaded pass (wide_near_pass's U > 0; near_element maps a bit to its element).
// Returns (W = 1; else 0) the mask's bits whose elements have keys >= lo: MLOPS_SAMPLE_MASK_DRAW_KEPT's mask for
// mask_draw (the crossing bin and every bin above it, where any tau of the row lies).
template <int NT, bool IDX, int W = 1, bool Q = false, int K = 1>
__device__ uint64_t list_near(const float* zs, uint64_t near, uint64_t near2, uint32_t lo, uint32_t hi,
                              ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint64_t kept = 0;
  if (tid == 0) sh.cand_n = 0;
  __syncthreads();  // after every earlier read of cand_n / cand
  while (__ballot_sync(kFull, (near | near2) != 0)) {  // near's elements first, then near2's (W = 2; else 0)
    uint32_t i[K], e[K];
    bool has[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {  // a lane's next K elements: their K loads in flight at once (K > 1)
      has[k] = (near | near2) != 0;
      i[k] = 0;
      e[k] = 0;
      if (has[k]) {
        const bool lo_word = W == 1 || near != 0;
        const uint64_t w = lo_word ? near : near2;
        const uint32_t l = uint32_t(w), h = uint32_t(w >> 32);
        e[k] = uint32_t((lo_word ? 0 : 64) + (l ? __ffs(int(l)) - 1 : 31 + __ffs(int(h))));
        i[k] = near_element<NT, Q>(tid, e[k]);
        if (lo_word)
          near &= near - 1;
        else
          near2 &= near2 - 1;
      }
    }
    float x[K];
#pragma unroll
    for (int k = 0; k < K; ++k) x[k] = has[k] ? zs[i[k]] : 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const uint32_t key = key_of(x[k]);
      const bool on = has[k] && key >= lo && key <= hi;
      if (W == 1 && has[k] && key >= lo) kept |= 1ull << (e[k] & 63u);
      const uint32_t at = warp_slot(on, &sh.cand_n);
      if (on && at < uint32_t(kClusterCand)) sh.cand[at] = IDX ? bits_f32(i[k]) : x[k];
    }
  }
  __syncthreads();
  return kept;
}

// The tp forms' list (slice indices of every element at or above the crossing bin, for this CTA's draw) reordered so
// that the crossing bin's entries (keys <= hi) come first; returns their count, which is all the gather copies: every
// reader of the gathered list (tp3_rounds, the rounds on it) takes only the keys matching the bin's prefix. On the
// bench's rows a crossing bin of [6, 7) (a fifth of them) lists ~3 460 elements, over kGather, and its ~1 950 fit
// (session 37). Where the list overflowed, its count (the gather fails as before). Every thread calls it.
template <int NT>
__device__ uint32_t bin_first(const float* zs, uint32_t hi, ClusterShared<NT>& sh) {
  constexpr int kQ = (kClusterCand + NT - 1) / NT;
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const uint32_t cn = sh.cand_n;  // read after the caller's barrier
  if (cn > uint32_t(kClusterCand)) return cn;
  uint32_t e[kQ];
  bool in[kQ];
#pragma unroll
  for (int q = 0; q < kQ; ++q) {
    const uint32_t i = uint32_t(tid + q * NT);
    e[q] = i < cn ? f32_bits(sh.cand[i]) : 0u;
    in[q] = i < cn && key_of(zs[e[q]]) <= hi;
  }
  uint32_t* ctr = reinterpret_cast<uint32_t*>(sh.wtot);  // the bin's count, the two write positions
  if (tid < 3) ctr[tid] = 0;
  __syncthreads();  // every read of the list above
#pragma unroll
  for (int q = 0; q < kQ; ++q) {
    const unsigned b = __ballot_sync(kFull, in[q]);
    if (lane == 0 && b) atomicAdd(&ctr[0], uint32_t(__popc(b)));
  }
  __syncthreads();
  const uint32_t nbin = ctr[0];
#pragma unroll
  for (int q = 0; q < kQ; ++q) {
    const bool on = uint32_t(tid + q * NT) < cn;
    const uint32_t at_b = warp_slot(in[q], &ctr[1]), at_a = nbin + warp_slot(on && !in[q], &ctr[2]);
    if (in[q]) sh.cand[at_b] = bits_f32(e[q]);
    else if (on) sh.cand[at_a] = bits_f32(e[q]);
  }
  __syncthreads();
  return nbin;
}

// The tp forms' list from the near codes (session 42, MLOPS_SAMPLE_GSL_NIBBLES; the global-slice forms, whose LEAN near
// pass stores an element's code in nib: near_code): every element of near bins 0 .. bc (the crossing bin, counted
// from the max's, and the bins above it), the crossing bin's first: the set and split of list_near and bin_first,
// without their reads of the slice. Those are one scattered global load a near element (list_near) and a listed one
// (bin_first): on the B = 64 top-p rows with ~12 % of their elements near, ~9.4 of a ~54 us row (GPU run 210; list_near
// with 4 loads in flight no faster). Here a thread counts its words' listed codes (1 <= c <= bc + 1, and c = bc + 1,
// nibble-wise), an exclusive scan places each thread's entries (bin entries at [0, nbin), the others after them, each
// in thread order), and the thread writes them. bc < kNibBins. The first form tested the codes as byte lanes of the
// even and odd nibbles, twice (count, then write).
// GPU runs 213 - 215 (an H100, the codes on): this listing takes ~4 - 7 us a B = 64 top-p row, issue-bound (ncu run
// 214: its SWAR windows ~6 % of the launch's samples; ~700 warp instructions a warp at ~2 a cycle an SM), against
// list_near's 2.5 - 9.4; visiting each thread's non-zero nibbles instead (ed8cf90, run 215) was slower on the rows with
// ~12 % near (9.7 us: a warp's trips are its lanes' most near elements) and was reverted. Since: the tests nibble-wise
// (one carry chain of 3-bit sums, ~half the operations of the byte lanes of both halves), once, the marks kept in the
// word's place for the write pass, which visits the listed elements alone.
// Where the whole list is over kClusterCand (cand_n says so: no draw over it) and the bin's entries fit, they are
// written all the same and their count returned, so that the gather (of those alone) and the rounds on it go on: where
// bin_first returns the count over kClusterCand, the gather fails and the rounds go on over the slices (on the bench's
// B = 64 top-p rows with ~5 % of their elements near or more). Returns the crossing bin's count, or the list's where
// neither fits. Every thread calls it.
template <int NT>
__device__ uint32_t list_nib(uint64_t* nib, int n, uint32_t bc, ClusterShared<NT>& sh) {
  constexpr uint64_t k1 = 0x1111111111111111ull, k7 = 0x7777777777777777ull, k8 = 0x8888888888888888ull;
  const int tid = threadIdx.x;
  const int nq = (n + 3) >> 2;
  const int nw = tid < nq ? ((nq - 1 - tid) / NT + 4) >> 2 : 0;  // this thread's words: its quads in fours
  const uint32_t cmax = bc + 1u;                                // codes 1 .. cmax listed, cmax the crossing bin's
  const uint64_t tq = uint64_t(15u - cmax) * k1, cq = uint64_t(cmax) * k1;
  // bit 4 k where nibble k of x is not 0
  auto nonzero = [&](uint64_t x) { return (x | x >> 1 | x >> 2 | x >> 3) & k1; };
  // each word's marks, nibble-wise (no carry leaves a nibble): bit 4 k where its code c is listed (c != 0 and
  // c + 15 - cmax < 16, the carry out of the nibble's sum taken from its low 3 bits' sum and the top bits), bit 4 k + 1
  // where c = cmax; kept in the word's place for the write pass (the codes are dead after this)
  uint32_t cb = 0, cl = 0;
  for (int w = 0; w < nw; ++w) {
    const uint64_t v = nib[w * NT + tid];
    const uint64_t lo = (v & k7) + (tq & k7);
    const uint64_t gt = ((v & tq) | ((v | tq) & lo)) & k8;  // the nibble's carry out: c > cmax
    const uint64_t listed = nonzero(v) & ~(gt >> 3), in_bin = ~nonzero(v ^ cq) & k1;
    cl += uint32_t(__popcll(listed));
    cb += uint32_t(__popcll(in_bin));
    nib[w * NT + tid] = listed | in_bin << 1;
  }
  const uint64_t off = block_excl_scan<NT>(uint64_t(cb) | uint64_t(cl - cb) << 32, sh);  // its barriers
  const uint64_t tot = sh.red[NT / 32 - 1];  // block_excl_scan's inclusive scan of the warps: the totals
  const uint32_t nbin = uint32_t(tot), total = nbin + uint32_t(tot >> 32);
  const bool fits = total <= uint32_t(kClusterCand);  // the whole list, else the bin's entries alone
  if (nbin <= uint32_t(kClusterCand)) {
    // the others' place, past the list where it is over: a test of aa below (testing `fits` there cost 18 bytes more of
    // spill stores on cluster2_tp3g, ptxas 13.0)
    uint32_t ab = uint32_t(off), aa = fits ? nbin + uint32_t(off >> 32) : uint32_t(kClusterCand);
    for (int w = 0; w < nw; ++w) {
      const uint64_t mk = nib[w * NT + tid];
      for (uint64_t l = mk & k1; l; l &= l - 1) {
        const int p = __ffsll((long long)l) - 1;  // 4 k: nibble k of the word
        const uint32_t e = near_element<NT, true>(tid, uint32_t(16 * w + (p >> 2)));
        if ((mk >> (p + 1)) & 1u)
          sh.cand[ab++] = bits_f32(e);
        else if (aa < uint32_t(kClusterCand))  // never where the list is over (aa starts at kClusterCand)
          sh.cand[aa++] = bits_f32(e);
      }
    }
  }
  if (tid == 0) sh.cand_n = total;
  __syncthreads();
  return nbin <= uint32_t(kClusterCand) ? nbin : total;
}

// Top-p's first round, wide, on a row without top-k: each CTA's masses per wide bin of its slice
// (a weight's low and high 16 bits into two words, one copy: < 65536 elements a slice), a cluster
// barrier; CTA r adds the C CTAs' bins of its portion [r P, (r + 1) P) (P = ceil(2048 / C)) into
// cnt / mass (6 KB of 64-bit words, free here: no round has used them) and publishes the portion's
// mass; a barrier; every CTA reads the C portion masses (S is their sum: the mass of every key, as
// the first round's), finds the portion and, reading that portion's P bins from its CTA, the bin
// where the mass from the top reaches p * S: the same integers, the same crossing bin and mass
// above it (acc) as a round over bytes would reach over the same keys. Its elements only (those
// above it are all kept and weigh acc) are listed and gathered; the rounds on bits 13 - 20, 5 - 12
// and 0 - 4 run on the list (or distributed where it does not fit). Returns whether no bin reaches
// (prefix and mask stay 0: every key kept, as the rounds' own "no bin reaches").
// Since session 37 this full round (wide_full_pass) runs only where the bins near the max do not reach p * S
// (wide_near_pass: one pass, one cluster barrier, the same crossing bin, acc, thr and S where they do).
// TP (the tp forms, on the tk form): the high 16 bits of a weight are added only where they are not 0 (on the
// bench's rows almost every element weighs below 2^16: one shared RED an element instead of two; the same
// integers), and the list holds the slice indices of every element at or above the crossing bin (the bin
// and everything above it: build_candidates_staged's 16-byte loads), so that tk_draw can draw over
// it (the rounds on the gathered list still count only the bin's elements: they match the prefix).
// TP2 (the tp2 forms, on the tp form): no branch an element: both words' atomics are unconditional, and an element
// of weight 0 (or without high bits) adds 0 to word `lane` instead of its bin (adding 0 changes no word; a lane's
// own word, so no two lanes of a warp meet at one address for nothing). TP's conditionals are a branch and a
// convergence region (BSSY / BSYNC) each in the SASS, and a predicated red.shared is compiled to the same branch
// by ptxas 13.0. The same integers: the high word's atomic, skipped by TP where no lane's weight reaches 2^16, is
// executed by a warp anyway where one lane's does (~5 % of the bench's weights: most of a warp's 32).
// GSL (the global-slice forms): zs is the slice in global memory, the gather reads the other slices there (gch apart).
// NIB (the global-slice forms with MLOPS_SAMPLE_GSL_NIBBLES, U = 4 and LEAN): nib holds the near codes (gsl_dyn_bytes'
// words), and where the near bins reach at a crossing bin below kNibBins list_nib lists from them.
template <int C, int NT, bool TP = false, bool TP2 = false, bool GSL = false, bool PUSH = false>
__device__ bool wide_top_p(const mlops_sample_config& cfg, float m, Temperature T, const float* zs, int64_t v0,
                           int64_t v1, ClusterShared<NT>& sh, float* all, bool& use_cand, int& all_n, uint32_t& prefix,
                           uint32_t& mask, uint64_t& acc, double& thr, int64_t gch = 0, uint64_t* nib = nullptr,
                           uint64_t* near_out = nullptr, bool* near_ok = nullptr) {
  const int n = int(v1 - v0);
  constexpr int W = GSL ? 2 : 1;  // the near mask's words a thread (MLOPS_SAMPLE_NEAR_MASK)
  // the near pass's float4 loads a trip (0: strided elements); the staged forms' by MLOPS_SAMPLE_WIDE_QUADS
  constexpr int U = GSL ? MLOPS_SAMPLE_GSL_QUADS : MLOPS_SAMPLE_WIDE_QUADS;
  constexpr bool NIB = GSL && TP && MLOPS_SAMPLE_GSL_NIBBLES && U == 4 && MLOPS_SAMPLE_GSL_LEAN && MLOPS_SAMPLE_NEAR_MASK;
  uint64_t near, near2 = 0;
  int shift = kWideShift;  // the crossing bin's: the near pass's bins (MLOPS_SAMPLE_NEAR_FINE) or the full round's
  int bin = wide_near_pass<C, NT, W, U, NIB, PUSH>(cfg, m, T, zs, n, sh, acc, thr, near, near2, nib, &shift);
  const bool by_mask = MLOPS_SAMPLE_NEAR_MASK && bin >= 0 && n <= 64 * W * NT;
  // MLOPS_SAMPLE_PUSH_X bit 8: the gather pushed after a pushed near exchange that found the crossing bin (CTA-uniform)
  const bool push_list = PUSH && (MLOPS_SAMPLE_PUSH_X & 8) != 0 && !TP && !GSL && bin >= 0 && !sh.r_stats;
  const uint32_t bc = uint32_t(sh.b_warp);  // the crossing near bin (where bin >= 0), before the full round's writes
  const bool by_nib = NIB && by_mask && bc < kNibBins;
  // MLOPS_SAMPLE_WIDE_MASK_DRAW (the wide forms): the mask out, and whether it holds every element of the crossing bin
  // and above (the near pass's crossing: every CTA alike), for mask_draw
  if (near_out) {
    *near_out = near;
    *near_ok = by_mask;
  }
  if (bin < 0) {
    cluster_sync_smem();  // every CTA's reads of this one's near bins are behind it (every CTA comes here alike)
    bin = wide_full_pass<C, NT, TP, TP2, GSL>(cfg, m, T, zs, n, sh, acc, thr);
    shift = kWideShift;
    if (bin < 0) return true;
  }
  MLOPS_SAMPLE_MARK(13);
  prefix = uint32_t(bin) << shift;
  mask = ~0u << shift;
  uint32_t head = 0xffffffffu;  // the whole list
  if (by_nib) {
    head = list_nib<NT>(nib, n, bc, sh);
    use_cand = sh.cand_n <= uint32_t(kClusterCand);  // list_nib's last barrier is after its write
  } else {
    if (by_mask && !NIB) {  // NIB keeps no mask: a crossing past the codes lists from the slice below
      constexpr int K = GSL ? MLOPS_SAMPLE_GSL_LIST_LOADS : 1;  // list_near's loads a lane in flight
      if (MLOPS_SAMPLE_MASK_DRAW_PREZERO && near_out) {  // mask_draw's chunk words; list_near's first barrier orders it
        static_assert(!MLOPS_SAMPLE_MASK_DRAW_PREZERO || 2 * NT <= 256 * kRep, "mask_draw's words above NT");
        sh.hlo[kMaskDrawWords<NT> + threadIdx.x] = 0;
        sh.hhi[kMaskDrawWords<NT> + threadIdx.x] = 0;
      }
      const uint64_t kept = list_near<NT, TP, W, (U > 0), K>(zs, near, near2, prefix, TP ? 0xffffffffu : prefix | ~mask, sh);
      if (MLOPS_SAMPLE_MASK_DRAW_KEPT && near_out) *near_out = kept;  // mask_draw's bits: the crossing bin and above
    } else if constexpr (TP) {
      build_candidates_staged<NT, true>(zs, n, prefix, sh);
    } else {
      build_candidates_staged<NT, false>(zs, n, prefix, sh, prefix | ~mask);
    }
    use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
    if constexpr (TP && MLOPS_SAMPLE_BIN_FIRST) head = bin_first<NT>(zs, prefix | ~mask, sh);
  }
  MLOPS_SAMPLE_MARK(14);
  if constexpr (PUSH && !TP && !GSL) {
    if (push_list) {  // no other CTA reads this one's red (the near bins came pushed)
      all_n = push_gather<C, NT>(sh, all);
      return false;
    }
  }
  // its barrier: every CTA's last read of this one's red is behind it
  all_n = gather_candidates<C, NT, false, TP, true, GSL>(sh, all, zs, head, gch);
  return false;
}
#endif

}  // namespace
}  // namespace mlops::vocab
