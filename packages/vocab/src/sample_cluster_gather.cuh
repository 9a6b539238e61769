// The sampler's cluster kernel: the gather forms' copy of every CTA's candidate list into each CTA (after
// which the rounds run in each CTA alone), and the late forms' second attempt at it.
#pragma once
#include "sample_cluster_lean.cuh"

namespace mlops::vocab {
namespace {

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // sample_cluster_shared.cuh: sm_90 device code, or the host runner
// The gather forms (GATHER): once a first round has bounded what can still matter, the cluster's
// candidates (every CTA's elements at or above the bound: a few hundred at V = 151936 with top-k 50
// or top-p 0.9) are copied into every CTA's shared memory, and the remaining rounds (top-k's lower
// levels, all of top-p's after a top-k) run in each CTA alone on that list: the same multiset, so
// the same integer histograms and the same bins in every CTA, without a cluster barrier or a remote
// histogram read a round. One barrier publishes the counts; lane r of warp 0 reads CTA r's, the
// offsets are their scan (rank order), and each thread copies elements of the concatenation from
// the CTA that holds them. Returns the gathered count, or -1 (every CTA alike) when a CTA's list
// overflowed or the total exceeds kGather: the distributed rounds then go on as before. A CTA's
// list is never rewritten after it (one gather a call) and no CTA exits before the last barrier.

// BOUND (the wide forms): also the largest of the CTAs' published list bounds, into g_bound.
// IDX (the tk forms): the lists hold slice indices; the values are read from each CTA's staged slice zs.
// WARPS (the wide round's gather, session 34): the copy by warps a CTA's list (below).
// head (the tp forms, session 37): the count of a CTA's first list entries to gather (bin_first's), where not the whole list.
// GSL (the global-slice forms, with IDX): zs is this CTA's slice in global memory and CTA r's starts gch elements a
// rank further (slice_value): the values come from global memory, not from the other CTA's shared memory.
template <int C, int NT, bool BOUND = false, bool IDX = false, bool WARPS = false, bool GSL = false>
__device__ __forceinline__ int gather_candidates(ClusterShared<NT>& sh, float* all, const float* zs = nullptr,
                                                 uint32_t head = 0xffffffffu, int64_t gch = 0) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  if (tid == 0) sh.pub_cand_n = head != 0xffffffffu ? head : sh.cand_n;  // head: only the list's first entries
  cluster_sync_smem();
  if (tid < 32) {
    const uint32_t n = lane < unsigned(C) ? remote_load(&sh.pub_cand_n, lane) : 0u;
    const bool over = __ballot_sync(kFull, n > uint32_t(kClusterCand)) != 0;
    const uint64_t incl = warp_incl_scan(uint64_t(n));
    const uint64_t total = __shfl_sync(kFull, incl, 31);
    if (lane < unsigned(C)) sh.g_off[lane] = uint32_t(incl - n);
    if constexpr (BOUND) {
      uint32_t b = lane < unsigned(C) ? remote_load(&sh.pub_bound, lane) : 0u;
#pragma unroll
      for (int off = 16; off >= 1; off >>= 1) {
        const uint32_t o = __shfl_xor_sync(kFull, b, off);
        b = o > b ? o : b;
      }
      if (lane == 0) sh.g_bound = b;
    }
    if (lane == 0) {
      sh.g_off[C] = uint32_t(total);
      sh.g_n = !over && total <= uint64_t(kGather) ? int(total) : -1;
    }
  }
  __syncthreads();
  const int n = sh.g_n;
  if (n < 0) return -1;
  if constexpr (!WARPS) {
    for (int i = tid; i < n; i += NT) {
      int r = 0;
      while (r + 1 < C && uint32_t(i) >= sh.g_off[r + 1]) ++r;
      if constexpr (IDX) {
        const uint32_t li = remote_load(reinterpret_cast<const uint32_t*>(&sh.cand[uint32_t(i) - sh.g_off[r]]), unsigned(r));
        all[i] = slice_value<GSL>(zs, li, unsigned(r), gch);
      } else {
        all[i] = remote_load(&sh.cand[uint32_t(i) - sh.g_off[r]], unsigned(r));
      }
    }
  } else {
    // WARPS: `per` warps a CTA's list (G CTAs at a time), each lane 4 elements a trip, their remote loads issued
    // before any is used (IDX: the 4 indices, then the 4 values), where the loop above finds an element's CTA by a
    // linear search of g_off and waits for each remote load in turn. The same values at the same places of `all`.
    // GPU run 189 (the timeline probe, B = 1): the wide round's gather 3414 -> 2052 cycles (cluster16_wide), 8932 ->
    // 6451 (cluster16_tp3). Not taken by the top-k forms' gather: there the whole tk kernel's other phases came out
    // slower with it in (B = 64 top-k 50, row 0: +1350 cycles, ~+1000 of it in the unchanged staging).
    constexpr int NW = NT / 32;
    constexpr int G = NW >= C ? C : NW, per = NW >= C ? NW / C : 1;
    const int warp = tid >> 5;
    if (warp < G * per) {
      const uint32_t step = 32u * uint32_t(per);
      for (int r = warp % G; r < C; r += G) {
        const uint32_t o = sh.g_off[r], m = sh.g_off[r + 1] - o;
        for (uint32_t j0 = uint32_t(warp / G) * 32u + lane; j0 < m; j0 += 4u * step) {
          uint32_t v[4];
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const uint32_t j = j0 + uint32_t(u) * step;
            v[u] = j < m ? remote_load(reinterpret_cast<const uint32_t*>(&sh.cand[j]), unsigned(r)) : 0u;
          }
          if constexpr (IDX) {
#pragma unroll
            for (int u = 0; u < 4; ++u)
              if (j0 + uint32_t(u) * step < m) v[u] = f32_bits(slice_value<GSL>(zs, v[u], unsigned(r), gch));
          }
#pragma unroll
          for (int u = 0; u < 4; ++u)
            if (j0 + uint32_t(u) * step < m) all[o + j0 + uint32_t(u) * step] = bits_f32(v[u]);
        }
      }
    }
  }
  __syncthreads();
  return n;
}

