// The sampler on a thread-block cluster (sm_90): C CTAs a row, each owning a contiguous slice of
// it, exchanging histograms and sums through distributed shared memory, one launch a call. Per row:
//   penalty  the history's counts into the zeroed workspace, a cluster barrier, each distinct
//            token's count taken back to zero by one thread, which applies the penalty, a barrier;
//   max      each CTA's max / lowest argmax / flags over its slice, merged over the cluster
//            (or the LM head's statistics); greedy rows stop here;
//   top-k    radix select of the k-th largest key, one byte a round: each CTA counts its slice's
//            keys (matching the prefix so far) per digit in shared memory, the cluster barrier,
//            every CTA adds the C histograms (integers: the same values in every CTA) and picks the
//            same bin with a parallel suffix scan; a round stops early when the bin holds exactly
//            the remaining count;
//   top-p    the same rounds on 64-bit fixed-point mass histograms among the top-k;
//   draw     each warp's kept sum over its sub-chunk of the slice, the cluster's totals, and the one
//            CTA whose slice holds floor(R * S / 2^64) walks it: the warp whose sub-chunk holds it,
//            then the lane whose piece of that sub-chunk holds it, and the warp walks that piece
//            32 elements at a time in index order.
// After the first round, each CTA keeps the elements of its slice that can still matter (keys at or
// above the chosen first-level bin, unordered) in shared memory when they fit, and later rounds read
// only them. Every quantity is an integer or a value-defined threshold, the same ones the one-CTA
// kernel (sample_kernel.cuh) and the host emulation use, so the token is the same as theirs.
// Rows whose kernel was not built for sm_90 never come here (the API falls back to t1024);
// tests/c/sample_kernel_on_host.cpp runs this code on the host with its clusters emulated.
#pragma once
#include "sample_kernel.cuh"

#if !defined(MLOPS_CUDA_ON_HOST)
#include <cooperative_groups.h>
#endif

#if defined(MLOPS_CUDA_ON_HOST) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
#define MLOPS_SAMPLE_CLUSTER_BODY 1
#endif

