// The sampler: one CTA a row (NT threads), no sort of the vocabulary.
//   pass 1   max key, its lowest index, NaN / +inf flags (greedy rows stop here);
//   top-k    radix select of the k-th largest key, one byte a pass (count histograms);
//   top-p    radix select on fixed-point mass (64-bit mass histograms) among the top-k;
//   draw     chunk sums of the kept weights, an exclusive scan, and the one thread whose chunk
//            holds floor(R * S / 2^64) walks it in index order.
// Once the first radix level bounds the kept set to <= kCand elements (top-k's k-th key bin, or
// top-p's crossing bin), those elements move to shared memory in index order and the remaining
// levels and the draw read only them: the same integers, so the same token, in fewer row passes.
// Every quantity is an integer or a value-defined threshold, so the token does not depend on
// NT (the variant) or on the order threads meet elements. Penalties run first as two small
// kernels over the history (count, then apply once per distinct token). The launches are in
// sample_kernel.cu, the one file that instantiates the templates (nvcc >= 12.8: template launch stubs
// are local to their object); tests/c/sample_kernel_on_host.cpp compiles this header with the host
// compiler and runs its CTAs with one host thread a GPU thread.
#pragma once
#include <cuda_runtime.h>

#include "sample_params.h"

namespace mlops::vocab {
namespace {

constexpr unsigned kFull = 0xffffffffu;

constexpr int kCand = 2048;  // elements a row may move to shared memory once a threshold bounds them

// Mass histograms are counted in copies (lane l adds to copy l % kRep of its bin, at bin * kRep +
// copy: fewer same-address atomics) of two 32-bit words with a carry: a 64-bit atomicAdd on shared
// memory is a compare-and-swap loop (ATOMS.CAST.SPIN.64), which stalls when a row's elements crowd
// into a few bins. The copies' sum is the same integer.
constexpr int kRep = 8;

__device__ __forceinline__ void add_mass(uint32_t* lo, uint32_t* hi, uint32_t w) {
  const uint32_t old = atomicAdd(lo, w);
  if (old + w < old) atomicAdd(hi, 1u);  // the low word wrapped: carry one into the high word
}

template <int NT>
struct Shared {
  uint64_t red[NT / 32];
  uint64_t scan[NT];
  uint32_t cnt[256];
  uint64_t mass[256];
  uint32_t hlo[256 * kRep], hhi[256 * kRep];  // mass copies as they are counted
  float cand_val[kCand];
  int32_t cand_idx[kCand];
  uint32_t select_prefix, select_mask;
  int done, gather;
  uint64_t bcast, bcast2;
};

// What the passes read: the row itself, or the candidates gathered into shared memory (in index
// order, so a running sum over them is the running sum over the row's kept elements).
struct Src {
  const float* vals;
  const int32_t* idx;  // nullptr: the row (index = position)
  int64_t n;
  __device__ __forceinline__ float val(int64_t i) const { return vals[i]; }
  __device__ __forceinline__ int64_t index(int64_t i) const { return idx ? int64_t(idx[i]) : i; }
};

// The block reductions read only sh.red[NT / 32]: the one-CTA / split kernels pass Shared<NT>, the
// cluster kernels (sample_cluster_shared.cuh) their ClusterShared<NT>.
template <int NT, class Sh>
__device__ uint64_t block_max_u64(uint64_t v, Sh& sh) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    const uint64_t o = __shfl_xor_sync(kFull, v, off);
    v = o > v ? o : v;
  }
  if ((threadIdx.x & 31) == 0) sh.red[threadIdx.x >> 5] = v;
  __syncthreads();
  uint64_t r = sh.red[0];
  for (int i = 1; i < NT / 32; ++i) r = sh.red[i] > r ? sh.red[i] : r;
  __syncthreads();
  return r;
}

// block_sum_u64 in its two halves, for a caller with work between them: each warp's sum into red (then a barrier),
// and their total (every thread that reads it, before the next barrier; red is written again after that).
template <int NT, class Sh>
__device__ void block_partials_u64(uint64_t v, Sh& sh) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
  if ((threadIdx.x & 31) == 0) sh.red[threadIdx.x >> 5] = v;
  __syncthreads();
}

