// The sampler's cluster kernel: the wide forms' 11-bit first round (2048 bins), their block scan and search
// from the top, top-k's wide round with its gather, and the strided weighing top-p's wide round uses.
#pragma once
#include "sample_cluster_gather.cuh"

namespace mlops::vocab {
namespace {

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // sample_cluster_shared.cuh: sm_90 device code, or the host runner
// ---- The wide forms (WIDE, on the late form): a first round on an 11-bit digit of the key (sign,
// exponent, 2 mantissa bits: 2048 bins, a quarter octave each), so that one pass bounds what can
// still matter to a few hundred - two thousand elements where the 8-bit first round left ~38 000
// (top-p 0.9 at T = 0.8 on N(0, 3^2) logits, V = 151936: its crossing bin [2, 8)).
constexpr int kWideBits = 11, kWideShift = 32 - kWideBits, kWideBins = 1 << kWideBits;
// the rounds after a wide top-p round: bits 13 - 20, 5 - 12, then 0 - 7 (bits 5 - 7 already fixed
// by the prefix, so only the bins that match it are non-zero and can be chosen)
MLOPS_HD constexpr int wide_shift(int level) { return level == 3 ? kWideShift : level == 2 ? 13 : level == 1 ? 5 : 0; }

// An exclusive scan of one value a thread in thread order (exact integers). Every thread calls it.
template <int NT>
__device__ __forceinline__ uint64_t block_excl_scan(uint64_t x, ClusterShared<NT>& sh) {
  constexpr int NW = NT / 32;
  const unsigned lane = unsigned(threadIdx.x) & 31u;
  const int warp = int(threadIdx.x) >> 5;
  const uint64_t incl = warp_incl_scan(x);
  if (lane == 31) sh.wsum[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    uint64_t y = lane < unsigned(NW) ? sh.wsum[lane] : 0;
    y = warp_incl_scan(y);
    if (lane < unsigned(NW)) sh.red[lane] = y;
  }
  __syncthreads();
  const uint64_t r = incl - x + (warp ? sh.red[warp - 1] : 0);
  __syncthreads();
  return r;
}

// The highest of n bins (val(i), ascending keys) at which the sum from the top, plus base, reaches
// (reach(sum), monotone; reach(base) false): sh.b_warp = i, -1 where none does; sh.b_acc = base plus
// the sum of the bins above it; sh.b_target = val(i). The same bin as a suffix scan of the bins and
// the existing rounds' choice (the highest bin whose inclusive sum reaches). Thread t takes q =
// ceil(n / NT) consecutive bins from the top (n <= kWideBins: at most 4 at 512 threads); every
// thread calls it.
template <int NT, class Val, class Reach>
__device__ void find_from_top(int n, uint64_t base, const Val& val, const Reach& reach, ClusterShared<NT>& sh) {
  constexpr int kQ = (kWideBins + NT - 1) / NT;
  const int tid = threadIdx.x;
  const int q = (n + NT - 1) / NT;
  uint64_t v[kQ], x = 0;
#pragma unroll
  for (int j = 0; j < kQ; ++j) {
    const int i = n - 1 - (tid * q + j);
    v[j] = j < q && i >= 0 ? uint64_t(val(i)) : 0;
    x += v[j];
  }
  if (tid == 0) sh.b_warp = -1;
  uint64_t run = base + block_excl_scan<NT>(x, sh);  // syncs before the writes below
#pragma unroll
  for (int j = 0; j < kQ; ++j) {
    const uint64_t next = run + v[j];
    if (j < q && !reach(run) && reach(next)) {
      sh.b_warp = n - 1 - (tid * q + j);
      sh.b_acc = run;
      sh.b_target = v[j];
    }
    run = next;
  }
  __syncthreads();
}

// Top-k's first round, wide, in each CTA alone: the global k-th largest key K is at or above each
// CTA's own k-th largest, so each CTA lists its elements at or above the lower bound of the wide bin
// of its own k-th largest key (all of its slice where it holds fewer than k), no cluster barrier,
// and one gather joins the lists. Every element with key >= K is in the joined list (an element of
// CTA r below r's bound has k larger elements in r alone, so its key is below K), so the list's
// k-th largest key is K and its count at or above any key >= K is the row's: the rounds on it
// (levels 3 .. 0, in each CTA) find K and top-p after it sees every kept element. A bin of the list
// holds all of the row's elements of that bin only at or above every CTA's bound (g_bound, returned
// in `bound`): a round's early stop (the bin's lower bound as the threshold) is taken only there.
// Where the gather fails (a list over kClusterCand, or over kGather joined) all_n = -1 in every CTA
// and use_cand is false: the distributed rounds read the slice from level 3 on, as the late form.
template <int C, int NT, class Z>
__device__ void wide_topk_gather(const Z& zr, int64_t v0, int64_t v1, uint32_t k, ClusterShared<NT>& sh, float* all,
                                 bool& use_cand, int& all_n, uint32_t& bound) {
  const int tid = threadIdx.x;
  for (int i = tid; i < kWideBins; i += NT) sh.hlo[i] = 0;  // hlo: 256 * kRep = 2048 words
  __syncthreads();
#pragma unroll 4
  for (int64_t v = v0 + tid; v < v1; v += NT) atomicAdd(&sh.hlo[key_of(zr(v)) >> kWideShift], 1u);
  __syncthreads();
  find_from_top<NT>(
      kWideBins, 0, [&](int i) { return uint64_t(sh.hlo[i]); }, [&](uint64_t s) { return s >= uint64_t(k); }, sh);
  const int b = sh.b_warp;
  const uint32_t lo = b < 0 ? 0u : uint32_t(b) << kWideShift;
  if (tid == 0) sh.pub_bound = lo;  // read after the gather's barrier
  build_candidates<NT>(zr, v0, v1, lo, sh);
  all_n = gather_candidates<C, NT, true>(sh, all);
  bound = all_n >= 0 ? sh.g_bound : 0u;
  use_cand = false;
}

// The staged positions i0, i0 + NT, i0 + 2 NT, i0 + 3 NT of a slice of n (x, on: i < n) and their weights (lean_weights4):
// the wide rounds' passes (wide_near_pass, wide_full_pass) step through the slice this way. WHOLE (the near pass's
// whole trips, MLOPS_SAMPLE_WIDE_LEAN: all 4 positions below n, a mass row): no bound, and lean_weights4<false, false>.
template <int NT, bool WHOLE = false>
__device__ __forceinline__ void weigh_strided4(const LeanRow& lm, const float* zs, int n, int i0, float (&x)[4],
                                               bool (&on)[4], uint32_t (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int i = i0 + j * NT;
    x[j] = WHOLE || i < n ? zs[i] : 0.0f;
    on[j] = WHOLE || i < n;
  }
  if constexpr (WHOLE)
    lean_weights4<false, false>(lm, x, on, w);
  else
    lean_weights4(lm, x, on, w);
}

// Quad q of a slice of n elements starting 16-byte aligned (elements 4q .. 4q + 3): one 16-byte load where the
// whole quad lies in the slice, element by element (0 past n) for a last partial one, zeros past the slice.
__device__ __forceinline__ float4 load_quad(const float* zs, int n, int q) {
  const int e = 4 * q;
  if (e + 4 <= n) return reinterpret_cast<const float4*>(zs)[q];
  float4 r = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (e < n) r.x = zs[e];
  if (e + 1 < n) r.y = zs[e + 1];
  if (e + 2 < n) r.z = zs[e + 2];
  return r;
}

// The slice position of bit e of a thread's near mask (wide_near_pass): element tid + e NT (Q false), else element j
// of the thread's quad u (e = 4 u + j), quad tid + u NT (Q: the quad-loaded pass).
template <int NT, bool Q>
__device__ __forceinline__ uint32_t near_element(int tid, uint32_t e) {
  return Q ? uint32_t(4 * (tid + int(e >> 2) * NT)) + (e & 3u) : uint32_t(tid + int(e) * NT);
}
#endif

}  // namespace
}  // namespace mlops::vocab
