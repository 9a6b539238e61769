// The sampler's cluster kernel: what a CTA does with its own slice of the row. The staging (the slice into
// shared memory, the max measured on the way) and the candidate lists (the slice's elements at or above a
// round's bound, by value or by slice index).
#pragma once
#include "sample_cluster_shared.cuh"

namespace mlops::vocab {
namespace {

// Moves the slice's elements with key >= lo to shared memory (unordered: only histograms read
// them). cand_n ends as their count, larger than kClusterCand when they did not fit.
// hi (the wide forms): only keys <= hi, the elements of one bin.
// IDX (the tk forms): the list holds each element's slice index (its bits in cand) instead of its
// value, which stays at zs[index] (the tk forms never rewrite the staged slice while a list is read).
template <int NT, class Z, bool IDX = false>
__device__ void build_candidates(const Z& z, int64_t v0, int64_t v1, uint32_t lo, ClusterShared<NT>& sh,
                                 uint32_t hi = 0xffffffffu) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  if (tid == 0) sh.cand_n = 0;
  __syncthreads();
  // an element x at or above lo (and at most hi) goes to the list
  auto list = [&](bool in, float x, uint32_t li) {
    const uint32_t k = key_of(x);
    const bool on = in && k >= lo && k <= hi;
    const unsigned ball = __ballot_sync(kFull, on);
    if (!ball) return;
    uint32_t at = 0;
    if (lane == 0) at = atomicAdd(&sh.cand_n, uint32_t(__popc(ball)));
    at = __shfl_sync(kFull, at, 0) + uint32_t(__popc(ball & ((1u << lane) - 1u)));
    if (on && at < uint32_t(kClusterCand)) sh.cand[at] = IDX ? bits_f32(li) : x;
  };
  if (v1 - v0 < int64_t(1) << 30) {  // every slice of a real row: 32-bit index arithmetic (run 51's ncu: the
    const int n = int(v1 - v0);      // 64-bit loop was 11 % of top-p's instructions at B = 64)
    for (int base = tid & ~31; base < n; base += NT) {  // warp-uniform trip count
      const int i = base + int(lane);
      list(i < n, i < n ? z(v0 + i) : 0.0f, uint32_t(i));
    }
  } else {
    for (int64_t base = v0 + (tid & ~31); base < v1; base += NT) {
      const int64_t i = base + lane;
      list(i < v1, i < v1 ? z(i) : 0.0f, uint32_t(i - v0));
    }
  }
  __syncthreads();
}

// build_candidates<IDX> of the tk forms on the staged slice zs (n < 2^30 elements, 16-byte aligned): a
// lane tests 4 elements of one 16-byte load and a warp pushes (ballot, one atomic) only where one of
// its 128 is listed (~0.4 % of the elements at top-k 50 on N(0, 3^2) logits), where build_candidates
// pushes every element. The same elements listed (the list is unordered: every reader counts, sums,
// or orders by index); cand_n the same.
template <int NT>
__device__ void build_candidates_tk(const float* zs, int n, uint32_t lo, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  if (tid == 0) sh.cand_n = 0;
  __syncthreads();
  auto push = [&](bool on, int li) {  // the whole warp calls it
    const unsigned ball = __ballot_sync(kFull, on);
    if (!ball) return;
    uint32_t at = 0;
    if (lane == 0) at = atomicAdd(&sh.cand_n, uint32_t(__popc(ball)));
    at = __shfl_sync(kFull, at, 0) + uint32_t(__popc(ball & ((1u << lane) - 1u)));
    if (on && at < uint32_t(kClusterCand)) sh.cand[at] = bits_f32(uint32_t(li));
  };
  const int n4 = n >> 2;
  const float4* s4 = reinterpret_cast<const float4*>(zs);
  for (int base = tid & ~31; base < n4; base += NT) {  // warp-uniform trip count
    const int i = base + int(lane);
    const bool in = i < n4;
    float4 x = {0.0f, 0.0f, 0.0f, 0.0f};
    if (in) x = s4[i];
    const bool o0 = in && key_of(x.x) >= lo, o1 = in && key_of(x.y) >= lo;
    const bool o2 = in && key_of(x.z) >= lo, o3 = in && key_of(x.w) >= lo;
    if (__ballot_sync(kFull, o0 || o1 || o2 || o3)) {
      push(o0, 4 * i);
      push(o1, 4 * i + 1);
      push(o2, 4 * i + 2);
      push(o3, 4 * i + 3);
    }
  }
  if (tid < 32) {  // the last n % 4 elements
    const int i = 4 * n4 + int(lane);
    push(i < n && key_of(zs[i < n ? i : 0]) >= lo, i);
  }
  __syncthreads();
}

// build_candidates on the staged slice zs (n < 2^30 elements, 16-byte aligned), keys in [lo, hi]: a lane
// tests 4 elements of one 16-byte load, and a warp whose 128 elements hold listed ones takes their places
// with one shared atomic (the 4 ballots' count), then writes each at the offset its ballot gives. Until
// session 34 such a warp pushed the 4 elements one after the other (ballot, atomic, shuffle each): a chain
// of 4 dependent atomics on cand_n (GPU run 189, B = 1: the wide round's listing 4675 -> 3833 cycles of
// cluster16_wide's 40 500). Two passes (a warp's count, one atomic a warp, the writes) were slower (run 188,
// against run 187 on another machine: top-k's listing 3480 -> 4018 cycles: each pass's key tests cost as
// much as the chain). Used by the wide round (WIDE / TP forms) only. The same elements listed
// (the list is unordered: every reader counts, sums, or orders by index, and the order was the atomics'
// before), cand_n the same. IDX (the tk forms): the list holds each element's slice index (its bits in
// cand) instead of its value, which stays at zs[index] (the tk forms never rewrite the staged slice while
// a list is read).
// MLOPS_SAMPLE_LIST_FLOAT (session 48): a listing without an upper bound (the tk forms', the wide round's) tests an
// element by one float compare against lo's float (FSETP) instead of its key (ISETP, LOP3, a predicated LOP3, ISETP: 16
// of the ~90 SASS instructions of a lane's 4-element trip in cluster16_tk). The same elements: a listed slice holds no
// NaN and no +inf (the max phase flags such a row, which never lists), and for the other floats x >= float_of_key(lo)
// is key_of(x) >= lo, but for -0.0 against +0.0's key, which takes the key's test; lo at or below -inf's key is -inf.
// 0: the key's test.
#ifndef MLOPS_SAMPLE_LIST_FLOAT
#define MLOPS_SAMPLE_LIST_FLOAT 1
#endif
template <int NT, bool IDX, class In>
__device__ __forceinline__ void list_staged(const float* zs, int n, const In& in, ClusterShared<NT>& sh);
template <int NT, bool IDX>
__device__ void build_candidates_staged(const float* zs, int n, uint32_t lo, ClusterShared<NT>& sh,
                                        uint32_t hi = 0xffffffffu) {
  if (threadIdx.x == 0) sh.cand_n = 0;
  __syncthreads();  // after every earlier read of cand_n / cand
  // the test of a key in [lo, hi]: by the key, or (MLOPS_SAMPLE_LIST_FLOAT) by a float compare
  auto by_key = [&](float x) {
    const uint32_t k = key_of(x);
    return k >= lo && k <= hi;
  };
  const float xlo = float_of_bound(lo);
  auto by_float = [&](float x) { return x >= xlo; };
  if (MLOPS_SAMPLE_LIST_FLOAT && hi == 0xffffffffu && lo != kKeyPosZero)
    list_staged<NT, IDX>(zs, n, by_float, sh);
  else
    list_staged<NT, IDX>(zs, n, by_key, sh);
  __syncthreads();
}

// build_candidates_staged's pass with the test in(x) of an element.
template <int NT, bool IDX, class In>
__device__ __forceinline__ void list_staged(const float* zs, int n, const In& in, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const unsigned below = (1u << lane) - 1u;  // the lanes under this one
  // up to 4 elements of a lane (on[j]: listed), their places taken by one atomic of the warp (the whole warp calls it)
  auto put = [&](const bool (&on)[4], const float (&x)[4], int li0, int stride) {
    unsigned b[4];
    uint32_t t = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      b[j] = __ballot_sync(kFull, on[j]);
      t += uint32_t(__popc(b[j]));
    }
    if (!t) return;
    uint32_t at = 0;
    if (lane == 0) at = atomicAdd(&sh.cand_n, t);
    at = __shfl_sync(kFull, at, 0);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t a = at + uint32_t(__popc(b[j] & below));
      if (on[j] && a < uint32_t(kClusterCand)) sh.cand[a] = IDX ? bits_f32(uint32_t(li0 + j * stride)) : x[j];
      at += uint32_t(__popc(b[j]));
    }
  };
  const int n4 = n >> 2;
  const float4* s4 = reinterpret_cast<const float4*>(zs);
  for (int base = tid & ~31; base < n4; base += NT) {  // warp-uniform trip count
    const int i = base + int(lane);
    const bool inb = i < n4;
    float4 v = {0.0f, 0.0f, 0.0f, 0.0f};
    if (inb) v = s4[i];
    const float x[4] = {v.x, v.y, v.z, v.w};
    const bool on[4] = {inb && in(v.x), inb && in(v.y), inb && in(v.z), inb && in(v.w)};
    put(on, x, 4 * i, 1);
  }
  if (tid < 32) {  // the last n % 4 elements
    const int i = 4 * n4 + int(lane);
    const float x[4] = {i < n ? zs[i] : 0.0f, 0.0f, 0.0f, 0.0f};
    const bool on[4] = {i < n && in(x[0]), false, false, false};
    put(on, x, i, 0);
  }
}