template <int NT, class Sh>
__device__ uint64_t block_partials_total(const Sh& sh) {
  uint64_t r = 0;
  for (int i = 0; i < NT / 32; ++i) r += sh.red[i];
  return r;
}

template <int NT, class Sh>
__device__ uint64_t block_sum_u64(uint64_t v, Sh& sh) {
  block_partials_u64<NT>(v, sh);
  const uint64_t r = block_partials_total<NT>(sh);
  __syncthreads();
  return r;
}

// Suffix sums over the 256 bins of a histogram: thread j < 256 holds bin 255 - j's value x and gets
// the sum over bins >= 255 - j (an inclusive scan in j, exact integers); threads >= 256 get 0.
// Every thread of the CTA calls it (two barriers).
template <int NT>
__device__ uint64_t suffix256(uint64_t x, Shared<NT>& sh) {
  static_assert(NT >= 256, "a thread a bin");
  const unsigned lane = threadIdx.x & 31u;
  uint64_t v = threadIdx.x < 256 ? x : 0;
#pragma unroll
  for (unsigned off = 1; off < 32; off <<= 1) {
    const uint64_t o = __shfl_up_sync(kFull, v, off);
    if (lane >= off) v += o;
  }
  if (lane == 31 && threadIdx.x < 256) sh.red[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 256)
    for (int w = 0; w < int(threadIdx.x >> 5); ++w) v += sh.red[w];
  __syncthreads();
  return threadIdx.x < 256 ? v : 0;
}

// Thread t's contiguous chunk [c0, c1) of n elements (index order across threads).
template <int NT>
__device__ __forceinline__ void chunk_of(int64_t n, int64_t& c0, int64_t& c1) {
  const int64_t chunk = (n + NT - 1) / NT;
  c0 = int64_t(threadIdx.x) * chunk;
  if (c0 > n) c0 = n;
  c1 = c0 + chunk < n ? c0 + chunk : n;
}

// Exclusive scan of sh.scan[0 .. NT) (entry i is thread i's; exact integer sums, so the same values
// as a serial scan): warp scans by shuffles, then the warp totals; returns the total.
template <int NT>
__device__ uint64_t scan_exclusive(Shared<NT>& sh) {
  __syncthreads();
  const unsigned lane = threadIdx.x & 31u;
  const uint64_t mine = sh.scan[threadIdx.x];
  uint64_t v = mine;
#pragma unroll
  for (unsigned off = 1; off < 32; off <<= 1) {
    const uint64_t o = __shfl_up_sync(kFull, v, off);
    if (lane >= off) v += o;
  }
  if (lane == 31) sh.red[threadIdx.x >> 5] = v;
  __syncthreads();
  uint64_t before = 0, total = 0;
  for (int w = 0; w < NT / 32; ++w) {
    if (w < int(threadIdx.x >> 5)) before += sh.red[w];
    total += sh.red[w];
  }
  sh.scan[threadIdx.x] = before + v - mine;
  __syncthreads();
  return total;
}

// Moves the row's elements with key >= lo into shared memory, in index order (the caller knows
// there are at most kCand of them). Returns the source that reads them.
template <int NT>
__device__ Src gather(const float* z, int64_t V, uint32_t lo, Shared<NT>& sh) {
  int64_t c0, c1;
  chunk_of<NT>(V, c0, c1);
  uint64_t mine = 0;
  for (int64_t v = c0; v < c1; ++v) mine += key_of(z[v]) >= lo;
  sh.scan[threadIdx.x] = mine;
  const uint64_t n = scan_exclusive<NT>(sh);
  uint64_t off = sh.scan[threadIdx.x];
  for (int64_t v = c0; v < c1 && mine; ++v) {
    const float x = z[v];
    if (key_of(x) >= lo) {
      if (off < uint64_t(kCand)) {  // only statistics that do not describe the row can overflow
        sh.cand_val[off] = x;
        sh.cand_idx[off] = int32_t(v);
      }
      ++off;
    }
  }
  __syncthreads();
  return Src{sh.cand_val, sh.cand_idx, int64_t(n < uint64_t(kCand) ? n : uint64_t(kCand))};
}