namespace mlops::vocab {
namespace {

#ifndef MLOPS_SAMPLE_CLUSTER_CAND
#define MLOPS_SAMPLE_CLUSTER_CAND 2048
#endif
constexpr int kClusterCand = MLOPS_SAMPLE_CLUSTER_CAND;  // elements of a slice kept in shared memory once a round bounds them
constexpr int kClusterThreads = 512;

#if defined(MLOPS_SAMPLE_CLUSTER_BODY) && !defined(MLOPS_CUDA_ON_HOST)
__device__ __forceinline__ unsigned cluster_rank() { return cooperative_groups::this_cluster().block_rank(); }
__device__ __forceinline__ void cluster_sync() { cooperative_groups::this_cluster().sync(); }
template <class T>
__device__ __forceinline__ T* cluster_map(T* local, unsigned rank) {
  return cooperative_groups::this_cluster().map_shared_rank(local, rank);
}
#endif

template <int NT>
struct ClusterShared {
  // a round's histogram of this CTA's slice as it is counted: bin b's copy c at b * kRep + c;
  // masses as two 32-bit words (a carry-propagating atomic add). Key counts (top-k rounds) use hlo:
  // a round's copies are dead once summed into cnt, so the two never live together, and the 8 KB
  // saved let two CTAs of the staged cluster8 (a 76 KB slice at V = 151936) share an SM.
  uint32_t hlo[256 * kRep], hhi[256 * kRep];
  // the same histogram, its copies added: what the other CTAs read, double-buffered by round (they
  // read buffer r % 2 after round r's barrier; this CTA writes it again only after round r + 1's)
  uint32_t cnt[2][256];
  uint64_t mass[2][256];
  uint64_t wtot[8];
  uint64_t red[NT / 32];
  uint64_t wsum[NT / 32];  // the draw: each warp's kept sum over its sub-chunk
  // published for the other CTAs of the cluster, each written once a call
  uint64_t pub_best, pub_lp, pub_kept;
  int pub_flags;
  // broadcasts within the CTA
  uint64_t b_total, b_acc, b_target, b_tokw;
  uint32_t b_prefix, b_mask, b_krem;
  int b_done, b_warp, b_token;
  // the candidates: the slice's elements with key >= cand_lo, unordered (valid when cand_n <= kClusterCand)
  uint32_t cand_n;
  float cand[kClusterCand];
};

__device__ __forceinline__ uint64_t warp_incl_scan(uint64_t v) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (unsigned off = 1; off < 32; off <<= 1) {
    const uint64_t o = __shfl_up_sync(kFull, v, off);
    if (lane >= off) v += o;
  }
  return v;
}

__device__ __forceinline__ uint64_t warp_sum(uint64_t v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
  return v;
}

// Suffix sums over the 256 bins of a histogram: thread j < 256 holds bin 255 - j's value x and gets
// the sum over bins >= 255 - j (an inclusive scan in j); threads >= 256 get 0. Every thread of the
// CTA calls it (two barriers).
template <int NT>
__device__ uint64_t suffix_scan256(uint64_t x, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint64_t v = 0;
  if (tid < 256) {
    v = warp_incl_scan(x);
    if ((tid & 31) == 31) sh.wtot[tid >> 5] = v;
  }
  __syncthreads();
  if (tid < 256)
    for (int w = 0; w < (tid >> 5); ++w) v += sh.wtot[w];
  __syncthreads();
  return v;
}

// Moves the slice's elements with key >= lo to shared memory (unordered: only histograms read
// them). cand_n ends as their count, larger than kClusterCand when they did not fit.
template <int NT, class Z>
__device__ void build_candidates(const Z& z, int64_t v0, int64_t v1, uint32_t lo, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  if (tid == 0) sh.cand_n = 0;
  __syncthreads();
  for (int64_t base = v0 + (tid & ~31); base < v1; base += NT) {  // warp-uniform trip count
    const int64_t i = base + lane;
    const float x = i < v1 ? z(i) : 0.0f;
    const bool on = i < v1 && key_of(x) >= lo;
    const unsigned ball = __ballot_sync(kFull, on);
    if (!ball) continue;
    uint32_t at = 0;
    if (lane == 0) at = atomicAdd(&sh.cand_n, uint32_t(__popc(ball)));
    at = __shfl_sync(kFull, at, 0) + uint32_t(__popc(ball & ((1u << lane) - 1u)));
    if (on && at < uint32_t(kClusterCand)) sh.cand[at] = x;
  }
  __syncthreads();
}

// The staged form: the CTA's slice [v0, v1) of the (penalized) row is copied into dynamic shared
// memory in one pass of independent 16-byte loads (U a thread issued before the first is used: one
// L2 round trip where the scalar loop of `#pragma unroll 4` waits ~slice / (4 NT) times), the max /
// lowest argmax / flags measured from the registers on the way (measure = false with the head's
// statistics), so every later pass (logprob, radix rounds, candidates, draw, walk) reads shared
// memory. The same values at the same indices as the global reads: the same token. A slice that is
// not 16-byte aligned (a row stride or V / C not a multiple of 4) takes the scalar loads.
template <int NT>
__device__ __forceinline__ void stage_slice(const float* z, int64_t v0, int64_t v1, float* zs, bool measure,
                                            uint64_t& best, int& fl) {
  constexpr int U = 8;
  const int tid = threadIdx.x;
  const int64_t n = v1 - v0;
  const float* src = z + v0;
  auto take = [&](float x, int64_t i) {
    zs[i] = x;
    if (!measure) return;
    if (is_nan(x)) {
      fl |= MLOPS_SAMPLE_FLAG_NAN;
      return;
    }
    const uint32_t k = key_of(x);
    if (k == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
    const uint64_t b = pack_best(k, uint32_t(v0 + i));
    best = b > best ? b : best;
  };
  int64_t done = 0;
  if ((reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
    const int64_t n4 = n >> 2;
    const float4* s4 = reinterpret_cast<const float4*>(src);
    for (int64_t base = tid; base < n4; base += int64_t(NT) * U) {
      float4 r[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t i = base + int64_t(u) * NT;
        if (i < n4) r[u] = s4[i];
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t i = base + int64_t(u) * NT;
        if (i < n4) {
          take(r[u].x, 4 * i);
          take(r[u].y, 4 * i + 1);
          take(r[u].z, 4 * i + 2);
          take(r[u].w, 4 * i + 3);
        }
      }
    }
    done = 4 * n4;
  }
  for (int64_t base = done + tid; base < n; base += int64_t(NT) * U) {
    float r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + int64_t(u) * NT;
      if (i < n) r[u] = src[i];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + int64_t(u) * NT;
      if (i < n) take(r[u], i);
    }
  }
}

// Bytes of dynamic shared memory the staged form takes for a row of `vocab` over C CTAs.
constexpr int64_t cluster_stage_bytes(int64_t vocab, int C) { return ((vocab + C - 1) / C * 4 + 15) / 16 * 16; }

// 2 CTAs an SM at 512 threads, 1 at 1024: 64 registers a thread either way.
// ES (the *_es variants): a top-p round below the first stops the rounds when the chosen bin holds
// exactly one element of non-zero weight (counted cluster-wide next to the masses). The rounds
// below it would only narrow the threshold from the bin's lower bound to that element's key, and
// every key between the two is of an element of zero weight (the bin holds no other weight): the
// same kept weights, the same S, the same token and log-probability. The first round (over the
// whole slice, where few bins take most elements) counts nothing: one un-replicated atomic an
// element there would serialise; later rounds see only the prefix's elements.
template <int C, int NT, bool STAGE = false, bool ES = false>
__global__ void __launch_bounds__(NT, NT <= 512 ? 2 : 1) sample_cluster_kernel(SampleParams p) {
#if defined(MLOPS_SAMPLE_CLUSTER_BODY)
  static_assert(NT >= 256 && NT % 32 == 0 && NT / 32 <= 32, "the bin scans take 256 threads; one warp scans the warps");
#if defined(MLOPS_CUDA_ON_HOST)
  ClusterShared<NT>& sh = host_block_shared<ClusterShared<NT>>();
#else
  __shared__ ClusterShared<NT> sh;
#endif
  constexpr int NW = NT / 32;
  const unsigned rank = cluster_rank();
  const int64_t row = blockIdx.y;
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const int warp = tid >> 5;
  const int64_t V = p.vocab;
  const float* z = p.logits + row * p.logits_stride;
  const mlops_sample_config cfg = sanitize(p.configs[row]);
  const int64_t step = p.steps[row];  // read before any barrier: rank 0 advances it after the last
  const int64_t ch = (V + C - 1) / C;
  const int64_t v0 = int64_t(rank) * ch < V ? int64_t(rank) * ch : V;
  const int64_t v1 = v0 + ch < V ? v0 + ch : V;
  float* zs = nullptr;  // the staged slice (STAGE): element v at zs[v - v0]
  if constexpr (STAGE) {
#if defined(MLOPS_CUDA_ON_HOST)
    zs = host_dynamic_shared<float>();
#else
    extern __shared__ float4 sample_slice_smem[];
    zs = reinterpret_cast<float*>(sample_slice_smem);
#endif
  }
  // element v of this CTA's slice, from shared memory (STAGE) or the row
  auto zr = [&](int64_t v) -> float {
    if constexpr (STAGE) return zs[v - v0];
    else return z[v];
  };

  // ---- penalties (what penalty_count_kernel and penalty_apply_kernel do, in this launch): count
  // each history token into the zeroed workspace, the cluster barrier (global writes of the
  // cluster's CTAs are visible after it), the one thread that takes a token's count back to zero
  // applies the penalty once, the barrier again
  const int64_t hn = history_length(p, row);
  if (hn > 0 && p.penalty_counts && config_has_penalty(cfg)) {
    const int32_t* h = p.history + row * p.history_stride;
    int32_t* counts = p.penalty_counts + row * V;
    for (int64_t i = int64_t(rank) * NT + tid; i < hn; i += int64_t(C) * NT) {
      const int32_t t = h[i];
      if (t >= 0 && t < V) atomicAdd(counts + t, 1);
    }
    cluster_sync();
    for (int64_t i = int64_t(rank) * NT + tid; i < hn; i += int64_t(C) * NT) {
      const int32_t t = h[i];
      if (t < 0 || t >= V) continue;
      const int32_t c = atomicExch(counts + t, 0);
      if (c > 0) p.logits[row * p.logits_stride + t] = penalize(p.logits[row * p.logits_stride + t], c, cfg);
    }
    cluster_sync();
  }

  // ---- max, lowest argmax, flags: this CTA's slice, then the cluster's (or the head's statistics)
  const bool stats = row_uses_stats(p, row, cfg);
  uint64_t best = 0;
  int flags = 0;
  int fl = 0;
  if constexpr (STAGE) {
    stage_slice<NT>(z, v0, v1, zs, !stats, best, fl);
    __syncthreads();  // other threads of the CTA read the slice from here on
  }
  if (stats) {
    best = p.stats_best[row];
    flags = flags_from_best(best);
  } else {
#pragma unroll 4
    for (int64_t v = v0 + tid; !STAGE && v < v1; v += NT) {
      const float x = z[v];
      if (is_nan(x)) {
        fl |= MLOPS_SAMPLE_FLAG_NAN;
        continue;
      }
      const uint32_t k = key_of(x);
      if (k == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
      const uint64_t b = pack_best(k, uint32_t(v));
      best = b > best ? b : best;
    }
    const int any_nan = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_NAN);
    const int any_inf = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_POSINF);
    best = block_max_u64<NT>(best, sh);
    if (tid == 0) {
      sh.pub_best = best;
      sh.pub_flags = (any_nan ? MLOPS_SAMPLE_FLAG_NAN : 0) | (any_inf ? MLOPS_SAMPLE_FLAG_POSINF : 0);
    }
    cluster_sync();
    best = 0;
    for (int r = 0; r < C; ++r) {
      const ClusterShared<NT>* o = cluster_map(&sh, unsigned(r));
      best = o->pub_best > best ? o->pub_best : best;
      flags |= o->pub_flags;
    }
    if (best == 0 || best_key(best) <= kKeyNegInf) flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
  }
  const uint32_t max_key = best_key(best);
  const float m = float_of_key(max_key);
  int32_t token = int32_t(best == 0 ? 0u : best_index(best));
  float logprob = __int_as_float(0x7fc00000);
  bool writer = rank == 0;  // the CTA that writes the token (the walking one, for sampled rows)

  if (flags || config_greedy(cfg)) {
    if (p.logprobs && !flags) {  // log-softmax of the argmax at temperature 1, no filter
      uint64_t s = 0;
      for (int64_t v = v0 + tid; v < v1; v += NT) s += sample_weight(zr(v), m, temperature_of(1.0f));
      s = block_sum_u64<NT>(s, sh);
      if (tid == 0) sh.pub_lp = s;
      cluster_sync();
      s = 0;
      for (int r = 0; r < C; ++r) s += cluster_map(&sh, unsigned(r))->pub_lp;
      logprob = float(log(double(kWeightScale) / double(s)));
    }
  } else {
    const Temperature T = temperature_of(cfg.temperature);
    int rnd = 0;            // histogram rounds so far (the buffer of round r is r % 2)
    bool use_cand = false;  // later rounds read sh.cand instead of the slice
    uint32_t tau = 0;
    // ---- top-k: the k-th largest key (ties at it are kept), one byte a round
    if (cfg.top_k > 0 && int64_t(cfg.top_k) < V) {
      uint32_t prefix = 0, mask = 0, k_rem = uint32_t(cfg.top_k);
#pragma unroll 1
      for (int level = 3; level >= 0; --level) {
        const int sh_bits = 8 * level;
        const bool from_stats = level == 3 && stats && p.stats_key_hist;  // the head counted these
        uint32_t c = 0;
        if (from_stats) {
          if (tid < 256) c = p.stats_key_hist[row * 256 + (255 - tid)];
        } else {
          const int buf = rnd & 1;
          for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
          __syncthreads();
          const uint32_t copy = lane & uint32_t(kRep - 1);
          if (use_cand) {
            for (int i = tid; i < int(sh.cand_n); i += NT) {
              const uint32_t k = key_of(sh.cand[i]);
              if ((k & mask) == prefix) atomicAdd(&sh.hlo[((k >> sh_bits) & 255u) * kRep + copy], 1u);
            }
          } else {
#pragma unroll 4
            for (int64_t v = v0 + tid; v < v1; v += NT) {
              const uint32_t k = key_of(zr(v));
              if ((k & mask) == prefix) atomicAdd(&sh.hlo[((k >> sh_bits) & 255u) * kRep + copy], 1u);
            }
          }
          __syncthreads();
          if (tid < 256) {
            uint32_t t = 0;
            for (int r = 0; r < kRep; ++r) t += sh.hlo[tid * kRep + r];
            sh.cnt[buf][tid] = t;
          }
          cluster_sync();
          if (tid < 256)
            for (int r = 0; r < C; ++r) c += cluster_map(&sh, unsigned(r))->cnt[buf][255 - tid];
          ++rnd;
        }
        if (tid == 0) {
          // no bin reaches the remaining count (cannot happen: k < V, no NaN here): keep everything
          sh.b_prefix = 0;
          sh.b_mask = 0;
          sh.b_done = 1;
          sh.b_krem = k_rem;
        }
        const uint64_t incl = suffix_scan256<NT>(c, sh);  // syncs before and after
        if (tid < 256 && incl - c < uint64_t(k_rem) && uint64_t(k_rem) <= incl) {
          const uint32_t bin = uint32_t(255 - tid), cum = uint32_t(incl - c);
          sh.b_prefix = prefix | (bin << sh_bits);
          sh.b_mask = mask | (255u << sh_bits);
          sh.b_done = c == k_rem - cum;  // every key of the bin is kept
          sh.b_krem = k_rem - cum;
        }
        __syncthreads();
        prefix = sh.b_prefix;
        mask = sh.b_mask;
        k_rem = sh.b_krem;
        const int done = sh.b_done;
        __syncthreads();
        if (done) break;
        if (level == 3 && mask) {  // the keys in the chosen bin and above, when they fit
          build_candidates<NT>(zr, v0, v1, prefix, sh);
          use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
        }
      }
      tau = prefix;
    }
    // ---- top-p: the smallest key whose mass above it (among the top-k) is below p * S_k
    if (cfg.top_p < 1.0f) {
      uint32_t prefix = 0, mask = 0;
      uint64_t acc = 0;
      double thr = 0.0;
#pragma unroll 1
      for (int level = 3; level >= 0; --level) {
        const int sh_bits = 8 * level;
        const int buf = rnd & 1;
        // ES, below the first round: cnt[buf] counts this CTA's weighted elements a bin (zeroed
        // here: the other CTAs read buffer buf of round rnd - 2 before round rnd - 1's barrier)
        const bool count = ES && level < 3;
        for (int i = tid; i < 256 * kRep; i += NT) {
          sh.hlo[i] = 0;
          sh.hhi[i] = 0;
        }
        if (count && tid < 256) sh.cnt[buf][tid] = 0;
        __syncthreads();
        const uint32_t copy = lane & uint32_t(kRep - 1);
        if (use_cand) {
          for (int i = tid; i < int(sh.cand_n); i += NT) {
            const float x = sh.cand[i];
            const uint32_t k = key_of(x);
            if (k < tau || (k & mask) != prefix) continue;
            const uint32_t w = sample_weight(x, m, T);
            const uint32_t at = ((k >> sh_bits) & 255u) * kRep + copy;
            if (w) add_mass(&sh.hlo[at], &sh.hhi[at], w);
            if (count && w) atomicAdd(&sh.cnt[buf][(k >> sh_bits) & 255u], 1u);
          }
        } else {
#pragma unroll 4
          for (int64_t v = v0 + tid; v < v1; v += NT) {
            const float x = zr(v);
            const uint32_t k = key_of(x);
            if (k < tau || (k & mask) != prefix) continue;
            const uint32_t w = sample_weight(x, m, T);
            const uint32_t at = ((k >> sh_bits) & 255u) * kRep + copy;
            if (w) add_mass(&sh.hlo[at], &sh.hhi[at], w);
            if (count && w) atomicAdd(&sh.cnt[buf][(k >> sh_bits) & 255u], 1u);
          }
        }
        __syncthreads();
        if (tid < 256) {
          uint64_t t = 0;
          for (int r = 0; r < kRep; ++r) t += (uint64_t(sh.hhi[tid * kRep + r]) << 32) | sh.hlo[tid * kRep + r];
          sh.mass[buf][tid] = t;
        }
        cluster_sync();
        uint64_t mass = 0;
        uint32_t n_bin = 0;  // ES: the cluster's weighted elements in bin 255 - tid
        if (tid < 256)
          for (int r = 0; r < C; ++r) {
            const ClusterShared<NT>* o = cluster_map(&sh, unsigned(r));
            mass += o->mass[buf][255 - tid];
            if (count) n_bin += o->cnt[buf][255 - tid];
          }
        ++rnd;
        const uint64_t incl = acc + suffix_scan256<NT>(mass, sh);  // syncs before and after
        if (level == 3) {
          if (tid == 255) sh.b_total = incl;  // S_k: the mass of every key >= tau
          __syncthreads();
          thr = top_p_threshold(cfg.top_p, sh.b_total);
        }
        if (tid == 0) {  // no bin reaches the threshold: the prefix stays, the rounds end
          sh.b_prefix = prefix;
          sh.b_mask = mask;
          sh.b_done = 1;
        }
        __syncthreads();
        if (tid < 256 && double(incl) >= thr && (tid == 0 || !(double(incl - mass) >= thr))) {
          sh.b_prefix = prefix | (uint32_t(255 - tid) << sh_bits);
          sh.b_mask = mask | (255u << sh_bits);
          sh.b_acc = incl - mass;
          sh.b_done = count && n_bin == 1;  // ES: the bin's lower bound keeps the same weights
        }
        __syncthreads();
        prefix = sh.b_prefix;
        mask = sh.b_mask;
        acc = sh.b_acc;
        const int done = sh.b_done;
        __syncthreads();
        if (done) break;
        if (level == 3 && !use_cand) {  // the keys >= max(tau, the chosen bin), when they fit
          build_candidates<NT>(zr, v0, v1, prefix > tau ? prefix : tau, sh);
          use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
        }
      }
      if (prefix > tau) tau = prefix;
    }
    // ---- draw: kept sums per warp sub-chunk, the cluster's total, the walk in index order
    KeptWeight kw;
    kw.m = m;
    kw.t = T;
    kw.tau = tau;
    kw.use_min_p = cfg.min_p > 0.0f;
    kw.min_thr = min_p_threshold(cfg.min_p);
    const int64_t wc = (v1 - v0 + NW - 1) / NW;
    const int64_t a = v0 + warp * wc < v1 ? v0 + warp * wc : v1;
    const int64_t b = a + wc < v1 ? a + wc : v1;
    uint64_t s = 0;
#pragma unroll 4
    for (int64_t v = a + lane; v < b; v += 32) s += kw(zr(v));
    s = warp_sum(s);
    if (lane == 0) sh.wsum[warp] = s;
    __syncthreads();
    if (tid == 0) {
      uint64_t t = 0;
      for (int w = 0; w < NW; ++w) t += sh.wsum[w];
      sh.pub_kept = t;
    }
    cluster_sync();
    uint64_t S = 0, excl = 0, mine = 0;
    for (int r = 0; r < C; ++r) {
      const uint64_t k = cluster_map(&sh, unsigned(r))->pub_kept;
      if (r < int(rank)) excl += k;
      if (r == int(rank)) mine = k;
      S += k;
    }
    const uint64_t target = scale_draw(draw64(p.seeds[row], step), S);
    writer = mine && excl <= target && target < excl + mine;  // S > 0: the max is always kept
    if (writer) {
      const uint64_t t = target - excl;
      if (tid == 0) {
        uint64_t run = 0;
        int w = NW - 1;
        for (int i = 0; i < NW; ++i) {
          if (t < run + sh.wsum[i]) {
            w = i;
            break;
          }
          run += sh.wsum[i];
        }
        sh.b_warp = w;
        sh.b_target = t - run;
        sh.b_token = int(best_index(best));
        sh.b_tokw = 0;
      }
      __syncthreads();
      if (warp == sh.b_warp) {  // its lanes split the warp's sub-chunk into contiguous pieces
        const uint64_t tw = sh.b_target;
        const int64_t lc = (b - a + 31) / 32;
        const int64_t la = a + int64_t(lane) * lc < b ? a + int64_t(lane) * lc : b;
        const int64_t lb = la + lc < b ? la + lc : b;
        uint64_t ls = 0;
#pragma unroll 4
        for (int64_t v = la; v < lb; ++v) ls += kw(zr(v));
        const uint64_t lincl = warp_incl_scan(ls);
        const uint64_t lex = lincl - ls;
        // the one lane whose piece holds the target; the warp walks that piece 32 at a time: the
        // first element whose running sum exceeds the target
        const unsigned hit = __ballot_sync(kFull, ls && lex <= tw && tw < lincl);
        const int hl = hit ? __ffs(hit) - 1 : 0;
        const int64_t pa = __shfl_sync(kFull, la, hl), pb = hit ? __shfl_sync(kFull, lb, hl) : pa;
        uint64_t run = __shfl_sync(kFull, lex, hl);
        for (int64_t base = pa; base < pb; base += 32) {  // warp-uniform trip count
          const int64_t v = base + int64_t(lane);
          const uint32_t w = v < pb ? kw(zr(v)) : 0u;
          const uint64_t incl = run + warp_incl_scan(w);
          const unsigned f = __ballot_sync(kFull, w && incl > tw);
          if (f) {
            if (int(lane) == __ffs(f) - 1) {
              sh.b_token = int(v);
              sh.b_tokw = w;
            }
            break;
          }
          run = __shfl_sync(kFull, incl, 31);
        }
      }
      __syncthreads();
      token = sh.b_token;
      logprob = float(log(double(sh.b_tokw) / double(S)));
    }
  }
  if (writer && tid == 0) {
    p.tokens[row] = token;
    if (p.flags) p.flags[row] = flags;
    if (p.logprobs) p.logprobs[row] = logprob;
  }
  cluster_sync();  // no CTA leaves while another may read its shared memory; every step is read
  if (rank == 0 && tid == 0) p.steps[row] = step + 1;
#endif
}

}  // namespace
}  // namespace mlops::vocab
