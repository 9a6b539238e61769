// The sampler's cluster kernel: the draw. The kept sums, the cluster's totals and the one CTA that holds
// floor(R S / 2^64) (draw_locate), then the walk in index order over the staged slice (lean_draw) or over a
// CTA's candidate list (tk_draw).
#pragma once
#include "sample_cluster_list_rounds.cuh"

namespace mlops::vocab {
namespace {

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // sample_cluster_shared.cuh: sm_90 device code, or the host runner
// The drawn token written by the one thread that found it: its weight w of the kept total S gives the log-probability.
__device__ __forceinline__ void put_token(const SampleParams& p, int64_t row, int64_t token, uint32_t w, uint64_t S) {
  p.tokens[row] = int32_t(token);
  if (p.flags) p.flags[row] = 0;
  if (p.logprobs) p.logprobs[row] = float(log(double(w) / double(S)));
}

// The walk by a warp (MLOPS_SAMPLE_WARP_WALK): every thread of the CTA that holds the target t calls it with its own
// chunk [c0, c1), its kept weight s and the CTA's kept weight below it (ex); the warp of the one thread whose chunk holds
// t takes that chunk 32 positions a step, lane l position c0 + 32 k + l weighed by weight(i) (0 where not kept), an
// inclusive scan from the running sum, and the first lane whose running sum exceeds t writes the token (its weight is
// > 0: the running sum before it is at most t): the serial walk's element and weight.
template <class Weight>
__device__ __forceinline__ void warp_walk(const SampleParams& p, int64_t row, int64_t v0, int c0, int c1, uint64_t s,
                                          uint64_t ex, uint64_t t, uint64_t S, Weight weight) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned holder = __ballot_sync(kFull, s && ex <= t && t < ex + s);
  if (!holder) return;  // every warp but one (one chunk of the CTA holds t)
  const int src = __ffs(int(holder)) - 1;
  const int e = __shfl_sync(kFull, c1, src);
  uint64_t run = __shfl_sync(kFull, ex, src);
  for (int i0 = __shfl_sync(kFull, c0, src); i0 < e; i0 += 32) {
    const int i = i0 + int(lane);
    const uint32_t w = i < e ? weight(i) : 0u;
    const uint64_t incl = run + warp_incl_scan(uint64_t(w));
    const unsigned hit = __ballot_sync(kFull, incl > t);
    if (hit) {
      if (int(lane) == __ffs(int(hit)) - 1) put_token(p, row, v0 + int64_t(i), w, S);
      return;
    }
    run = __shfl_sync(kFull, incl, 31);
  }
}

// The kept weight of a compacted list's elements (index << 32 | weight, nk of them) at indices below ie: the walk in
// index order of the list draws (tk_draw's over a CTA's list, list_draw's over the gathered one).
__device__ __forceinline__ uint64_t kept_below(const uint64_t* kl, int nk, uint32_t ie) {
  uint64_t below = 0;
  for (int f = 0; f < nk; ++f) {
    const uint64_t g = kl[f];
    below += uint32_t(g >> 32) < ie ? uint64_t(uint32_t(g)) : uint64_t(0);
  }
  return below;
}

// The draws' weights of the staged positions i .. i + 3 of a thread's chunk [.., c1) (0 past c1 or below tau):
// lean_weights_sparse4's where the row keeps few elements, else lean_weights4's. Called by the whole warp.
__device__ __forceinline__ void draw_weights4(const LeanRow& lr, const float* zs, int i, int c1, uint32_t tau,
                                              bool sparse, uint32_t (&w)[4]) {
  float x[4];
  bool on[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    x[j] = i + j < c1 ? zs[i + j] : 0.0f;
    on[j] = i + j < c1 && key_of(x[j]) >= tau;
  }
  if (sparse)
    lean_weights_sparse4(lr, x, on, w);
  else
    lean_weights4(lr, x, on, w);
}

// MLOPS_SAMPLE_EARLY_DRAW (session 44; on by default since GPU runs 218 / 219, an H100): the row's 64 random bits
// (draw64: the seed's load and Philox's 10 rounds) computed by one thread of the last warp in the max phase, where it
// waits for warp 0's remote loads anyway (the seed's line prefetched into L2 at the kernel's start), and kept in shared
// memory (r_draw); the draws read it there instead of loading the seed and running Philox after their last cluster
// barrier, on every row's critical path (after the bench's L2 flush the seed is a DRAM read). The same bits: the same
// token. Run 218's probe: every B = 1 mode's kernel 0.1 - 0.35 us shorter, the B = 64 rows' spans 0.5 - 1.4 us; run
// 219's five paired bench rounds: B = 64 temperature -1.0, top-k -1.4, B = 1 temperature -0.4, the rest within their
// spread. -D...=0: the seed loaded after the last cluster barrier, as before.
#ifndef MLOPS_SAMPLE_EARLY_DRAW
#define MLOPS_SAMPLE_EARLY_DRAW 1
#endif
// The max phase's store of the bits, out of line (MLOPS_SAMPLE_OUT_OF_LINE): inlined there, ptxas 13.0 grew the
// global-slice kernels' stack (40 -> 56 bytes at 64 registers a thread); a call keeps Philox's registers to itself.
template <int NT>
__device__ MLOPS_SAMPLE_OUT_OF_LINE void store_row_draw(const uint64_t* seeds, int64_t row, int64_t step,
                                                        ClusterShared<NT>& sh) {  // seeds: not the kernel's parameter block
  sh.r_draw = draw64(seeds[row], step);
}
template <int NT>
__device__ __forceinline__ uint64_t row_draw(const SampleParams& p, int64_t row, int64_t step,
                                             const ClusterShared<NT>& sh) {
  return MLOPS_SAMPLE_EARLY_DRAW ? sh.r_draw : draw64(p.seeds[row], step);
}

// draw_locate's steps in warp 0: the scan of the warps' kept sums (lane w < NW: the kept sum of warps 0 .. w, also into
// sh.red[w]), and, from lane r's CTA r total k, the cluster's total, the kept weight of the CTAs below `rank` and this
// CTA's own into b_total / b_acc / b_mine.
template <int NW, int NT>
__device__ __forceinline__ uint64_t warp_sums_scan(ClusterShared<NT>& sh) {
  const unsigned lane = threadIdx.x & 31u;
  const uint64_t x = warp_incl_scan(lane < unsigned(NW) ? sh.wsum[lane] : uint64_t(0));
  if (lane < unsigned(NW)) sh.red[lane] = x;
  return x;
}
template <int C, int NT>
__device__ __forceinline__ void locate_cta(uint64_t k, unsigned rank, ClusterShared<NT>& sh) {
  const uint64_t ki = warp_incl_scan(k);
  const uint64_t total = __shfl_sync(kFull, ki, C - 1);
  const uint64_t before = __shfl_sync(kFull, ki - k, int(rank));
  const uint64_t mine = __shfl_sync(kFull, k, int(rank));
  if ((threadIdx.x & 31u) == 0) {
    sh.b_total = total;
    sh.b_acc = before;
    sh.b_mine = mine;
  }
}

// The draw's cluster step (lean_draw and tk_draw): a block scan of the threads' kept sums s, the CTA's total
// published, one cluster barrier, warp 0 reads the C totals (a lane a CTA) and finds the CTA whose range holds
// floor(R S / 2^64). False in every other CTA (nothing left to do there); in that CTA, S = the row's kept total,
// ex = the kept weight of the CTA's lower threads and t = the target less the lower CTAs' weight. The last cluster barrier is only arrived at.
template <int C, int NT>
__device__ __forceinline__ bool draw_locate(const SampleParams& p, int64_t row, int64_t step, uint64_t s,
                                            ClusterShared<NT>& sh, uint64_t& S, uint64_t& ex, uint64_t& t) {
  constexpr int NW = NT / 32;
  const unsigned lane = threadIdx.x & 31u, rank = cluster_rank();
  const int warp = int(threadIdx.x) >> 5;
  const uint64_t incl = warp_incl_scan(s);
  if (lane == 31) sh.wsum[warp] = incl;
  __syncthreads();
#if MLOPS_SAMPLE_PUSH_X & 1
  // pushed (the macro's comment): the totals into every CTA's x_kept[rank], this CTA's mbarrier (pub_kept, armed in the
  // kernel after the penalties, for rows the max's exchange measured: r_stats 0) waited for by warp 0 alone
  static_assert(C <= 16, "x_kept's 16 places");
  if (!sh.r_stats) {  // CTA-uniform: written before the staging's barrier
    if (warp == 0) {
      const uint64_t tot = __shfl_sync(kFull, warp_sums_scan<NW>(sh), NW - 1);
      if (lane < unsigned(C)) push_store_u64(&sh.x_kept[rank], lane, tot, &sh.pub_kept);
      if (lane == 0) push_expect(&sh.pub_kept, 8u * unsigned(C));
      push_wait(&sh.pub_kept);
      locate_cta<C>(lane < unsigned(C) ? sh.x_kept[lane] : uint64_t(0), rank, sh);
    }
    __syncthreads();
    cluster_arrive_smem();  // the exit's barrier (no other CTA's shared memory is read here)
    ex = incl - s + (warp ? sh.red[warp - 1] : 0);
  } else
#endif
  {
    if (warp == 0) {
      const uint64_t x = warp_sums_scan<NW>(sh);
      if (lane == unsigned(NW - 1)) sh.pub_kept = x;
    }
    cluster_sync_smem();  // every CTA's total published (and sh.red seen by this CTA's threads)
    ex = incl - s + (warp ? sh.red[warp - 1] : 0);
    if (warp == 0) locate_cta<C>(lane < unsigned(C) ? remote_load(&sh.pub_kept, lane) : uint64_t(0), rank, sh);
    __syncthreads();
    cluster_arrive_smem();  // the last read of another CTA's shared memory is behind every thread
  }
  S = sh.b_total;
  const uint64_t before = sh.b_acc, mine = sh.b_mine;
  const uint64_t target = scale_draw(row_draw(p, row, step, sh), S);
  if (!(mine && before <= target && target < before + mine)) return false;  // S > 0: the max is kept
  t = target - before;
  return true;
}

// The lean forms' draw. Thread t takes the contiguous chunk [t q, (t + 1) q) of the staged slice (q
// odd: a warp's 32 reads of one step fall in 32 banks), writes each element's kept weight over it
// (the slice is not read again) and sums them; a block scan of the chunk sums, the CTA's total
// published, one cluster barrier, warp 0 reads the C totals (a lane a CTA); the one thread whose
// chunk holds floor(R S / 2^64) walks its own stored weights. The same integers in the same index
// order as the definition: the same token. No exp is evaluated twice, no warp walks a serial piece
// of exps, and the last cluster barrier is only arrived at here (waited for at exit).
template <int C, int NT>
__device__ __forceinline__ void lean_draw(const SampleParams& p, int64_t row, int64_t step, int64_t v0, int64_t v1,
                                          float* zs, const LeanRow& lr, uint32_t tau, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint32_t* wz = reinterpret_cast<uint32_t*>(zs);
  const int n = int(v1 - v0);  // a staged slice: < 2^16 elements
  const int q = ((n + NT - 1) / NT) | 1;
  const int c0 = tid * q < n ? tid * q : n;
  const int c1 = c0 + q < n ? c0 + q : n;
  // A row filtered by top-k / top-p (tau > 0) or min-p keeps few elements (a few hundred of 151936 on the
  // bench's rows), yet a warp step of 4 x 32 elements meets a kept one in most steps, and lean_weights4 then
  // evaluates all 4 exps of every lane (run 51's ncu: the draw was 20 % of top-p's instructions at B = 64).
  // There the exps go one position j at a time, only for the positions where a lane of the warp keeps its
  // element; the same integers (lean_weights4's, element by element).
  const bool sparse = tau > 0u || lr.min_w > 0u;
  uint64_t s = 0;
  for (int k = 0; k < q; k += 4) {  // 4 at a time: the 4 exps interleave; warp-uniform trip count
    const int i = c0 + k;
    uint32_t w[4];
    draw_weights4(lr, zs, i, c1, tau, sparse, w);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (i + j < c1) {
        wz[i + j] = w[j];
        s += w[j];
      }
  }
  uint64_t S, ex, t;  // the kept total; this thread's kept weight below it in the CTA; the target in the CTA
  if (!draw_locate<C, NT>(p, row, step, s, sh, S, ex, t)) return;
  if constexpr (MLOPS_SAMPLE_WARP_WALK != 0) {
    warp_walk(p, row, v0, c0, c1, s, ex, t, S, [&](int i) { return wz[i]; });
    return;
  }
  if (!(s && ex <= t && t < ex + s)) return;
  uint64_t run = ex;
  int i = c0;
  uint32_t w = 0;
  for (; i < c1; ++i) {  // the first element whose running sum exceeds t (its weight is > 0)
    w = wz[i];
    run += w;
    if (run > t) break;
  }
  put_token(p, row, v0 + int64_t(i), w, S);
}

// The list draws' chunk sums (tk_draw<TP>, chunk_draw): each kept weight of the CTA's candidate list (slice indices; the
// caller knows it holds every kept element) added into the sums of the chunk of `chunk` consecutive slice elements that
// holds it, the low 16 bits into hlo[c] and the rest into hhi[c] (neither word wraps: a chunk holds fewer than 2^16
// elements). The words zeroed before, a barrier after: the caller's.
// W0: the first chunk's words (mask_draw's kMaskDrawWords).
template <int NT, int W0 = 0>
__device__ __forceinline__ void add_chunk_weight(const float* zs, const LeanRow& lr, uint32_t tau, uint32_t chunk,
                                                 uint32_t li, ClusterShared<NT>& sh) {
  const float x = zs[li];
  const uint32_t w = lean_weight1(lr, x, key_of(x) >= tau);
  if (w) {
    const uint32_t c = W0 + li / chunk;
    atomicAdd(&sh.hlo[c], w & 0xffffu);
    if (w >> 16) atomicAdd(&sh.hhi[c], w >> 16);
  }
}
template <int NT>
__device__ __forceinline__ void list_chunk_sums(const float* zs, const LeanRow& lr, uint32_t tau, uint32_t chunk,
                                                ClusterShared<NT>& sh) {
  const uint32_t* ci = reinterpret_cast<const uint32_t*>(sh.cand);
  const int nl = int(sh.cand_n);  // <= kClusterCand
  for (int i = int(threadIdx.x); i < nl; i += NT) add_chunk_weight<NT>(zs, lr, tau, chunk, ci[i], sh);
}

// The walk of tk_draw and mask_draw in the one thread whose chunk [c0, c1) of the slice holds the target t (s: the
// chunk's kept weight, ex: the CTA's kept weight below it): the first element whose running sum exceeds t is the token
// (its weight is > 0). SKIP: the elements below tau weigh 0 without an exp.
template <bool SKIP>
__device__ __forceinline__ void walk_chunk(const SampleParams& p, int64_t row, int64_t v0, const float* zs,
                                           const LeanRow& lr, uint32_t tau, int c0, int c1, uint64_t s, uint64_t ex,
                                           uint64_t t, uint64_t S) {
  if constexpr (MLOPS_SAMPLE_WARP_WALK != 0) {  // every thread of the CTA calls it (its callers' draw_locate is true)
    warp_walk(p, row, v0, c0, c1, s, ex, t, S, [&](int i) {
      const float x = zs[i];
      return lean_weight1(lr, x, key_of(x) >= tau);  // SKIP's elements below tau weigh 0 here too
    });
    return;
  }
  if (!(s && ex <= t && t < ex + s)) return;
  uint64_t run = ex;
  int i = c0;
  uint32_t w = 0;
  for (; i < c1; ++i) {
    const float x = zs[i];
    if (SKIP && key_of(x) < tau) continue;
    w = lean_weight1(lr, x, key_of(x) >= tau);
    run += w;
    if (run > t) break;
  }
  put_token(p, row, v0 + int64_t(i), w, S);
}

// The tk forms' draw. A CTA whose candidate list holds every element of its slice at or above tau (`list`,
// the CTA's own) weighs only the list (slice indices into zs), compacts the kept ones as (index, weight)
// and, if it holds the target, finds the element whose kept weights at lower indices (of its slice) sum
// to at most the target and with its own weight to more: the first index whose running sum exceeds it,
// as the definition's walk. Other CTAs (no list, or more than kTkKept kept) sum their chunks of the slice
// as lean_draw does but without storing the weights over it (another CTA may still read the slice for
// its gather); the thread that walks computes its chunk's weights again (the same integers). One
// cluster barrier for the totals, as lean_draw.
// TP (the tp forms): a list CTA adds each kept weight of its list into the sum of the lean draw's chunk
// [t q, (t + 1) q) that holds its index (the weight's low and high 16 bits into two 32-bit words a chunk: a
// chunk holds fewer than 2^16 elements, neither word wraps), so thread t's sum is its chunk's kept weight
// over the slice; the block scan then locates the target as lean_draw's does, and the one thread whose
// chunk holds it walks its chunk of the slice, weighing only the elements at or above tau (the others weigh
// 0). O(list) instead of the kept elements' O(kept^2), and no kTkKept limit (top-p 0.9 keeps ~1300 elements
// of the bench's rows: ~170 a CTA at C = 8). The same integers in the same index order: the same token.
template <int C, int NT, bool TP = false>
__device__ __forceinline__ void tk_draw(const SampleParams& p, int64_t row, int64_t step, int64_t v0, int64_t v1,
                                        const float* zs, const LeanRow& lr, uint32_t tau, bool list,
                                        ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint64_t* kl = reinterpret_cast<uint64_t*>(sh.hlo);  // hlo, hhi: 2048 64-bit words
  const uint32_t* ci = reinterpret_cast<const uint32_t*>(sh.cand);
  uint64_t s = 0;
  if (TP && list) {
    static_assert(NT <= 256 * kRep, "a chunk's sum in hlo / hhi");
    const int n = int(v1 - v0);
    const int q = ((n + NT - 1) / NT) | 1;  // lean_draw's chunk
    sh.hlo[tid] = 0;
    sh.hhi[tid] = 0;
    __syncthreads();
    list_chunk_sums<NT>(zs, lr, tau, uint32_t(q), sh);
    __syncthreads();
    s = uint64_t(sh.hlo[tid]) + (uint64_t(sh.hhi[tid]) << 16);
  } else if (list) {
    if (tid == 0) sh.b_krem = 0;
    __syncthreads();
    const int n = int(sh.cand_n);  // <= kClusterCand
    for (int i = tid; i < n; i += NT) {
      const uint32_t li = ci[i];
      const float x = zs[li];
      const uint32_t w = lean_weight1(lr, x, key_of(x) >= tau);
      if (w) {
        const uint32_t at = atomicAdd(&sh.b_krem, 1u);
        kl[at] = (uint64_t(li) << 32) | w;
        s += w;
      }
    }
    __syncthreads();
    if (sh.b_krem > uint32_t(kTkKept)) {  // CTA-uniform
      list = false;
      s = 0;
    }
  }
  const int n = int(v1 - v0);  // a staged slice: < 2^16 elements
  const int q = ((n + NT - 1) / NT) | 1;
  const int c0 = tid * q < n ? tid * q : n;
  const int c1 = c0 + q < n ? c0 + q : n;
  const bool sparse = tau > 0u || lr.min_w > 0u;
  if (!list) {
    for (int k = 0; k < q; k += 4) {  // lean_draw's sums (warp-uniform trip count), nothing stored
      const int i = c0 + k;
      uint32_t w[4];
      draw_weights4(lr, zs, i, c1, tau, sparse, w);
#pragma unroll
      for (int j = 0; j < 4; ++j) s += w[j];
    }
  }
  uint64_t S, ex, t;  // the kept total; this thread's kept weight below it in the CTA; the target in the CTA
  if (!draw_locate<C, NT>(p, row, step, s, sh, S, ex, t)) return;
  if (!TP && list) {
    const int nk = int(sh.b_krem);
    for (int j = tid; j < nk; j += NT) {
      const uint64_t e = kl[j];
      const uint32_t ie = uint32_t(e >> 32), we = uint32_t(e);
      const uint64_t below = kept_below(kl, nk, ie);  // the kept weight of this CTA's elements at lower indices
      if (below <= t && t < below + we) put_token(p, row, v0 + int64_t(ie), we, S);
    }
    return;
  }
  walk_chunk<TP>(p, row, v0, zs, lr, tau, c0, c1, s, ex, t, S);
}

// The wide forms' top-p draw by the near pass's mask (MLOPS_SAMPLE_WIDE_MASK_DRAW, session 46; on by default since GPU
// runs 224 - 226). lean_draw weighs every position of the slice (the sparse weights: a warp's step of 4 x 32 positions
// evaluates an exp wherever one lane keeps its element) and stores the weights over it; run 223's B = 1 cluster16_wide
// top-p took 2.9 us from its threshold to the token where cluster16_tp3's list draw (tk_draw<TP>) took 1.5 (run 224
// with this draw: 2.1). Where the crossing bin came from the near pass (`near`, wide_top_p's by_mask), every element
// at or above tau is a near element of its thread (bit e: element tid + e NT, or by quads: near_element), so the
// thread adds the kept weight of each of its near elements into the sums of lean_draw's chunks [t q, (t + 1) q)
// (tk_draw<TP>'s words), and the thread whose chunk holds the target walks it weighing only the elements at or above
// tau (walk_chunk): the same integers in the same index order, the same token.
// Q: the mask of the quad-loaded pass (MLOPS_SAMPLE_WIDE_QUADS > 0), bit e element near_element<NT, true>(tid, e).
// The chunk words: hlo / hhi [W0, W0 + NT) (kMaskDrawWords); zeroed: by wide_top_p, and nothing wrote them since
// (MLOPS_SAMPLE_MASK_DRAW_PREZERO), else zeroed here.
template <int C, int NT, bool Q = (MLOPS_SAMPLE_WIDE_QUADS > 0)>
__device__ __forceinline__ void mask_draw(const SampleParams& p, int64_t row, int64_t step, int64_t v0, int64_t v1,
                                          const float* zs, const LeanRow& lr, uint32_t tau, uint64_t near,
                                          ClusterShared<NT>& sh, bool zeroed = false) {
  constexpr int W0 = kMaskDrawWords<NT>;
  static_assert(W0 + NT <= 256 * kRep, "a chunk's sum in hlo / hhi");
  const int tid = threadIdx.x;
  const int n = int(v1 - v0);
  const int q = ((n + NT - 1) / NT) | 1;  // lean_draw's chunk
  const int c0 = tid * q < n ? tid * q : n;
  const int c1 = c0 + q < n ? c0 + q : n;
  MLOPS_SAMPLE_DRAW_MARK(5);  // entered
  if (!zeroed) {  // CTA-uniform
    sh.hlo[W0 + tid] = 0;
    sh.hhi[W0 + tid] = 0;
    __syncthreads();
  }
  MLOPS_SAMPLE_DRAW_MARK(4);  // zeroed
  for (uint64_t b = near; b; b &= b - 1)  // the element of each set bit e (wide_near_pass's W = 1)
    add_chunk_weight<NT, W0>(zs, lr, tau, uint32_t(q), near_element<NT, Q>(tid, uint32_t(__ffsll((long long)b) - 1)),
                             sh);
  MLOPS_SAMPLE_DRAW_MARK(15);  // thread 0's weights added
  __syncthreads();
  MLOPS_SAMPLE_NEAR_MARK(5);  // the chunk sums
  MLOPS_SAMPLE_TP3_MARK(6);
  MLOPS_SAMPLE_DRAW_MARK(6);
  const uint64_t s = uint64_t(sh.hlo[W0 + tid]) + (uint64_t(sh.hhi[W0 + tid]) << 16);
  uint64_t S, ex, t;  // the kept total; this thread's kept weight below it in the CTA; the target in the CTA
  if (!draw_locate<C, NT>(p, row, step, s, sh, S, ex, t)) return;
  MLOPS_SAMPLE_NEAR_MARK(6);  // located (the walking CTA's thread 0 only)
  walk_chunk<true>(p, row, v0, zs, lr, tau, c0, c1, s, ex, t, S);
}

// The list draws' place of position i of the gathered list in index order, as this CTA sees it (lo, hi: its part,
// g_off[rank] .. g_off[rank + 1]): 0 in a lower CTA's part, ~0 in a higher one's, 1 + its slice index in this CTA's
// (slices hold fewer than 2^30 elements). own_place: a place in this CTA's part, global index rank ch + place - 1.
template <int NT>
__device__ __forceinline__ uint32_t list_place(uint32_t i, uint32_t lo, uint32_t hi, const ClusterShared<NT>& sh) {
  return i < lo ? 0u : i >= hi ? 0xffffffffu : 1u + f32_bits(sh.cand[i - lo]);
}
__device__ __forceinline__ bool own_place(uint32_t o) { return o != 0u && o != 0xffffffffu; }

// The tk forms' draw from the gathered list (MLOPS_SAMPLE_LIST_DRAW), where a top-k row's gathered list `all` (n
// elements, the same in every CTA) holds every element at or above the bound it was built under, and that bound is at
// or below tau: every kept element is in it, once. tk_draw goes back to the CTAs' own lists and crosses the cluster
// once more (draw_locate: a cluster barrier, C remote loads, then the target CTA's walk). Here every CTA weighs the
// gathered list (the kept elements compacted as (position, weight), S their sum: the same list, so the same count and
// S in every CTA, and the same choice of path) and places each kept element in index order without reading another
// CTA: position i of `all` is entry i - g_off[r] of CTA r's list (slice index li, global index r ch + li), so an
// element of a lower CTA's part lies below every element of this CTA's part, one of a higher CTA's above, and within
// this CTA's part the order is its own list's slice indices. Each CTA walks its own part's kept elements (the kept
// weight below one: the lower CTAs' kept elements and its own at lower slice indices, O(kept^2) over at most kTkKept
// elements), and the one whose kept weight below sums to at most the target and with its own weight to more is the
// token, written by the CTA that holds it: the definition's walk in index order. No cluster barrier, no remote load.
// Session 44's form (CTA 0 alone read each kept element's slice index back from its CTA's list: C remote round trips
// on the path, and with MLOPS_SAMPLE_TK_PUSH no cluster barrier ordered those reads after the lists' writes) measured
// 0.1 us at B = 1 (run 216); this one (session 51) also compiles with the push. Returns false (every CTA alike,
// nothing written, nothing arrived at) where more than kTkKept elements weigh.
// Off by default again since GPU run 246 (an H100; on for run 245's build alone): against tk_draw it loses on a top-k
// row, bench B = 1 top-k 14.42 -> 14.18 us and B = 8 17.09 -> 16.57 with it off, the combination unchanged (its draw is
// list_draw_kept's, MLOPS_SAMPLE_TK_TOPP_DRAW, either way): weighing the ~50-element list and the O(kept^2) walk cost
// more than tk_draw's scan and remote totals. -DMLOPS_SAMPLE_LIST_DRAW=1 builds it (the runner checks it so).
#ifndef MLOPS_SAMPLE_LIST_DRAW
#define MLOPS_SAMPLE_LIST_DRAW 0
#endif
template <int NT>
__device__ __forceinline__ bool list_draw(const SampleParams& p, int64_t row, int64_t step, int64_t ch,
                                          const float* all, int n, const LeanRow& lr, uint32_t tau,
                                          ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint64_t* kl = reinterpret_cast<uint64_t*>(sh.hlo);  // hlo, hhi: 2048 64-bit words (n <= kGather = 2048)
  uint64_t* ko = kl + kTkKept;                         // the kept elements again, by (place in index order, weight)
  static_assert(kGather <= 256 * kRep && 2 * kTkKept <= 256 * kRep, "the kept elements' two lists in the hlo / hhi words");
  if (tid == 0) sh.b_krem = 0;
  __syncthreads();
  uint64_t s = 0;
  for (int i = tid; i < n; i += NT) {
    const float x = all[i];
    const uint32_t w = lean_weight1(lr, x, key_of(x) >= tau);
    if (w) {
      kl[atomicAdd(&sh.b_krem, 1u)] = (uint64_t(uint32_t(i)) << 32) | w;
      s += w;
    }
  }
  const uint64_t S = block_sum_u64<NT>(s, sh);  // syncs: kl and b_krem complete
  const int nk = int(sh.b_krem);
  __syncthreads();  // every read of b_krem before a caller's draw writes it
  if (nk > kTkKept) return false;
  cluster_arrive_smem();  // this CTA reads no other's shared memory from here on (the gather's reads are behind it)
  const unsigned rank = cluster_rank();
  const uint32_t lo = sh.g_off[rank], hi = sh.g_off[rank + 1];
  for (int j = tid; j < nk; j += NT) {  // each kept element by its place (list_place)
    const uint64_t e = kl[j];
    ko[j] = (uint64_t(list_place<NT>(uint32_t(e >> 32), lo, hi, sh)) << 32) | uint32_t(e);
  }
  __syncthreads();
  const uint64_t t = scale_draw(row_draw(p, row, step, sh), S);  // S > 0: the max is kept
  for (int j = tid; j < nk; j += NT) {
    const uint64_t e = ko[j];
    const uint32_t o = uint32_t(e >> 32), we = uint32_t(e);
    if (!own_place(o)) continue;  // another CTA's element: that CTA decides it
    const uint64_t below = kept_below(ko, nk, o);  // the kept weight at lower global indices
    if (below <= t && t < below + we) put_token(p, row, int64_t(rank) * ch + int64_t(o - 1u), we, S);
  }
  return true;
}

// MLOPS_SAMPLE_TK_TOPP_DRAW (session 51): the draw of a top-k + top-p row whose top-p tk_top_p_warp found (at most 64
// weighed elements of the gathered list, compacted as (key, weight) in kl with their list positions in kpos: nk of
// them), from those entries by warp 0, where list_draw weighs the whole list again (exps, a compaction, a block sum
// and two more barriers). The draw's kept elements are the entries at or above the final tau whose weight reaches
// min-p's (min_w: lean_weight1's test; its u_min bound only skips weights below min_w): top-p's weights are the draw's
// (the same lean weight, no min-p in them). Every element at or above the top-k bound is in the list, so S and the
// kept set are the row's. Each lane takes two entries, places them in index order as list_draw does (0 in a lower
// CTA's part, ~0 in a higher one's, 1 + the slice index in this CTA's), sums the kept weight placed below each by
// shuffles, and the lane whose entry holds the target writes the token. Every thread calls it; no barrier, no remote
// load; each thread arrives at the last cluster barrier (as list_draw).
template <int NT>
__device__ __forceinline__ void list_draw_kept(const SampleParams& p, int64_t row, int64_t step, int64_t ch, uint32_t tau,
                                               uint32_t min_w, ClusterShared<NT>& sh) {
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x & 31u, rank = cluster_rank();
    const uint64_t* kl = reinterpret_cast<const uint64_t*>(sh.hlo);
    const uint32_t* kpos = reinterpret_cast<const uint32_t*>(kl + kTkKept);
    const uint32_t n = sh.b_krem, lo = sh.g_off[rank], hi = sh.g_off[rank + 1];
    auto entry = [&](uint32_t j, uint32_t& o) {  // (place, kept weight) of entry j; weight 0 past n
      o = 0xffffffffu;
      if (j >= n) return uint32_t(0);
      const uint64_t e = kl[j];
      const uint32_t w = uint32_t(e), i = kpos[j];
      o = list_place<NT>(i, lo, hi, sh);
      return uint32_t(e >> 32) >= tau && w >= min_w ? w : 0u;
    };
    uint32_t o0, o1;
    const uint32_t w0 = entry(lane, o0), w1 = entry(lane + 32u, o1);
    const uint64_t S = warp_sum(uint64_t(w0) + uint64_t(w1));  // > 0: the max is kept
    const uint64_t q0 = (uint64_t(o0) << 32) | w0, q1 = (uint64_t(o1) << 32) | w1;
    uint64_t b0 = 0, b1 = 0;  // the kept weight placed below this lane's two entries
#pragma unroll 8
    for (int j = 0; j < 32; ++j) {
      const uint64_t r0 = __shfl_sync(kFull, q0, j), r1 = __shfl_sync(kFull, q1, j);
      const uint32_t p0 = uint32_t(r0 >> 32), p1 = uint32_t(r1 >> 32);
      b0 += (p0 < o0 ? uint64_t(uint32_t(r0)) : 0u) + (p1 < o0 ? uint64_t(uint32_t(r1)) : 0u);
      b1 += (p0 < o1 ? uint64_t(uint32_t(r0)) : 0u) + (p1 < o1 ? uint64_t(uint32_t(r1)) : 0u);
    }
    const uint64_t t = scale_draw(row_draw(p, row, step, sh), S);
    // another CTA's entry (place 0 or ~0) is decided there
    if (w0 && own_place(o0) && b0 <= t && t < b0 + w0)
      put_token(p, row, int64_t(rank) * ch + int64_t(o0 - 1u), w0, S);
    if (w1 && own_place(o1) && b1 <= t && t < b1 + w1)
      put_token(p, row, int64_t(rank) * ch + int64_t(o1 - 1u), w1, S);
  }
  cluster_arrive_smem();  // this CTA reads no other's shared memory from here on
}