// The tk forms' list of the slice's elements at or above lo (slice indices). MLOPS_SAMPLE_TK_STAGED_LIST (session 44,
// off by default): build_candidates_staged's pass (one shared atomic a warp for its 4 ballots) instead of
// build_candidates_tk's (a ballot, an atomic and a shuffle an element of a warp's 4, one after the other, where one of
// its 128 is listed). The wide round took the former in session 34 (GPU run 189, B = 1: 4675 -> 3833 cycles); the tk
// forms kept theirs then, as run 189's B = 64 top-k row came out slower with it and the warps' gather together (~1000
// of the +1350 cycles in the unchanged staging). The same elements listed, cand_n the same. Since session 46 the
// macro is the smallest cluster that takes it (1: every one, as its "on" was; 0: none), as MLOPS_SAMPLE_TK_WARPS_GATHER,
// and 16 by default (B = 1's cluster16_tk; session 44 found B = 8's cluster8_tk +0.7 us with it): GPU run 229 (an H100,
// four paired rounds) B = 1 top-k 16.27 -> 16.04 us, the combination 18.18 -> 17.97, the listing 1.78 -> 1.72 us.
// The host runner's clusters take it only where a test builds it with 1.
#ifndef MLOPS_SAMPLE_TK_STAGED_LIST
#define MLOPS_SAMPLE_TK_STAGED_LIST 16
#endif
template <int NT, int C>
__device__ __forceinline__ void tk_list(const float* zs, int n, uint32_t lo, ClusterShared<NT>& sh) {
  if constexpr (MLOPS_SAMPLE_TK_STAGED_LIST > 0 && C >= MLOPS_SAMPLE_TK_STAGED_LIST)
    build_candidates_staged<NT, true>(zs, n, lo, sh);
  else
    build_candidates_tk<NT>(zs, n, lo, sh);
}