// The tk forms' gather pushed (MLOPS_SAMPLE_TK_PUSH, sample_cluster_shared.cuh): tk_count_window laid the list out
// (g_off, g_n >= 0, the same in every CTA) and armed each CTA's mbarrier for the whole list's bytes; this CTA's listing
// (cand: its slice indices, exactly its g_off count of them, which the window counted) is done (tk_list's barrier).
// Each of its values goes into every CTA's list at g_off[rank] + its place in cand (C st.async an element, spread over
// the threads: thread t the element t / C to CTA t % C), then every thread waits for this CTA's own list to be whole.
// No cluster barrier: a CTA's phase completes only after every CTA has listed, and every remote read before it (the
// window's counts) fed the stores' places. The list's values are gather_candidates'<IDX> at the same places.
template <int C, int NT>
__device__ __forceinline__ int push_candidates(ClusterShared<NT>& sh, float* all, const float* zs) {
  const unsigned rank = cluster_rank();
  const uint32_t o = sh.g_off[rank], n = sh.g_off[rank + 1] - o;
#if defined(MLOPS_CUDA_ON_HOST)
  if (threadIdx.x == 0 && sh.cand_n != n) {
    std::printf("push_candidates: CTA %u listed %u keys, the window counted %u\n", rank, sh.cand_n, n);
    std::fflush(stdout);
    std::abort();
  }
#endif
  for (uint32_t i = threadIdx.x; i < n * uint32_t(C); i += NT) {
    const uint32_t e = i / uint32_t(C);
    push_store(&all[o + e], i % uint32_t(C), zs[f32_bits(sh.cand[e])], push_bar_of(sh));
  }
  push_wait(push_bar_of(sh));
  return sh.g_n;
}