template <int NT>
__global__ void __launch_bounds__(NT) sample_kernel(SampleParams p) {
  __shared__ Shared<NT> sh;
  const int64_t row = blockIdx.x;
  const int tid = threadIdx.x;
  const int64_t V = p.vocab;
  const float* z = p.logits + row * p.logits_stride;
  const mlops_sample_config cfg = sanitize(p.configs[row]);

  // ---- pass 1: max, lowest argmax, flags (or the LM head's statistics: no pass)
  const bool stats = row_uses_stats(p, row, cfg);
  uint64_t best = 0;
  int flags = 0;
  if (stats && p.split) {  // phase A's values: what pass 1 computes
    best = p.split[row].best;
    flags = p.split[row].flags;
    if (best == 0 || best_key(best) <= kKeyNegInf) flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
  } else if (stats) {
    best = p.stats_best[row];
    flags = flags_from_best(best);
  } else {
    int fl = 0;
    for (int64_t v = tid; v < V; v += NT) {
      const float x = z[v];
      if (is_nan(x)) { fl |= MLOPS_SAMPLE_FLAG_NAN; continue; }
      const uint32_t k = key_of(x);
      if (k == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
      const uint64_t b = pack_best(k, uint32_t(v));
      best = b > best ? b : best;
    }
    const int any_nan = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_NAN);
    const int any_inf = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_POSINF);
    best = block_max_u64<NT>(best, sh);
    flags = (any_nan ? MLOPS_SAMPLE_FLAG_NAN : 0) | (any_inf ? MLOPS_SAMPLE_FLAG_POSINF : 0);
    if (best == 0 || best_key(best) <= kKeyNegInf) flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
  }
  const uint32_t max_key = best_key(best);
  const uint32_t argmax = best == 0 ? 0u : best_index(best);
  const float m = float_of_key(max_key);

  int32_t token = int32_t(argmax);
  float logprob = __int_as_float(0x7fc00000);
  if (flags || config_greedy(cfg)) {
    if (p.logprobs && !flags) {  // log-softmax of the argmax at temperature 1, no filter
      uint64_t s = 0;
      for (int64_t v = tid; v < V; v += NT) s += sample_weight(z[v], m, temperature_of(1.0f));
      s = block_sum_u64<NT>(s, sh);
      logprob = float(log(double(kWeightScale) / double(s)));
    }
  } else {
    const Temperature T = temperature_of(cfg.temperature);
    Src src{z, nullptr, V};
    // ---- top-k: the k-th largest key (ties at it are kept), one byte a level
    uint32_t tau = 0;
    if (cfg.top_k > 0 && int64_t(cfg.top_k) < V) {
      uint32_t prefix = 0, mask = 0;
      uint32_t k_rem = uint32_t(cfg.top_k);
#pragma unroll 1
      for (int level = 3; level >= 0; --level) {
        const int sh_bits = 8 * level;
        // the head (or the split variant's phase A) counted these
        const bool from_stats = level == 3 && stats && (p.split || p.stats_key_hist);
        for (int i = tid; i < 256; i += NT)
          sh.cnt[i] = !from_stats ? 0u : p.split ? p.split[row].hist[i] : p.stats_key_hist[row * 256 + i];
        __syncthreads();
        for (int64_t i = tid; !from_stats && i < src.n; i += NT) {
          const uint32_t k = key_of(src.val(i));
          if ((k & mask) == prefix) atomicAdd(&sh.cnt[(k >> sh_bits) & 255u], 1u);
        }
        __syncthreads();
        // the bin: the highest one whose count with those above reaches k_rem (a parallel suffix
        // scan; thread j holds bin 255 - j)
        const uint32_t c = tid < 256 ? sh.cnt[255 - tid] : 0u;
        if (tid == 0) {  // no bin reaches it (cannot happen: k < V, no NaN here): keep everything
          sh.select_prefix = 0u;
          sh.select_mask = 0u;
          sh.done = 1;
          sh.bcast = k_rem;
          sh.gather = 0;
        }
        const uint64_t incl = suffix256<NT>(c, sh);
        if (tid < 256 && incl - c < uint64_t(k_rem) && uint64_t(k_rem) <= incl) {
          const uint32_t bin = uint32_t(255 - tid), cum = uint32_t(incl - c);
          sh.select_prefix = prefix | (bin << sh_bits);
          sh.select_mask = mask | (255u << sh_bits);
          // every key of the bin is kept when the bin holds exactly the remaining count
          sh.done = c == k_rem - cum;
          sh.bcast = k_rem - cum;
          // after the first level, the keys in this bin and above (a superset of what is kept)
          // move to shared memory when they fit: later levels and the draw read only them
          sh.gather = level == 3 && incl <= uint64_t(kCand);
        }
        __syncthreads();
        prefix = sh.select_prefix;
        mask = sh.select_mask;
        k_rem = uint32_t(sh.bcast);
        const int done = sh.done, move = sh.gather;
        __syncthreads();
        if (move) src = gather<NT>(z, V, prefix, sh);  // prefix = bin << 24 here
        if (done) break;
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
        // the split variant's phase A2 measured the first level of rows without top-k
        const bool from_ws = p.split && level == 3 && tau == 0 && src.idx == nullptr && p.split[row].mass_ready;
        for (int i = tid; i < 256; i += NT) {
          sh.mass[i] = from_ws ? p.split[row].pmass[i] : 0;
          sh.cnt[i] = from_ws ? p.split[row].pcnt[i] : 0;
        }
        for (int i = tid; i < 256 * kRep; i += NT) {
          sh.hlo[i] = 0;
          sh.hhi[i] = 0;
        }
        __syncthreads();
        uint64_t total = 0;
        const uint32_t copy = uint32_t(tid) & uint32_t(kRep - 1);
        for (int64_t i = tid; !from_ws && i < src.n; i += NT) {
          const float x = src.val(i);
          const uint32_t k = key_of(x);
          if (k < tau || (k & mask) != prefix) continue;
          const uint32_t w = sample_weight(x, m, T);
          const uint32_t bin = (k >> sh_bits) & 255u;
          if (w) add_mass(&sh.hlo[bin * kRep + copy], &sh.hhi[bin * kRep + copy], w);
          if (level == 3) atomicAdd(&sh.cnt[bin], 1u);
          total += w;
        }
        if (level == 3) thr = top_p_threshold(cfg.top_p, from_ws ? p.split[row].ptotal : block_sum_u64<NT>(total, sh));
        __syncthreads();
        if (!from_ws)
          for (int i = tid; i < 256; i += NT) {
            uint64_t t = 0;
            for (int r = 0; r < kRep; ++r) t += (uint64_t(sh.hhi[i * kRep + r]) << 32) | sh.hlo[i * kRep + r];
            sh.mass[i] = t;
          }
        __syncthreads();
        // the bin: the highest one where the mass from the top reaches thr (parallel suffix scans
        // of masses and counts; thread j holds bin 255 - j)
        const uint64_t ms = tid < 256 ? sh.mass[255 - tid] : 0;
        const uint64_t cs = tid < 256 ? sh.cnt[255 - tid] : 0;
        if (tid == 0) {  // no bin reaches it: the prefix stays, the levels end
          sh.select_prefix = prefix;
          sh.select_mask = mask;
          sh.bcast = acc;
          sh.done = 1;
          sh.gather = 0;
        }
        const uint64_t incl = acc + suffix256<NT>(ms, sh);
        const uint64_t n_ge = suffix256<NT>(cs, sh);
        if (tid < 256 && double(incl) >= thr && (tid == 0 || !(double(incl - ms) >= thr))) {
          sh.select_prefix = prefix | (uint32_t(255 - tid) << sh_bits);
          sh.select_mask = mask | (255u << sh_bits);
          sh.bcast = incl - ms;
          sh.done = 0;
          // first level over the row: the keys >= max(tau, bin << 24) move to shared memory when they fit
          sh.gather = level == 3 && src.idx == nullptr && n_ge <= uint64_t(kCand);
        }
        __syncthreads();
        prefix = sh.select_prefix;
        mask = sh.select_mask;
        acc = sh.bcast;
        const int done = sh.done, move = sh.gather;
        __syncthreads();
        if (move) src = gather<NT>(z, V, prefix > tau ? prefix : tau, sh);
        if (done) break;
      }
      if (prefix > tau) tau = prefix;
    }
    if (p.split && src.idx == nullptr) {  // the split variant draws from the row with many CTAs
      if (tid == 0) {
        p.split[row].tau = tau;
        p.split[row].deferred = 1;
      }
      return;
    }
    const bool use_min_p = cfg.min_p > 0.0f;
    const double min_thr = min_p_threshold(cfg.min_p);
    // ---- draw: chunk sums in index order, exclusive scan, one thread walks its chunk
    int64_t c0, c1;
    chunk_of<NT>(src.n, c0, c1);
    uint64_t mine = 0;
    for (int64_t i = c0; i < c1; ++i) {
      const float x = src.val(i);
      if (key_of(x) < tau) continue;
      const uint32_t w = sample_weight(x, m, T);
      if (use_min_p && double(w) < min_thr) continue;
      mine += w;
    }
    sh.scan[tid] = mine;
    const uint64_t S = scan_exclusive<NT>(sh);
    if (tid == 0) {
      sh.bcast = scale_draw(draw64(p.seeds[row], p.steps[row]), S);
      sh.select_prefix = argmax;
    }
    __syncthreads();
    const uint64_t target = sh.bcast, excl = sh.scan[tid];
    __syncthreads();
    if (mine && excl <= target && target < excl + mine) {
      uint64_t run = excl;
      for (int64_t i = c0; i < c1; ++i) {
        const float x = src.val(i);
        if (key_of(x) < tau) continue;
        const uint32_t w = sample_weight(x, m, T);
        if (use_min_p && double(w) < min_thr) continue;
        run += w;
        if (run > target) {
          sh.select_prefix = uint32_t(src.index(i));
          sh.bcast = w;
          break;
        }
      }
    }
    __syncthreads();
    token = int32_t(sh.select_prefix);
    logprob = float(log(double(sh.bcast) / double(S)));
  }
  if (tid == 0) {
    p.tokens[row] = token;
    if (p.flags) p.flags[row] = flags;
    if (p.logprobs) p.logprobs[row] = logprob;
    p.steps[row] = p.steps[row] + 1;
  }
}