// MLOPS_SAMPLE_EARLY_STAGE (session 45; on by default since GPU runs 220 / 221, H100s): the staged forms' copy of the
// slice's 16-byte groups issued as cp.async at the kernel's start, before the row's configuration, step and history
// length are read (~700 cycles before the staging began in run 218's B = 1 probe, the loads of the staging waiting
// behind them), with no register held: stage_slice then measures from shared memory. A thread reads back only the
// groups it copied (the same i = tid mod NT), so its own cp.async.wait_all orders them; the penalties that change the
// row wait for every copy first (a block barrier) and patch zs as they write the row, or have the slice loaded again
// (the cluster-wide count). Run 220's probe (B = 1, the kernels' end): temperature 6.84 -> 6.29 us, top-k 13.72 ->
// 13.13, top-p 16.67 -> 16.24, penalties + top-p 17.85 -> 17.53 (the staging done at 1.58 us where it was at 2.12); the
// bench's B = 1 calls -0.4 to -1.1 us, B = 8 -0.4 to -2.1; the global-slice forms (no staged slice) unchanged. One
// cp.async.bulk by thread 0 on an mbarrier instead (run 221) staged later (1.97 us: one copy engine's stream against
// 512 threads' requests) and was not kept. -D...=0: the staging's own loads after those reads, as before.
#ifndef MLOPS_SAMPLE_EARLY_STAGE
#define MLOPS_SAMPLE_EARLY_STAGE 1
#endif
// Issues the copies of the slice's 16-byte groups (n >> 2 of them, from src = z + v0) into zs and returns their count,
// or 0 (nothing issued) when src is not 16-byte aligned. The host runner copies at once.
template <int NT>
__device__ __forceinline__ int64_t stage_issue(const float* src, int64_t n, float* zs) {
  if ((reinterpret_cast<uintptr_t>(src) & 15u) != 0) return 0;
  const int64_t n4 = n >> 2;
  for (int64_t i = threadIdx.x; i < n4; i += NT) {
#if defined(MLOPS_CUDA_ON_HOST)
    reinterpret_cast<float4*>(zs)[i] = reinterpret_cast<const float4*>(src)[i];
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(unsigned(__cvta_generic_to_shared(zs + 4 * i))),
                 "l"(src + 4 * i)
                 : "memory");
#endif
  }
  return n4;
}
// Waits for this thread's copies (stage_issue's), which a thread reads back itself; other threads' copies need a block
// barrier after every thread's wait.
__device__ __forceinline__ void stage_wait() {
#if !defined(MLOPS_CUDA_ON_HOST)
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// The staged form: the CTA's slice [v0, v1) of the (penalized) row is copied into dynamic shared
// memory in one pass of independent 16-byte loads (U a thread issued before the first is used: one
// L2 round trip where the scalar loop of `#pragma unroll 4` waits ~slice / (4 NT) times), the max /
// lowest argmax / flags measured from the registers on the way (measure = false with the head's
// statistics), so every later pass (logprob, radix rounds, candidates, draw, walk) reads shared
// memory. The same values at the same indices as the global reads: the same token. A slice that is
// not 16-byte aligned (a row stride or V / C not a multiple of 4) takes the scalar loads.
// V4 (the lean forms): the aligned path stores each 16-byte load as one 16-byte shared store (the
// four scalar stores of a float4 at a 16-byte stride are a 4-way bank conflict: 3.6-way measured by
// ncu in run 19 on cluster16_smem).
// hist (the tk forms, a top-k row measured here): each element's key also counted per top byte into
// the 8 copies of a round's histogram (zeroed before): top-k's first round, in the staging pass.
// STORE = false (the global-slice forms, GSL): the pass measures (and counts) only; zs is the slice itself in global
// memory (z + v0), which the NaN path reads again.
// pre4 > 0 (MLOPS_SAMPLE_EARLY_STAGE): the slice's 16-byte groups are in zs already (stage_issue), read from there.
template <int NT, bool V4 = false, bool STORE = true>
__device__ __forceinline__ void stage_slice(const float* z, int64_t v0, int64_t v1, float* zs, bool measure,
                                            uint64_t& best, int& fl, uint32_t* hist = nullptr, int64_t pre4 = 0) {
  constexpr int U = 8;
  const int tid = threadIdx.x;
  const int64_t n = v1 - v0;
  const float* src = z + v0;
  // element i of the slice, measured exactly: a NaN flags and is skipped, +inf flags, the max key with
  // its lowest index
  auto exact = [&](float x, int64_t i) {
    if (is_nan(x)) {
      fl |= MLOPS_SAMPLE_FLAG_NAN;
      return;
    }
    const uint32_t k = key_of(x);
    if (k == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
    const uint64_t b = pack_best(k, uint32_t(v0 + i));
    best = b > best ? b : best;
  };
  // On the way only the thread's largest and smallest keys and the first index of the largest (a thread
  // meets its elements in increasing index order): 6 instructions an element where exact() takes ~13 with
  // its 64-bit compare (run 51's ncu: the staging was a third of temperature's instructions at B = 64). A
  // NaN's key lies above +inf's (sign clear) or below -inf's (sign set), so kmax / kmin see any; a thread
  // that met one measures its elements again exactly from the staged copy, so best and fl are exact's.
  uint32_t kmax = 0u, kmin = 0xffffffffu;
  int imax = -1;
  auto take = [&](float x, int64_t i, bool stored) {
    if (STORE && !stored) zs[i] = x;
    if (!measure) return;
    const uint32_t k = key_of(x);
    if (hist) atomicAdd(&hist[(k >> 24) * kRep + (unsigned(tid) & unsigned(kRep - 1))], 1u);
    if (k > kmax) {
      kmax = k;
      imax = int(i);
    }
    kmin = k < kmin ? k : kmin;
  };
  int64_t done = 0;
  if (STORE && pre4 > 0) {  // in zs already: this thread's own copies (the same i = tid mod NT)
    stage_wait();
    const float4* s4 = reinterpret_cast<const float4*>(zs);
    for (int64_t i = tid; i < pre4; i += NT) {
      const float4 r = s4[i];
      take(r.x, 4 * i, true);
      take(r.y, 4 * i + 1, true);
      take(r.z, 4 * i + 2, true);
      take(r.w, 4 * i + 3, true);
    }
    done = 4 * pre4;
  } else if ((reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
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
        if (V4 && STORE && i < n4) reinterpret_cast<float4*>(zs)[i] = r[u];
        if (i < n4) {
          take(r[u].x, 4 * i, V4);
          take(r[u].y, 4 * i + 1, V4);
          take(r[u].z, 4 * i + 2, V4);
          take(r[u].w, 4 * i + 3, V4);
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
      if (i < n) take(r[u], i, false);
    }
  }
  if (!measure || (imax < 0 && kmin == 0xffffffffu)) return;  // the thread met no element
  if (kmax > kKeyPosInf || kmin < kKeyNegInf) {  // a NaN (key 0 too): this thread's elements again, exactly
    for (int64_t i4 = tid; 4 * i4 < done; i4 += NT)
      for (int c = 0; c < 4; ++c) exact(zs[4 * i4 + c], 4 * i4 + c);
    for (int64_t i = done + tid; i < n; i += NT) exact(zs[i], i);
    return;
  }
  if (kmax == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
  const uint64_t b = pack_best(kmax, uint32_t(v0 + imax));
  best = b > best ? b : best;
}

}  // namespace
}  // namespace mlops::vocab