// MLOPS_SAMPLE_PUSH_X bit 8 (sample_cluster_shared.cuh): the wide forms' gather of the crossing bin's list pushed, where
// the near pass's exchange was (bit 4) and found the crossing bin. Warp 0 sends this CTA's list count into every CTA's
// mass[1][3 C + rank] (free until the rounds, as bit 2's pairs and bit 4's sums before it) on pub_lp's mbarrier (armed
// after the penalties in a row that is not greedy, whose log-probability alone publishes there) and waits for the C
// counts: the offsets and g_n as gather_candidates' scan makes them, the same in every CTA; where the list fits, lane 0
// arms pub_wide's second phase for the whole list's bytes, then every thread sends this CTA's values into every CTA's
// list at g_off[rank] + their place in cand (push_candidates' spread) and waits for its own list to be whole. No
// cluster barrier: an entry reaches CTA X only from a CTA that has X's count, which X sent after its near exchange
// (pub_wide's first phase) completed. Returns gather_candidates' count for the same lists (values), or -1 alike.
template <int C, int NT>
__device__ __forceinline__ int push_gather(ClusterShared<NT>& sh, float* all) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u, rank = cluster_rank();
  uint64_t* counts = &sh.mass[1][3 * C];  // CTA r's list count at r
  const uint32_t mine = sh.cand_n;        // after list_near's barrier
  if (tid < 32) {
    if (lane < unsigned(C)) push_store_u64(&counts[rank], lane, mine, &sh.pub_lp);
    if (lane == 0) push_expect(&sh.pub_lp, 8u * unsigned(C));
    push_wait(&sh.pub_lp);
    const uint32_t n = lane < unsigned(C) ? uint32_t(counts[lane]) : 0u;
    const bool over = __ballot_sync(kFull, n > uint32_t(kClusterCand)) != 0;
    const uint64_t incl = warp_incl_scan(uint64_t(n));
    const uint64_t total = __shfl_sync(kFull, incl, 31);
    if (lane < unsigned(C)) sh.g_off[lane] = uint32_t(incl - n);
    if (lane == 0) {
      const bool fits = !over && total <= uint64_t(kGather);
      sh.g_off[C] = uint32_t(total);
      sh.g_n = fits ? int(total) : -1;
      if (fits) push_expect(&sh.pub_wide, 4u * uint32_t(total));  // its second phase
    }
  }
  __syncthreads();
  const int n = sh.g_n;
  if (n < 0) return -1;
  const uint32_t o = sh.g_off[rank];
  for (uint32_t i = uint32_t(tid); i < mine * uint32_t(C); i += NT) {
    const uint32_t e = i / uint32_t(C);
    push_store(&all[o + e], i % uint32_t(C), sh.cand[e], &sh.pub_wide);
  }
  push_wait<1>(&sh.pub_wide);
  return n;
}

// The late forms (LATE, on the gather form): when the first round's bin held too many elements for
// the lists (top-p 0.9 at T = 0.8 on N(0, 3^2) logits, V = 151936: the key byte of [2, 8), ~38 000
// elements, so every top-p round and the draw read the whole slice), the lists are built again
// under the second round's bound (~800 - 1800 elements in the whole row there) and gathered: the
// last two rounds then run on the list in each CTA. Called where all_n < 0, which every CTA sees
// alike, after a round whose barrier every CTA passed after its last read of the first attempt's
// counts (pub_cand_n) and of cnt; no CTA copied a list of the first attempt (it returned -1 before).
template <int C, int NT, class Z>
__device__ __forceinline__ void late_gather(const Z& zr, int64_t v0, int64_t v1, uint32_t lo, ClusterShared<NT>& sh,
                                            float* all, bool& use_cand, int& all_n) {
  build_candidates<NT>(zr, v0, v1, lo, sh);
  use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
  all_n = gather_candidates<C, NT>(sh, all);
}
#endif

}  // namespace
}  // namespace mlops::vocab