// The global-slice forms' draw (GSL, session 38). Their slice stays in global memory, where tk_draw's walk (one
// thread over its contiguous chunk, an element at a time) would wait an L2 round trip an element and its chunk sums
// (a thread's contiguous chunk, unless a list holds the kept elements) would read 32 scattered lines a warp load.
// Here the kept sums go per chunk of kDrawChunk consecutive elements (at most 2048 of them: a slice of at most
// 131072 elements, which the host checks), as a low and a high word a chunk in hlo / hhi (a weight's low 16 bits and
// the rest: neither word wraps at 64 elements): from the CTA's candidate list where it holds every kept element
// (filtered rows, like tk_draw's), else by warps over the slice, 2 chunks a warp a trip (a lane's 4 elements one
// 16-byte load, their exps interleaved), a half-warp's sum a chunk. Thread t sums chunks t q .. t q + q - 1 (q =
// ceil(chunks / NT)), draw_locate finds the CTA and the thread, that thread the chunk, and warp 0 walks the chunk
// (2 elements a lane, one scan). The same integers in the same index order as the definition: the same token.
// MLOPS_SAMPLE_GSL_DRAW_LOADS (session 40): the unfiltered pass's 16-byte loads a lane a trip, D pairs of chunks a
// warp a trip; 1 is the pass before (run 202's probe: ~20 of a B = 64 temperature row's 30 us). GPU run 203 (an H100):
// D = 2 or 4 alone moves nothing (the pass is issue-bound), MLOPS_SAMPLE_GSL_LEAN (no bound or key test on whole trips
// of a row without top-k or min-p, lean_weights4<false>) takes the pass 21.2 -> 15.6 us and the bench's B = 64
// temperature 37.5 -> 31.3. D = 4 with LEAN by default since (the build GPU-tested whole); -D...=1 the pass before.
#ifndef MLOPS_SAMPLE_GSL_DRAW_LOADS
#define MLOPS_SAMPLE_GSL_DRAW_LOADS 4
#endif
static_assert(MLOPS_SAMPLE_GSL_DRAW_LOADS == 1 || MLOPS_SAMPLE_GSL_DRAW_LOADS == 2 || MLOPS_SAMPLE_GSL_DRAW_LOADS == 4,
              "1, 2 or 4 loads a lane a trip");