// ---- the split variant's chunk phases (grid: chunks x rows) -----------------------------------
constexpr int kSplitThreads = 256;

__device__ __forceinline__ void chunk_range(const SampleParams& p, int64_t& v0, int64_t& v1) {
  const int64_t ch = (p.vocab + p.chunks - 1) / p.chunks;
  v0 = int64_t(blockIdx.x) * ch;
  if (v0 > p.vocab) v0 = p.vocab;
  v1 = v0 + ch < p.vocab ? v0 + ch : p.vocab;
}

// Phase A: the chunk's max / lowest argmax / flags and key-byte counts, merged with order-free
// integer atomics into the row's workspace (cleared before).
__global__ void __launch_bounds__(kSplitThreads) split_stats_kernel(SampleParams p) {
  __shared__ uint32_t hist[256];
  __shared__ uint64_t red[kSplitThreads / 32];
  const int64_t row = blockIdx.y;
  const int tid = threadIdx.x;
  const float* z = p.logits + row * p.logits_stride;
  int64_t v0, v1;
  chunk_range(p, v0, v1);
  for (int i = tid; i < 256; i += kSplitThreads) hist[i] = 0;
  __syncthreads();
  uint64_t best = 0;
  int fl = 0;
  for (int64_t v = v0 + tid; v < v1; v += kSplitThreads) {
    const float x = z[v];
    const uint32_t k = key_of(x);
    atomicAdd(&hist[k >> 24], 1u);
    if (is_nan(x)) { fl |= MLOPS_SAMPLE_FLAG_NAN; continue; }
    if (k == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
    const uint64_t b = pack_best(k, uint32_t(v));
    best = b > best ? b : best;
  }
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    const uint64_t o = __shfl_xor_sync(kFull, best, off);
    best = o > best ? o : best;
  }
  if ((tid & 31) == 0) red[tid >> 5] = best;
  const int any_nan = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_NAN);
  const int any_inf = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_POSINF);
  SplitRow& ws = p.split[row];
  for (int i = tid; i < 256; i += kSplitThreads)
    if (hist[i]) atomicAdd(&ws.hist[i], hist[i]);
  if (tid == 0) {
    for (int i = 1; i < kSplitThreads / 32; ++i) best = red[i] > best ? red[i] : best;
    if (best) atomicMax(reinterpret_cast<unsigned long long*>(&ws.best), (unsigned long long)best);
    const int f = (any_nan ? MLOPS_SAMPLE_FLAG_NAN : 0) | (any_inf ? MLOPS_SAMPLE_FLAG_POSINF : 0);
    if (f) atomicOr(&ws.flags, f);
  }
}