constexpr int kDrawChunk = 64;
template <int C, int NT>
__device__ __forceinline__ void chunk_draw(const SampleParams& p, int64_t row, int64_t step, int64_t v0, int64_t v1,
                                           const float* zs, const LeanRow& lr, uint32_t tau, bool list,
                                           ClusterShared<NT>& sh) {
  static_assert(kDrawChunk == 64, "a half-warp's 16 lanes x 4 elements a chunk; a lane's 2 in the walk");
  constexpr int NW = NT / 32;
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const int warp = tid >> 5;
  const int n = int(v1 - v0);
  const int nch = (n + kDrawChunk - 1) / kDrawChunk;  // <= 256 * kRep (the host's slice bound)
  for (int c = tid; c < nch; c += NT) {
    sh.hlo[c] = 0;
    sh.hhi[c] = 0;
  }
  __syncthreads();
  if (list) {
    list_chunk_sums<NT>(zs, lr, tau, uint32_t(kDrawChunk), sh);
  } else {
    const bool sparse = tau > 0u || lr.min_w > 0u;
    constexpr int D = MLOPS_SAMPLE_GSL_DRAW_LOADS;  // a lane's 16-byte loads a trip, all issued before any is weighed
    // the pair of chunks c0, c0 + 1 (lanes 0 - 15, 16 - 31): a lane's 4 weights summed over its half-warp, stored
    auto store_pair = [&](int c0, const uint32_t (&w)[4]) {
      uint64_t s = uint64_t(w[0]) + w[1] + w[2] + w[3];
#pragma unroll
      for (int off = 8; off >= 1; off >>= 1) s += __shfl_xor_sync(kFull, s, off);  // the half-warp's chunk
      const int c = c0 + int(lane >> 4);
      if ((lane & 15u) == 0 && c < nch) {
        sh.hlo[c] = uint32_t(s & 0xffffu);
        sh.hhi[c] = uint32_t(s >> 16);  // < 2^22: 64 weights below 2^31 each
      }
    };
    int cw = 2 * warp;
    if (MLOPS_SAMPLE_GSL_LEAN && !sparse) {
      // (MLOPS_SAMPLE_GSL_LEAN) no top-k bound or min-p (tau = 0: every key passes) and the trip's D pairs of chunks
      // wholly in the slice: no test an element, lean_weights4 without its NaN test (the same weights)
      constexpr bool kOn[4] = {true, true, true, true};
      for (; (cw + 2 * NW * (D - 1) + 2) * kDrawChunk <= n; cw += 2 * NW * D) {
        float4 v[D];
#pragma unroll
        for (int d = 0; d < D; ++d)
          v[d] = reinterpret_cast<const float4*>(zs)[((cw + 2 * NW * d) * kDrawChunk >> 2) + int(lane)];
#pragma unroll
        for (int d = 0; d < D; ++d) {
          const float x[4] = {v[d].x, v[d].y, v[d].z, v[d].w};
          uint32_t w[4];
          lean_weights4<false>(lr, x, kOn, w);
          store_pair(cw + 2 * NW * d, w);
        }
      }
    }
    for (; cw < nch; cw += 2 * NW * D) {  // warp-uniform trip count (lean_weights_sparse4)
      float4 v[D];
#pragma unroll
      for (int d = 0; d < D; ++d) {  // lanes 0 - 15: chunk c0, 16 - 31: chunk c0 + 1
        const int i = (cw + 2 * NW * d) * kDrawChunk + int(lane) * 4;
        v[d] = load_quad(zs, n, i >> 2);  // zs + i is 16-byte aligned: the host's slices start at multiples of 4
      }
#pragma unroll
      for (int d = 0; d < D; ++d) {
        const int c0 = cw + 2 * NW * d;
        if (D > 1 && c0 >= nch) break;  // warp-uniform
        const int i = c0 * kDrawChunk + int(lane) * 4;
        const float x[4] = {v[d].x, v[d].y, v[d].z, v[d].w};
        bool on[4];
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) on[j] = i + j < n && key_of(x[j]) >= tau;
        if (sparse)
          lean_weights_sparse4(lr, x, on, w);
        else
          lean_weights4(lr, x, on, w);
        store_pair(c0, w);
      }
    }
  }
  __syncthreads();
  const int q = (nch + NT - 1) / NT;
  const int cb = tid * q < nch ? tid * q : nch, ce = cb + q < nch ? cb + q : nch;
  auto chunk_sum = [&](int c) { return uint64_t(sh.hlo[c]) + (uint64_t(sh.hhi[c]) << 16); };
  uint64_t s = 0;
  for (int c = cb; c < ce; ++c) s += chunk_sum(c);
  uint64_t S, ex, t;  // the kept total; this thread's kept weight below it in the CTA; the target in the CTA
  if (!draw_locate<C, NT>(p, row, step, s, sh, S, ex, t)) return;  // CTA-uniform
  if (s && ex <= t && t < ex + s) {  // the one thread whose chunks hold the target: which chunk
    uint64_t run = ex;
    int c = cb;
    for (; c + 1 < ce; ++c) {
      const uint64_t k = chunk_sum(c);
      if (t < run + k) break;
      run += k;
    }
    sh.b_warp = c;
    sh.b_target = t - run;
  }
  __syncthreads();
  if (warp != 0) return;
  const int c = sh.b_warp;
  const uint64_t tt = sh.b_target;
  const int i = c * kDrawChunk + 2 * int(lane);
  const float x0 = i < n ? zs[i] : 0.0f, x1 = i + 1 < n ? zs[i + 1] : 0.0f;
  const uint32_t w0 = lean_weight1(lr, x0, i < n && key_of(x0) >= tau);
  const uint32_t w1 = lean_weight1(lr, x1, i + 1 < n && key_of(x1) >= tau);
  const uint64_t ls = uint64_t(w0) + w1;
  const uint64_t incl = warp_incl_scan(ls), lex = incl - ls;
  if (ls && lex <= tt && tt < incl) {  // the first element whose running sum exceeds tt (its weight is > 0)
    const bool first = tt < lex + w0;
    const uint32_t w = first ? w0 : w1;
    put_token(p, row, v0 + int64_t(i + (first ? 0 : 1)), w, S);
  }
}
#endif

}  // namespace
}  // namespace mlops::vocab