// Phase A2: top-p's first level for rows that sample with top-p and without top-k: each chunk's
// weight and count per key byte and its total weight, merged with integer atomics.
__global__ void __launch_bounds__(kSplitThreads) split_mass_kernel(SampleParams p) {
  __shared__ uint32_t hlo[256 * kRep], hhi[256 * kRep];
  __shared__ uint32_t cnt[256];
  __shared__ uint64_t red[kSplitThreads / 32];
  const int64_t row = blockIdx.y;
  const int tid = threadIdx.x;
  SplitRow& ws = p.split[row];
  const mlops_sample_config cfg = sanitize(p.configs[row]);
  if (config_greedy(cfg) || !(cfg.top_p < 1.0f) || (cfg.top_k > 0 && int64_t(cfg.top_k) < p.vocab)) return;
  const uint64_t best = ws.best;
  if (ws.flags || best == 0 || best_key(best) <= kKeyNegInf) return;  // such rows are greedy
  const float m = float_of_key(best_key(best));
  const Temperature T = temperature_of(cfg.temperature);
  const float* z = p.logits + row * p.logits_stride;
  int64_t v0, v1;
  chunk_range(p, v0, v1);
  for (int i = tid; i < 256; i += kSplitThreads) cnt[i] = 0;
  for (int i = tid; i < 256 * kRep; i += kSplitThreads) {
    hlo[i] = 0;
    hhi[i] = 0;
  }
  __syncthreads();
  uint64_t total = 0;
  const uint32_t copy = uint32_t(tid) & uint32_t(kRep - 1);
  for (int64_t v = v0 + tid; v < v1; v += kSplitThreads) {
    const float x = z[v];
    const uint32_t k = key_of(x);
    const uint32_t w = sample_weight(x, m, T);
    if (w) add_mass(&hlo[(k >> 24) * kRep + copy], &hhi[(k >> 24) * kRep + copy], w);
    atomicAdd(&cnt[k >> 24], 1u);
    total += w;
  }
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) total += __shfl_xor_sync(kFull, total, off);
  if ((tid & 31) == 0) red[tid >> 5] = total;
  __syncthreads();
  for (int i = tid; i < 256; i += kSplitThreads) {
    uint64_t mass = 0;
    for (int r = 0; r < kRep; ++r) mass += (uint64_t(hhi[i * kRep + r]) << 32) | hlo[i * kRep + r];
    if (mass) atomicAdd(reinterpret_cast<unsigned long long*>(&ws.pmass[i]), (unsigned long long)mass);
    if (cnt[i]) atomicAdd(&ws.pcnt[i], cnt[i]);
  }
  if (tid == 0) {
    for (int i = 1; i < kSplitThreads / 32; ++i) total += red[i];
    atomicAdd(reinterpret_cast<unsigned long long*>(&ws.ptotal), (unsigned long long)total);
    ws.mass_ready = 1;
  }
}

// The kept weight of one element of a deferred row (phase B's threshold, min-p).
struct KeptWeight {
  float m;
  Temperature t;
  uint32_t tau;
  bool use_min_p;
  double min_thr;
  __device__ __forceinline__ uint32_t operator()(float x) const {
    if (key_of(x) < tau) return 0u;
    const uint32_t w = sample_weight(x, m, t);
    return use_min_p && double(w) < min_thr ? 0u : w;
  }
};

__device__ __forceinline__ KeptWeight kept_weight_of(const SampleParams& p, int64_t row) {
  const mlops_sample_config cfg = sanitize(p.configs[row]);
  KeptWeight k;
  k.m = float_of_key(best_key(p.split[row].best));
  k.t = temperature_of(cfg.temperature);
  k.tau = p.split[row].tau;
  k.use_min_p = cfg.min_p > 0.0f;
  k.min_thr = min_p_threshold(cfg.min_p);
  return k;
}

// Phase C: each chunk's sum of kept weights (exact integers).
__global__ void __launch_bounds__(kSplitThreads) split_sum_kernel(SampleParams p) {
  __shared__ uint64_t red[kSplitThreads / 32];
  const int64_t row = blockIdx.y;
  if (!p.split[row].deferred) return;
  const KeptWeight kw = kept_weight_of(p, row);
  const float* z = p.logits + row * p.logits_stride;
  int64_t v0, v1;
  chunk_range(p, v0, v1);
  uint64_t s = 0;
  for (int64_t v = v0 + threadIdx.x; v < v1; v += kSplitThreads) s += kw(z[v]);
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) s += __shfl_xor_sync(kFull, s, off);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < kSplitThreads / 32; ++i) s += red[i];
    p.split[row].sum[blockIdx.x] = s;
  }
}

// Phase D (one CTA a row): the chunk holding floor(R * S / 2^64) is walked in index order.
__global__ void __launch_bounds__(kSplitThreads) split_draw_kernel(SampleParams p) {
  __shared__ Shared<kSplitThreads> sh;
  const int64_t row = blockIdx.x;
  const int tid = threadIdx.x;
  SplitRow& ws = p.split[row];
  if (!ws.deferred) return;
  const KeptWeight kw = kept_weight_of(p, row);
  const float* z = p.logits + row * p.logits_stride;
  if (tid == 0) {
    uint64_t S = 0;
    for (int c = 0; c < p.chunks; ++c) S += ws.sum[c];
    const uint64_t target = scale_draw(draw64(p.seeds[row], p.steps[row]), S);
    uint64_t run = 0;
    int chunk = p.chunks - 1;
    for (int c = 0; c < p.chunks; ++c) {
      if (target < run + ws.sum[c]) { chunk = c; break; }
      run += ws.sum[c];
    }
    sh.bcast = target - run;  // the target within the chosen chunk
    sh.bcast2 = S;
    sh.select_prefix = uint32_t(chunk);
  }
  __syncthreads();
  const uint64_t target = sh.bcast, S = sh.bcast2;
  const int64_t ch = (p.vocab + p.chunks - 1) / p.chunks;
  const int64_t base = int64_t(sh.select_prefix) * ch;
  const int64_t n = (base + ch < p.vocab ? base + ch : p.vocab) - base;
  int64_t c0, c1;
  chunk_of<kSplitThreads>(n, c0, c1);
  uint64_t mine = 0;
  for (int64_t i = c0; i < c1; ++i) mine += kw(z[base + i]);
  __syncthreads();
  sh.scan[tid] = mine;
  scan_exclusive<kSplitThreads>(sh);
  const uint64_t excl = sh.scan[tid];
  if (tid == 0) sh.select_mask = best_index(ws.best);
  __syncthreads();
  if (mine && excl <= target && target < excl + mine) {
    uint64_t run = excl;
    for (int64_t i = c0; i < c1; ++i) {
      const uint32_t w = kw(z[base + i]);
      run += w;
      if (w && run > target) {
        sh.select_mask = uint32_t(base + i);
        sh.red[0] = w;
        break;
      }
    }
  }
  __syncthreads();
  if (tid == 0) {
    p.tokens[row] = int32_t(sh.select_mask);
    if (p.flags) p.flags[row] = 0;
    if (p.logprobs) p.logprobs[row] = float(log(double(sh.red[0]) / double(S)));
    p.steps[row] = p.steps[row] + 1;
  }
}

// Penalties, step 1: count each history token (into a zeroed workspace).
__global__ void penalty_count_kernel(SampleParams p) {
  const int64_t row = blockIdx.y;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= history_length(p, row) || !config_has_penalty(sanitize(p.configs[row]))) return;
  const int32_t t = p.history[row * p.history_stride + i];
  if (t >= 0 && t < p.vocab) atomicAdd(p.penalty_counts + row * p.vocab + t, 1);
}

// Step 2: the one thread that takes a token's count back to zero applies the penalty once.
__global__ void penalty_apply_kernel(SampleParams p) {
  const int64_t row = blockIdx.y;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const mlops_sample_config cfg = sanitize(p.configs[row]);
  if (i >= history_length(p, row) || !config_has_penalty(cfg)) return;
  const int32_t t = p.history[row * p.history_stride + i];
  if (t < 0 || t >= p.vocab) return;
  const int32_t c = atomicExch(p.penalty_counts + row * p.vocab + t, 0);
  if (c > 0) p.logits[row * p.logits_stride + t] = penalize(p.logits[row * p.logits_stride + t], c, cfg);
}

}  // namespace
}  // namespace mlops::vocab
