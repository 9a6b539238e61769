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
constexpr int kGather = 2048;  // the gather forms: candidates of the whole cluster a CTA holds

// A phase timeline for bench/sample_timeline_probe.cu, which defines MLOPS_SAMPLE_TIMELINE before including
// this file: thread 0 of each CTA of row 0 stores %clock64 at the numbered points of sample_cluster_kernel
// (0 start, 1 penalties, 2 staged, 3 max, 4 top-k's first round, 5 its list gathered, 6 top-k done, 7 the
// wide top-p round, 8 top-p done, 9 drawn, 10 end). Compiled out everywhere else.
// And every row's span (session 36, GPU run 197: a round of 30 rows at B = 64 took ~42 us while row 0 took 28):
// %globaltimer (ns, one clock for every SM) of the row's first CTA start (atomicMin; the probe sets ~0 first) and its
// last CTA end (atomicMax), rows 0 .. 63.
#if defined(MLOPS_SAMPLE_TIMELINE) && !defined(MLOPS_CUDA_ON_HOST)
__device__ unsigned long long g_sample_timeline[16][16];  // declared in both passes: the probe reads it
__device__ unsigned long long g_sample_rows[64][2];
#endif
#if defined(MLOPS_SAMPLE_TIMELINE) && defined(MLOPS_SAMPLE_CLUSTER_BODY) && !defined(MLOPS_CUDA_ON_HOST)
#define MLOPS_SAMPLE_MARK(i)                                                              \
  do {                                                                                    \
    if (threadIdx.x == 0 && blockIdx.y == 0) {                                            \
      unsigned long long t_;                                                              \
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(t_)::"memory");                        \
      g_sample_timeline[cluster_rank()][i] = t_;                                          \
    }                                                                                     \
  } while (0)
// i = 0: the row's start (the earliest CTA's), 1: its end (the latest CTA's)
#define MLOPS_SAMPLE_ROW_SPAN(i)                                                          \
  do {                                                                                    \
    if (threadIdx.x == 0 && blockIdx.y < 64) {                                            \
      unsigned long long t_;                                                              \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_)::"memory");                    \
      if ((i) == 0)                                                                       \
        atomicMin(&g_sample_rows[blockIdx.y][0], t_);                                     \
      else                                                                                \
        atomicMax(&g_sample_rows[blockIdx.y][1], t_);                                     \
    }                                                                                     \
  } while (0)
#else
#define MLOPS_SAMPLE_MARK(i) \
  do {                       \
  } while (0)
#define MLOPS_SAMPLE_ROW_SPAN(i) \
  do {                           \
  } while (0)
#endif

#if defined(MLOPS_SAMPLE_CLUSTER_BODY) && !defined(MLOPS_CUDA_ON_HOST)
__device__ __forceinline__ unsigned cluster_rank() { return cooperative_groups::this_cluster().block_rank(); }
__device__ __forceinline__ void cluster_sync() { cooperative_groups::this_cluster().sync(); }
template <class T>
__device__ __forceinline__ T* cluster_map(T* local, unsigned rank) {
  return cooperative_groups::this_cluster().map_shared_rank(local, rank);
}
// The lean forms' cluster barrier for exchanges through shared memory only. this_cluster().sync()
// releases every state space: MEMBAR.ALL.GPU before the arrive (nvcc 13.0, sm_90), a wait for the
// thread's memory operations to reach GPU scope at each of a call's 3 - 11 barriers. Here the
// release is restricted to this CTA's shared memory (MEMBAR.ALL.CTA) and the arrive is relaxed;
// the wait acquires as usual. Global writes before it are NOT ordered for the other CTAs (the
// penalties' barriers keep cluster_sync). nvcc before 12.8 lacks the restricted fence: the full one.
__device__ __forceinline__ void cluster_arrive_smem() {
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)
  asm volatile("fence.release.sync_restrict::shared::cta.cluster;" ::: "memory");
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
#else
  __cluster_barrier_arrive();
#endif
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait;" ::: "memory"); }
// The lean forms' reads of another CTA's shared memory: mapa + ld.shared::cluster on 32-bit
// addresses, as volatile asm so the address is formed at the read. Through map_shared_rank's
// generic pointers nvcc 13.0 hoisted all 16 CTAs' 64-bit addresses out of the rounds' loops and
// spilled them (288 bytes of spill stores in the cluster16 gather kernel at 64 registers).
template <class T>
__device__ __forceinline__ T remote_load(const T* local, unsigned rank) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4 or 8 bytes");
  const uint32_t a = uint32_t(__cvta_generic_to_shared(local));
  uint32_t ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
  T t;
  if constexpr (sizeof(T) == 4) {
    uint32_t v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(ra) : "memory");
    memcpy(&t, &v, 4);
  } else {
    uint64_t v;
    asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(ra) : "memory");
    memcpy(&t, &v, 8);
  }
  return t;
}
__device__ __forceinline__ void cluster_sync_smem() {
  cluster_arrive_smem();
  cluster_wait();
}
#endif

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)
// A read of another CTA's dynamic shared memory (the staged slice) at the place of `local` in this
// CTA's: mapa + ld.shared::cluster on the device; on the host, the same offset in block `rank`'s buffer.
template <class T>
__device__ __forceinline__ T remote_load_dyn(const T* local, unsigned rank) {
#if defined(MLOPS_CUDA_ON_HOST)
  const char* mine = reinterpret_cast<const char*>(g_dyn_shared[tl_slot].data());
  const size_t off = size_t(reinterpret_cast<const char*>(local) - mine);
  return *reinterpret_cast<const T*>(reinterpret_cast<const char*>(g_dyn_shared[rank].data()) + off);
#else
  return remote_load(local, rank);
#endif
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
  uint64_t b_best, b_mine;  // the lean forms: the cluster's max, this CTA's kept sum
  uint32_t pub_cand_n;      // the gather forms: this CTA's candidate count, published once a call
  uint32_t g_off[33];       // where each CTA's candidates start in the gathered list
  int g_n;                  // the gathered count, -1 when they do not all fit
  uint32_t pub_bound, g_bound;  // the wide forms: this CTA's list bound, the cluster's largest
  uint64_t pub_wide;            // the wide forms: the mass of this CTA's portion of the wide bins
  uint32_t b_prefix, b_mask, b_krem;
  int b_done, b_warp, b_token, b_flags;
  // the candidates: the slice's elements with key >= cand_lo, unordered (valid when cand_n <= kClusterCand)
  uint32_t cand_n;
  float cand[kClusterCand];
  // the tk / tp forms: the row's sanitized configuration and two of its tests, written by thread 0 before the
  // staging's barrier and read from here at each use after it. In registers they were live across the whole
  // kernel, and ptxas, held to 64 registers a thread by __launch_bounds__(512, 2), spilled them (session 14)
  mlops_sample_config r_cfg;
  int r_stats, r_fused;
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
template <int NT, bool IDX>
__device__ void build_candidates_staged(const float* zs, int n, uint32_t lo, ClusterShared<NT>& sh,
                                        uint32_t hi = 0xffffffffu) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const unsigned below = (1u << lane) - 1u;  // the lanes under this one
  if (tid == 0) sh.cand_n = 0;
  __syncthreads();  // after every earlier read of cand_n / cand
  auto in = [&](float x) {
    const uint32_t k = key_of(x);
    return k >= lo && k <= hi;
  };
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
  __syncthreads();
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
template <int NT, bool V4 = false>
__device__ __forceinline__ void stage_slice(const float* z, int64_t v0, int64_t v1, float* zs, bool measure,
                                            uint64_t& best, int& fl, uint32_t* hist = nullptr) {
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
    if (!stored) zs[i] = x;
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
        if (V4 && i < n4) reinterpret_cast<float4*>(zs)[i] = r[u];
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

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)
// The barrier of an exchange through shared memory: the lean forms' lighter one, or the full one.
template <bool LEAN>
__device__ __forceinline__ void exchange_sync() {
  if constexpr (LEAN) cluster_sync_smem();
  else cluster_sync();
}

// rint(exp_det(u) * 2^31), sample_weight's integer, for u in [-80, 0], straight-line (no branch, so
// the unrolled elements of a loop interleave): exp_det's reduction and polynomial, then one
// scaling. exp_det(u) = (p * 2^h) * 2^(n - h) is p * 2^n exactly while that is a normal float (n >=
// -116 here), and times 2^31 it is p * 2^(n + 31), exact too, so rint of it is the same integer.
// n by one FFMA (session 35): fmaf(u, 1/ln2, 1.5 * 2^23) lies in [2^23, 2^24), where the float step is 1, so
// it is u / ln2 rounded once to an integer, ties to even (the constant is even), and taking the constant off
// is exact. exp_det rounds twice (rintf of fl(u / ln2)); the two n differ for 57 floats u in [-80, 0], where
// the reduced argument is then ln2 wider, and the weight's integer is the same for every float u in [-80, 0]
// (checked for all of them: tests/c/sample_kernel_on_host.cpp, check_lean_weight_of_u). The sum's bits are
// 0x4B400000 + n and 0x4B400000 << 23 is 0 mod 2^32, so 2^(n + 31)'s bits (n + 158) << 23 are (bits << 23) +
// (158 << 23): one LEA, as before. Why: nvcc 13.0 (sm_90) made the rintf an FRND and int(n) an F2I, two of
// the three conversions an element (the third is the weight's F2I.U32), which run on the XU pipe at 16
// lanes a clock an SM (a warp's takes 8 cycles of a partition's); now an FFMA and an FADD where the FMUL,
// FRND and F2I were.
__device__ __forceinline__ uint32_t lean_weight_of_u(float u) {
  const float s = fmaf(u, 1.44269504088896341f, 12582912.0f);
  const float n = s - 12582912.0f;
  float r = fmaf(n, -0.693145751953125f, u);
  r = fmaf(n, -1.428606765330187045e-06f, r);
  float q = 1.9875691500e-4f;
  q = fmaf(q, r, 1.3981999507e-3f);
  q = fmaf(q, r, 8.3334519073e-3f);
  q = fmaf(q, r, 4.1665795894e-2f);
  q = fmaf(q, r, 1.6666665459e-1f);
  q = fmaf(q, r, 5.0000001201e-1f);
  q = fmaf(q * r, r, r);
  q = q + 1.0f;
  return uint32_t(rint_even(q * bits_f32((f32_bits(s) << 23) + (158u << 23))));
}

// What the lean forms need of a row to weigh its elements.
struct LeanRow {
  float m, inv, cutoff;
  float u_min;     // min-p's bound on u (lean_min_u), -inf without min-p
  uint32_t min_w;  // ceil(min_p * 2^31), 0 without min-p
};

// The weights of 4 elements (0 where `on` is false), branch-free past one test of whether any is
// live: sample_weight's value where it is kept (d >= cutoff), then min-p's filter. Why the same
// integers: a live u = (z - m) / T lies in [about -24, 0] (d >= -24 T; z <= m), and u < -80 would
// give 0 either way (exp(-80) * 2^31 < 1e-25), so u is clamped to -80 for the polynomial; a NaN u (a
// subnormal T) is not live, and sample_weight's F2I of a NaN is 0 too. min-p: u < u_min means w <
// min_p * 2^31 (lean_min_u), and w >= min_w is double(w) >= min_p * 2^31 for an integer w (the
// product is exact in double).
__device__ __forceinline__ void lean_weights4(const LeanRow& r, const float (&x)[4], const bool (&on)[4],
                                              uint32_t (&w)[4]) {
  float u[4];
  bool live[4], any = false;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float d = x[j] - r.m;
    u[j] = d * r.inv;
    live[j] = on[j] && !is_nan(x[j]) && d >= r.cutoff && u[j] >= r.u_min;
    any = any || live[j];
    w[j] = 0;
  }
  if (!any) return;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t v = lean_weight_of_u(fmaxf(u[j], -80.0f));
    w[j] = live[j] && v >= r.min_w ? v : 0u;
  }
}

// lean_weights4's weights for rows that keep few elements (lean_draw), warp by warp: a position j's exps
// are evaluated only where a lane of the warp keeps its element j. Called by the whole warp.
__device__ __forceinline__ void lean_weights_sparse4(const LeanRow& r, const float (&x)[4], const bool (&on)[4],
                                                     uint32_t (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float d = x[j] - r.m;
    const float u = d * r.inv;
    const bool live = on[j] && !is_nan(x[j]) && d >= r.cutoff && u >= r.u_min;
    w[j] = 0;
    if (__ballot_sync(kFull, live)) {
      const uint32_t v = lean_weight_of_u(fmaxf(u, -80.0f));
      w[j] = live && v >= r.min_w ? v : 0u;
    }
  }
}

// A weight into a mass histogram copy (two 32-bit words). The lean forms add its low and high 16
// bits into the two words with atomics whose result is not used (RED: nothing waits for them, where
// add_mass's carry test waits for the old value); a copy sees at most 64 threads' elements of a
// staged slice or of the candidates (< 65536 of them), so neither word wraps: the mass is
// lo + hi * 2^16, the same integer.
template <bool LEAN>
__device__ __forceinline__ void add_mass_of(uint32_t* lo, uint32_t* hi, uint32_t w) {
  if constexpr (LEAN) {
    atomicAdd(lo, w & 0xffffu);
    atomicAdd(hi, w >> 16);
  } else {
    add_mass(lo, hi, w);
  }
}
template <bool LEAN>
__device__ __forceinline__ uint64_t mass_of(uint32_t lo, uint32_t hi) {
  if constexpr (LEAN) return uint64_t(lo) + (uint64_t(hi) << 16);
  else return (uint64_t(hi) << 32) | lo;
}

// The lean forms' row: min-p's bound on u. A weight whose exponent u = (z - m) / T is below
// ln(min_p) - 0.01 is below min_p * 2^31 whatever exp_det returns (within 2 ulp: W <= 0.9901 *
// min_p * 2^31 + 0.5 < min_p * 2^31 for min_p >= 1e-6), so its exp is skipped: the same kept
// weights. logf's last bit does not matter to a bound with that margin (host and GPU may differ).
__device__ __forceinline__ LeanRow lean_row(const mlops_sample_config& cfg, float m, Temperature t) {
  LeanRow r;
  r.m = m;
  r.inv = t.inv;
  r.cutoff = t.cutoff;
  const bool mp = cfg.min_p > 0.0f;
  r.u_min = mp && cfg.min_p >= 1e-6f ? logf(cfg.min_p) - 0.01f : -__int_as_float(0x7f800000);
  r.min_w = mp ? uint32_t(ceil(min_p_threshold(cfg.min_p))) : 0u;  // <= 2^31
  return r;
}

// lean_row without min-p: top-p's masses are before min-p.
__device__ __forceinline__ LeanRow mass_row(const mlops_sample_config& cfg, float m, Temperature t) {
  LeanRow r = lean_row(cfg, m, t);
  r.u_min = -__int_as_float(0x7f800000);
  r.min_w = 0;
  return r;
}

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
template <int C, int NT, bool BOUND = false, bool IDX = false, bool WARPS = false>
__device__ __forceinline__ int gather_candidates(ClusterShared<NT>& sh, float* all, const float* zs = nullptr,
                                                 uint32_t head = 0xffffffffu) {
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
        all[i] = remote_load_dyn(&zs[li], unsigned(r));
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
              if (j0 + uint32_t(u) * step < m) v[u] = f32_bits(remote_load_dyn(&zs[v[u]], unsigned(r)));
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
// the wide rounds' passes (wide_near_pass, wide_full_pass) step through the slice this way.
template <int NT>
__device__ __forceinline__ void weigh_strided4(const LeanRow& lm, const float* zs, int n, int i0, float (&x)[4],
                                               bool (&on)[4], uint32_t (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int i = i0 + j * NT;
    x[j] = i < n ? zs[i] : 0.0f;
    on[j] = i < n;
  }
  lean_weights4(lm, x, on, w);
}

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
// Session 37's two steps after wide_near_pass, checked on the host (tests/c/sample_kernel_on_host.cpp, every
// combination) but not yet run on a GPU (no device machine was lent after run 200), so off until ci/device/s37v.sh
// (run 201's plan) times and tests them: the near elements' positions kept as a 64-bit mask a thread and listed from it
// (list_near), and the tp forms' gather of the crossing bin's entries alone (bin_first).
#define MLOPS_SAMPLE_NEAR_MASK 0
#endif
#ifndef MLOPS_SAMPLE_BIN_FIRST
#define MLOPS_SAMPLE_BIN_FIRST 0
#endif
constexpr int kNearBins = 32;               // a lane a bin (8 octaves below the max's bin)
constexpr float kNearSpan = 10.0f / 24.0f;  // of Temperature::cutoff (-24 T): down to m - 10 T
template <int C, int NT>
__device__ int wide_near_pass(const mlops_sample_config& cfg, float m, Temperature T, const float* zs, int n,
                              ClusterShared<NT>& sh, uint64_t& acc, double& thr, uint64_t& near) {
  static_assert(C <= 32 && C * 32 <= 768, "a lane a CTA; C near-bin rows fit cnt / mass (768 words)");
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const uint32_t wm = key_of(m) >> kWideShift;
  const uint32_t wl = key_of(m + kNearSpan * T.cutoff) >> kWideShift;  // m - 10 T's bin (m's for a NaN)
  const uint32_t nb = wl < wm ? (wm - wl + 1 < uint32_t(kNearBins) ? wm - wl + 1 : uint32_t(kNearBins)) : 1u;
  if (tid < kNearBins) {
    sh.hlo[tid] = 0;
    sh.hhi[tid] = 0;
  }
  __syncthreads();
  const LeanRow lm = mass_row(cfg, m, T);
  uint64_t s = 0;
  near = 0;
  int bit = 0;  // element tid + e NT is bit e of near (e < 64)
  for (int i0 = tid; i0 < n; i0 += 4 * NT, bit += 4) {  // 8 a trip (two groups of 4): -0.2 us at C = 8, +0.2 at C = 16 (GPU run 200)
    float x[4];
    bool on[4];
    uint32_t w[4];
    weigh_strided4<NT>(lm, zs, n, i0, x, on, w);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s += w[j];
      const uint32_t b = wm - (key_of(x[j]) >> kWideShift);  // a weighed element's key is at most the max's
#if MLOPS_SAMPLE_NEAR_MASK
      if (on[j] && b < nb) {
        near |= 1ull << ((bit + j) & 63);
        if (w[j]) {
          atomicAdd(&sh.hlo[b], w[j] & 0xffffu);
          atomicAdd(&sh.hhi[b], w[j] >> 16);
        }
      }
#else
      if (w[j] && b < nb) {
        atomicAdd(&sh.hlo[b], w[j] & 0xffffu);
        atomicAdd(&sh.hhi[b], w[j] >> 16);
      }
#endif
    }
  }
  s = block_sum_u64<NT>(s, sh);
  if (tid == 0) sh.pub_wide = s;
  MLOPS_SAMPLE_MARK(11);
  cluster_sync_smem();  // every CTA's near bins and sum complete
  uint64_t* red = reinterpret_cast<uint64_t*>(&sh.cnt[0][0]);  // CTA r's bin j at 32 r + j
  for (int t = tid; t < C * 32; t += NT) {
    const unsigned r = unsigned(t) >> 5, b = unsigned(t) & 31u;
    red[t] = b < nb ? mass_of<true>(remote_load(&sh.hlo[b], r), remote_load(&sh.hhi[b], r)) : uint64_t(0);
  }
  __syncthreads();
  MLOPS_SAMPLE_MARK(12);
  if (tid < 32) {  // lane j: near bin j (from the top)
    uint64_t mb = 0;
    for (int r = 0; r < C; ++r) mb += red[32 * r + int(lane)];
    const uint64_t S = warp_sum(lane < unsigned(C) ? remote_load(&sh.pub_wide, lane) : uint64_t(0));
    const double th = top_p_threshold(cfg.top_p, S);
    const uint64_t incl = warp_incl_scan(mb);  // lanes >= nb add 0: the first reaching lane is below nb
    const unsigned hit = __ballot_sync(kFull, double(incl) >= th);
    const int h = hit ? __ffs(hit) - 1 : -1;
    const uint64_t above = __shfl_sync(kFull, incl - mb, h < 0 ? 0 : h);
    if (lane == 0) {
      sh.b_total = S;
      sh.b_warp = h;
      sh.b_acc = above;
    }
  }
  __syncthreads();
  thr = top_p_threshold(cfg.top_p, sh.b_total);
  acc = sh.b_acc;
  return sh.b_warp < 0 ? -1 : int(wm) - sh.b_warp;
}

// The full round (the caller's comment), where wide_near_pass's bins do not reach: the crossing bin, or -1 where
// no bin reaches; acc, thr and sh.b_total as wide_near_pass's.
template <int C, int NT, bool TP, bool TP2>
__device__ int wide_full_pass(const mlops_sample_config& cfg, float m, Temperature T, const float* zs, int n,
                              ClusterShared<NT>& sh, uint64_t& acc, double& thr) {
  static_assert(C >= 3, "a portion of the wide bins fits cnt / mass (768 words)");
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
        if constexpr (TP) {
          atomicAdd(&sh.hlo[b], w[j] & 0xffffu);
          if (w[j] >> 16) atomicAdd(&sh.hhi[b], w[j] >> 16);
        } else {
          add_mass_of<true>(&sh.hlo[b], &sh.hhi[b], w[j]);
        }
      }
  }
  MLOPS_SAMPLE_MARK(11);
  cluster_sync_smem();  // every CTA's bins complete
  uint64_t* red = reinterpret_cast<uint64_t*>(&sh.cnt[0][0]);  // cnt then mass: 768 words
  uint64_t part = 0;
  for (int t = tid; t < P; t += NT) {
    const int b = int(rank) * P + t;
    uint64_t s = 0;
    if (b < kWideBins)
      for (int r = 0; r < C; ++r)
        s += mass_of<true>(remote_load(&sh.hlo[b], unsigned(r)), remote_load(&sh.hhi[b], unsigned(r)));
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
  return int(rp) * P + sh.b_warp;  // b_warp >= 0: the portion reaches
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

// build_candidates_staged's list (keys in [lo, hi]; IDX: slice indices, else values) from wide_near_pass's bit masks
// (bit e of a thread's: its element tid + e NT lies in a near bin; the crossing bin and everything above it are near
// bins): a thread visits its few near elements only, a warp pushing them a round at a time (one ballot, one atomic).
// The same set; the list is unordered. Every thread calls it.
template <int NT, bool IDX>
__device__ void list_near(const float* zs, uint64_t near, uint32_t lo, uint32_t hi, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  if (tid == 0) sh.cand_n = 0;
  __syncthreads();  // after every earlier read of cand_n / cand
  while (__ballot_sync(kFull, near != 0)) {
    bool on = false;
    uint32_t i = 0;
    float x = 0.0f;
    if (near) {
      const uint32_t l = uint32_t(near), h = uint32_t(near >> 32);
      i = uint32_t(tid + (l ? __ffs(int(l)) - 1 : 31 + __ffs(int(h))) * NT);
      near &= near - 1;
      x = zs[i];
      const uint32_t k = key_of(x);
      on = k >= lo && k <= hi;
    }
    const uint32_t at = warp_slot(on, &sh.cand_n);
    if (on && at < uint32_t(kClusterCand)) sh.cand[at] = IDX ? bits_f32(i) : x;
  }
  __syncthreads();
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
template <int C, int NT, bool TP = false, bool TP2 = false>
__device__ bool wide_top_p(const mlops_sample_config& cfg, float m, Temperature T, const float* zs, int64_t v0,
                           int64_t v1, ClusterShared<NT>& sh, float* all, bool& use_cand, int& all_n, uint32_t& prefix,
                           uint32_t& mask, uint64_t& acc, double& thr) {
  const int n = int(v1 - v0);
  uint64_t near;
  int bin = wide_near_pass<C, NT>(cfg, m, T, zs, n, sh, acc, thr, near);
  const bool by_mask = MLOPS_SAMPLE_NEAR_MASK && bin >= 0 && n <= 64 * NT;
  if (bin < 0) {
    cluster_sync_smem();  // every CTA's reads of this one's near bins are behind it (every CTA comes here alike)
    bin = wide_full_pass<C, NT, TP, TP2>(cfg, m, T, zs, n, sh, acc, thr);
    if (bin < 0) return true;
  }
  MLOPS_SAMPLE_MARK(13);
  prefix = uint32_t(bin) << kWideShift;
  mask = ~0u << kWideShift;
  if (by_mask) {
    list_near<NT, TP>(zs, near, prefix, TP ? 0xffffffffu : prefix | ~mask, sh);
  } else if constexpr (TP) {
    build_candidates_staged<NT, true>(zs, n, prefix, sh);
  } else {
    build_candidates_staged<NT, false>(zs, n, prefix, sh, prefix | ~mask);
  }
  use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
  uint32_t head = 0xffffffffu;  // the whole list
  if constexpr (TP && MLOPS_SAMPLE_BIN_FIRST) head = bin_first<NT>(zs, prefix | ~mask, sh);
  MLOPS_SAMPLE_MARK(14);
  // its barrier: every CTA's last read of this one's red is behind it
  all_n = gather_candidates<C, NT, false, TP, true>(sh, all, zs, head);
  return false;
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
  if (warp == 0) {
    uint64_t x = lane < unsigned(NW) ? sh.wsum[lane] : 0;
    x = warp_incl_scan(x);
    if (lane < unsigned(NW)) sh.red[lane] = x;  // the kept sum of warps 0 .. lane
    if (lane == unsigned(NW - 1)) sh.pub_kept = x;
  }
  cluster_sync_smem();  // every CTA's total published (and sh.red seen by this CTA's threads)
  ex = incl - s + (warp ? sh.red[warp - 1] : 0);
  if (warp == 0) {
    const uint64_t k = lane < unsigned(C) ? remote_load(&sh.pub_kept, lane) : uint64_t(0);
    const uint64_t ki = warp_incl_scan(k);
    const uint64_t total = __shfl_sync(kFull, ki, C - 1);
    const uint64_t before = __shfl_sync(kFull, ki - k, int(rank));
    const uint64_t mine = __shfl_sync(kFull, k, int(rank));
    if (lane == 0) {
      sh.b_total = total;
      sh.b_acc = before;
      sh.b_mine = mine;
    }
  }
  __syncthreads();
  cluster_arrive_smem();  // the last read of another CTA's shared memory is behind every thread
  S = sh.b_total;
  const uint64_t before = sh.b_acc, mine = sh.b_mine;
  const uint64_t target = scale_draw(draw64(p.seeds[row], step), S);
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
  if (!(s && ex <= t && t < ex + s)) return;
  uint64_t run = ex;
  int i = c0;
  uint32_t w = 0;
  for (; i < c1; ++i) {  // the first element whose running sum exceeds t (its weight is > 0)
    w = wz[i];
    run += w;
    if (run > t) break;
  }
  p.tokens[row] = int32_t(v0 + int64_t(i));
  if (p.flags) p.flags[row] = 0;
  if (p.logprobs) p.logprobs[row] = float(log(double(w) / double(S)));
}
// The tk forms (TK, on the gather form) keep the per-element work of a top-k row to the staging, the
// first round's count and the candidate list: the lists hold slice indices (build_candidates<IDX>),
// top-p after a gathered top-k is decided on the gathered list directly (tk_top_p), and the draw of a
// CTA whose list holds every element it keeps walks the list, not the slice (tk_draw).
constexpr int kTkKept = 256;  // the most kept elements a list form takes (else the rounds / the slice)

// lean_weights4's weight of one element (the same expression, element by element).
__device__ __forceinline__ uint32_t lean_weight1(const LeanRow& r, float x, bool on) {
  const float d = x - r.m;
  const float u = d * r.inv;
  const bool live = on && !is_nan(x) && d >= r.cutoff && u >= r.u_min;
  const uint32_t v = lean_weight_of_u(fmaxf(u, -80.0f));
  return live && v >= r.min_w ? v : 0u;
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
template <int NT>
__device__ int tp3_rounds(const mlops_sample_config& cfg, float m, Temperature T, const float* all, int n,
                          uint32_t& prefix, uint32_t& mask, uint64_t& acc, double thr, ClusterShared<NT>& sh) {
  constexpr int sb = 13;  // wide_shift(2)
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  uint32_t* hl = sh.cnt[1];                                 // level 2's masses: the low 16 bits of each weight
  uint32_t* hh = reinterpret_cast<uint32_t*>(sh.mass[0]);  // the high bits
  uint32_t* hn = sh.cnt[0];                                 // the weighted elements a bin
  for (int i = tid; i < 256; i += NT) {
    hl[i] = 0;
    hh[i] = 0;
    hn[i] = 0;
  }
  __syncthreads();
  const LeanRow lm = mass_row(cfg, m, T);
  for (int i0 = tid; (i0 & ~31) < n; i0 += 4 * NT) {  // warp-uniform trip count (lean_weights_sparse4)
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
  __syncthreads();
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
  if (done) return -1;
  if (nb > 32) return 1;
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
  return -1;
}

// Top-p after a gathered top-k (every CTA holds the same list `all` of n elements, a superset of the
// keys >= tau), in each CTA alone: the definition's rule on the list. The elements of non-zero weight
// at or above tau (top-p's masses: no min-p) are compacted as (key, weight) into the hlo / hhi words,
// S_k is their sum, and an element is kept when the weight of the strictly larger keys is below
// top_p_threshold(p, S_k) (the host emulation's walk over the keys from the top: the same keys kept,
// ties included); the new bound is the smallest kept key. Elements of weight 0 add nothing to any sum
// and are never drawn, so the kept weights are the rounds'. Returns false (every CTA alike: the same
// list) where more than kTkKept elements weigh: the rounds run then.
template <int NT>
__device__ bool tk_top_p(const mlops_sample_config& cfg, float m, Temperature T, const float* all, int n,
                         uint32_t& tau, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint64_t* kl = reinterpret_cast<uint64_t*>(sh.hlo);  // hlo, hhi: 2048 64-bit words
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
      s += w;
    }
  }
  s = block_sum_u64<NT>(s, sh);  // syncs
  const int nk = int(sh.b_krem);
  if (nk > kTkKept) {
    __syncthreads();
    return false;
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
template <int NT>
__device__ uint32_t tk_finish(const float* all, int n, uint32_t prefix, uint32_t mask, uint32_t k_rem,
                              ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  uint32_t* keys = sh.hlo;  // the bin's keys (hlo is dead after the round's sums, hhi[0] the count)
  if (tid == 0) sh.hhi[0] = 0;
  __syncthreads();
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
    const int nl = int(sh.cand_n);  // <= kClusterCand
    for (int i = tid; i < nl; i += NT) {
      const uint32_t li = ci[i];
      const float x = zs[li];
      const uint32_t w = lean_weight1(lr, x, key_of(x) >= tau);
      if (w) {
        const uint32_t c = li / uint32_t(q);
        atomicAdd(&sh.hlo[c], w & 0xffffu);
        if (w >> 16) atomicAdd(&sh.hhi[c], w >> 16);
      }
    }
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
      uint64_t below = 0;  // the kept weight of this CTA's elements at lower indices
      for (int f = 0; f < nk; ++f) {
        const uint64_t g = kl[f];
        below += uint32_t(g >> 32) < ie ? uint64_t(uint32_t(g)) : uint64_t(0);
      }
      if (below <= t && t < below + we) {
        p.tokens[row] = int32_t(v0 + int64_t(ie));
        if (p.flags) p.flags[row] = 0;
        if (p.logprobs) p.logprobs[row] = float(log(double(we) / double(S)));
      }
    }
    return;
  }
  if (!(s && ex <= t && t < ex + s)) return;
  uint64_t run = ex;
  int i = c0;
  uint32_t w = 0;
  for (; i < c1; ++i) {  // the first element whose running sum exceeds t (its weight is > 0)
    const float x = zs[i];
    if (TP && key_of(x) < tau) continue;  // weight 0 (TP: no exp for it)
    w = lean_weight1(lr, x, key_of(x) >= tau);
    run += w;
    if (run > t) break;
  }
  p.tokens[row] = int32_t(v0 + int64_t(i));
  if (p.flags) p.flags[row] = 0;
  if (p.logprobs) p.logprobs[row] = float(log(double(w) / double(S)));
}
#endif

// Bytes of dynamic shared memory the staged form takes for a row of `vocab` over C CTAs.
MLOPS_HD constexpr int64_t cluster_stage_bytes(int64_t vocab, int C) { return ((vocab + C - 1) / C * 4 + 15) / 16 * 16; }

// 2 CTAs an SM at 512 threads, 1 at 1024: 64 registers a thread either way.
// ES (the *_es variants): a top-p round below the first stops the rounds when the chosen bin holds
// exactly one element of non-zero weight (counted cluster-wide next to the masses). The rounds
// below it would only narrow the threshold from the bin's lower bound to that element's key, and
// every key between the two is of an element of zero weight (the bin holds no other weight): the
// same kept weights, the same S, the same token and log-probability. The first round (over the
// whole slice, where few bins take most elements) counts nothing: one un-replicated atomic an
// element there would serialise; later rounds see only the prefix's elements.
// WIDE (the *_wide variants, on the late form): top-k's first round in each CTA alone on a wide
// digit, then one gather (wide_topk_gather); top-p without top-k: a first round on the wide digit
// across the cluster and a gather of the crossing bin's elements (wide_top_p).
// TK (the *_tk variants, on the gather form): candidate lists of slice indices, top-p after a gathered
// top-k decided on the list (tk_top_p), the draw over a CTA's list where it holds the kept elements (tk_draw).
// TP (the *_tp variants, on the tk form): top-p without top-k takes the wide forms' first round (wide_top_p<TP>:
// one shared RED an element where the weight's high bits are 0, a list of slice indices of every element at or
// above the crossing bin, gathered by index), the early stop on the gathered list, and the draw over a CTA's
// list by chunk sums (tk_draw<TP>): no draw pass over the slice where the list holds the kept elements.
template <int C, int NT, bool STAGE = false, bool ES = false, bool LEAN = false, bool GATHER = false,
          bool LATE = false, bool WIDE = false, bool TK = false, bool TP = false, bool TP2 = false, bool TP3 = false>
__global__ void __launch_bounds__(NT, NT <= 512 ? 2 : 1) sample_cluster_kernel(SampleParams p) {
#if defined(MLOPS_SAMPLE_CLUSTER_BODY)
  static_assert(NT >= 256 && NT % 32 == 0 && NT / 32 <= 32, "the bin scans take 256 threads; one warp scans the warps");
  static_assert(!LEAN || (STAGE && !ES && C <= 32), "the lean draw rewrites the staged slice; one warp reads the cluster");
  static_assert(!GATHER || LEAN, "the gathered rounds are a lean form's");
  static_assert(!LATE || GATHER, "the second gather is a gather form's");
  static_assert(!WIDE || LATE, "the wide rounds are a late form's");
  static_assert(!TK || (GATHER && !LATE), "the tk forms are gather forms (the late / wide lists hold values)");
  static_assert(!TP || (TK && !WIDE), "the tp forms are tk forms");
  static_assert(!TP2 || TP, "the tp2 forms are tp forms");
  static_assert(!TP3 || TP, "the tp3 forms are tp forms");
  static_assert(kWideBins == 256 * kRep, "a wide histogram takes the hlo / hhi words");
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
  MLOPS_SAMPLE_MARK(0);
  MLOPS_SAMPLE_ROW_SPAN(0);
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
  // the gather forms: the cluster's candidates, after the slice in dynamic shared memory
  float* all = GATHER ? zs + cluster_stage_bytes(V, C) / 4 : nullptr;
  int all_n = -1;  // >= 0 once gathered: every later round reads all[0 .. all_n) in this CTA alone
  bool gather_tried = false;
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
  MLOPS_SAMPLE_MARK(1);

  // ---- max, lowest argmax, flags: this CTA's slice, then the cluster's (or the head's statistics)
  const bool stats = row_uses_stats(p, row, cfg);
  uint64_t best = 0;
  int flags = 0;
  int fl = 0;
  // TK: a top-k row measured here counts its first round (the key's top byte) in the staging pass and
  // publishes it with its max: one pass over the slice and one cluster barrier fewer
  const bool fused = TK && !stats && cfg.top_k > 0 && int64_t(cfg.top_k) < V && !config_greedy(cfg);
  if constexpr (TK) {  // read from shared memory after the staging's barrier (ClusterShared::r_cfg)
    if (tid == 0) {
      sh.r_cfg = cfg;
      sh.r_stats = stats;
      sh.r_fused = fused;
    }
  }
  // the two tests (TK: from shared memory, read at the use; valid after the staging's barrier)
  auto row_stats = [&]() -> bool {
    if constexpr (TK) return sh.r_stats != 0;
    else return stats;
  };
  auto row_fused = [&]() -> bool {
    if constexpr (TK) return sh.r_fused != 0;
    else return fused;
  };
  if constexpr (STAGE) {
    if (fused) {
      for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
      __syncthreads();
    }
    stage_slice<NT, LEAN>(z, v0, v1, zs, !stats, best, fl, fused ? sh.hlo : nullptr);
    __syncthreads();  // other threads of the CTA read the slice from here on
  }
  MLOPS_SAMPLE_MARK(2);
  // TK: the configuration and the two tests at each use from here on (not live in registers across the kernel)
  const mlops_sample_config& rcfg = TK ? sh.r_cfg : cfg;
  if (row_stats()) {
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
    if (row_fused() && tid < 256) {  // round 0's buffer (cnt[0]), read after the barrier below
      uint32_t t = 0;
      for (int r = 0; r < kRep; ++r) t += sh.hlo[tid * kRep + r];
      sh.cnt[0][tid] = t;
    }
    if (tid == 0) {
      sh.pub_best = best;
      sh.pub_flags = (any_nan ? MLOPS_SAMPLE_FLAG_NAN : 0) | (any_inf ? MLOPS_SAMPLE_FLAG_POSINF : 0);
    }
    exchange_sync<LEAN>();
    best = 0;
    if constexpr (LEAN) {  // lane r of warp 0 reads CTA r: C remote loads a CTA instead of C a thread
      if (warp == 0) {
        uint64_t b = 0;
        int f = 0;
        if (lane < unsigned(C)) {
          b = remote_load(&sh.pub_best, lane);
          f = remote_load(&sh.pub_flags, lane);
        }
#pragma unroll
        for (int off = 16; off >= 1; off >>= 1) {
          const uint64_t ob = __shfl_xor_sync(kFull, b, off);
          b = ob > b ? ob : b;
          f |= __shfl_xor_sync(kFull, f, off);
        }
        if (lane == 0) {
          sh.b_best = b;
          sh.b_flags = f;
        }
      }
      __syncthreads();
      best = sh.b_best;
      flags = sh.b_flags;
    } else {
      for (int r = 0; r < C; ++r) {
        const ClusterShared<NT>* o = cluster_map(&sh, unsigned(r));
        best = o->pub_best > best ? o->pub_best : best;
        flags |= o->pub_flags;
      }
    }
    if (best == 0 || best_key(best) <= kKeyNegInf) flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
  }
  MLOPS_SAMPLE_MARK(3);
  const uint32_t max_key = best_key(best);
  const float m = float_of_key(max_key);
  int32_t token = int32_t(best == 0 ? 0u : best_index(best));
  float logprob = __int_as_float(0x7fc00000);
  bool writer = rank == 0;  // the CTA that writes the token (the walking one, for sampled rows)

  if (flags || config_greedy(rcfg)) {
    if (p.logprobs && !flags) {  // log-softmax of the argmax at temperature 1, no filter
      uint64_t s = 0;
      for (int64_t v = v0 + tid; v < v1; v += NT) s += sample_weight(zr(v), m, temperature_of(1.0f));
      s = block_sum_u64<NT>(s, sh);
      if (tid == 0) sh.pub_lp = s;
      exchange_sync<LEAN>();
      s = 0;
      if constexpr (LEAN) {
        if (warp == 0) {
          s = warp_sum(lane < unsigned(C) ? remote_load(&sh.pub_lp, lane) : uint64_t(0));
          if (lane == 0) sh.b_total = s;
        }
        __syncthreads();
        s = sh.b_total;
      } else {
        for (int r = 0; r < C; ++r) s += cluster_map(&sh, unsigned(r))->pub_lp;
      }
      logprob = float(log(double(kWeightScale) / double(s)));
    }
    if constexpr (LEAN) cluster_arrive_smem();  // no more reads of the other CTAs' shared memory
  } else {
    const Temperature T = temperature_of(rcfg.temperature);
    int rnd = 0;            // histogram rounds so far (the buffer of round r is r % 2)
    bool use_cand = false;  // later rounds read sh.cand instead of the slice
    uint32_t cand_lo = 0xffffffffu;  // TK: the bound the candidate list was built under
    // element i of the candidate list (TK: a slice index into zs)
    auto cv = [&](int i) -> float {
      if constexpr (TK) return zs[f32_bits(sh.cand[i])];
      else return sh.cand[i];
    };
    uint32_t tau = 0;
    // ---- top-k: the k-th largest key (ties at it are kept), one byte a round
    const bool has_top_k = rcfg.top_k > 0 && int64_t(rcfg.top_k) < V;
    if (has_top_k) {
      uint32_t prefix = 0, mask = 0, k_rem = uint32_t(rcfg.top_k);
      uint32_t bound = 0;  // WIDE: a bin of the gathered list is the row's at or above it
      if constexpr (WIDE) {
        if (!(row_stats() && p.stats_key_hist)) {
          wide_topk_gather<C, NT>(zr, v0, v1, k_rem, sh, all, use_cand, all_n, bound);
          gather_tried = true;
        }
      }
#pragma unroll 1
      for (int level = 3; level >= 0; --level) {
        const int sh_bits = 8 * level;
        const bool from_stats = level == 3 && row_stats() && p.stats_key_hist;  // the head counted these
        uint32_t c = 0;
        if (from_stats) {
          if (tid < 256) c = p.stats_key_hist[row * 256 + (255 - tid)];
        } else if (level == 3 && row_fused()) {  // counted in the staging, published with the max (round 0)
          if (tid < 256)
            for (int r = 0; r < C; ++r) c += remote_load(&sh.cnt[0][255 - tid], unsigned(r));
          ++rnd;
        } else if (GATHER && all_n >= 0) {  // the gathered candidates: this CTA's count is the cluster's
          for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
          __syncthreads();
          const uint32_t copy = lane & uint32_t(kRep - 1);
          for (int i = tid; i < all_n; i += NT) {
            const uint32_t k = key_of(all[i]);
            if ((k & mask) == prefix) atomicAdd(&sh.hlo[((k >> sh_bits) & 255u) * kRep + copy], 1u);
          }
          __syncthreads();
          if (tid < 256)
            for (int r = 0; r < kRep; ++r) c += sh.hlo[(255 - tid) * kRep + r];
        } else {
          const int buf = rnd & 1;
          for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
          __syncthreads();
          const uint32_t copy = lane & uint32_t(kRep - 1);
          if (use_cand) {
            for (int i = tid; i < int(sh.cand_n); i += NT) {
              const uint32_t k = key_of(cv(i));
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
          exchange_sync<LEAN>();
          if (tid < 256) {
            if constexpr (LEAN) {
              for (int r = 0; r < C; ++r) c += remote_load(&sh.cnt[buf][255 - tid], unsigned(r));
            } else {
              for (int r = 0; r < C; ++r) c += cluster_map(&sh, unsigned(r))->cnt[buf][255 - tid];
            }
          }
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
          // every key of the bin is kept (WIDE: and the list holds all of the bin)
          sh.b_done = c == k_rem - cum && (prefix | (bin << sh_bits)) >= bound;
          sh.b_krem = k_rem - cum;
          if constexpr (TK) sh.b_warp = int(c);  // the crossing bin's count (the row's), for tk_finish
        }
        __syncthreads();
        prefix = sh.b_prefix;
        mask = sh.b_mask;
        k_rem = sh.b_krem;
        const int done = sh.b_done;
        const int c_bin = TK ? sh.b_warp : 0;
        __syncthreads();
        if (level == 3) MLOPS_SAMPLE_MARK(4);
        if (done) break;
        if (level == 3 && mask && all_n < 0) {  // the keys in the chosen bin and above, when they fit
          if constexpr (TK) build_candidates_tk<NT>(zs, int(v1 - v0), prefix, sh);
          else build_candidates<NT, decltype(zr), TK>(zr, v0, v1, prefix, sh);
          cand_lo = prefix;
          use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
          MLOPS_SAMPLE_MARK(15);
          if constexpr (GATHER) {
            gather_tried = true;
            all_n = gather_candidates<C, NT, false, TK>(sh, all, zs);
          }
          MLOPS_SAMPLE_MARK(5);
        } else if (LATE && level == 2 && all_n < 0) {  // all_n: the same in every CTA
          late_gather<C, NT>(zr, v0, v1, prefix, sh, all, use_cand, all_n);
        }
        if constexpr (TK) {  // a gathered list whose crossing bin holds few keys: its k_rem-th, no more rounds
          if (level > 0 && all_n >= 0 && c_bin <= 32) {
            prefix = tk_finish<NT>(all, all_n, prefix, mask, k_rem, sh);
            break;
          }
        }
      }
      tau = prefix;
      MLOPS_SAMPLE_MARK(6);
    }
    // ---- top-p: the smallest key whose mass above it (among the top-k) is below p * S_k
    if (rcfg.top_p < 1.0f) {
      uint32_t prefix = 0, mask = 0;
      uint64_t acc = 0;
      double thr = 0.0;
      int top = 3;  // the first level of the rounds below
      bool wide = false;
      if constexpr (TK) {  // a gathered top-k: top-p on the list, no rounds (where few enough weigh)
        if (has_top_k && all_n >= 0 && tk_top_p<NT>(rcfg, m, T, all, all_n, tau, sh)) top = -1;
      }
      if constexpr (WIDE || TP) {
        if (!has_top_k) {
          wide = true;
          gather_tried = true;
          top = wide_top_p<C, NT, TP, TP2>(rcfg, m, T, zs, v0, v1, sh, all, use_cand, all_n, prefix, mask, acc, thr) ? -1 : 2;
          cand_lo = prefix;  // TP: the list holds every element at or above the crossing bin (where use_cand)
          MLOPS_SAMPLE_MARK(7);
          if constexpr (TP3) {  // the gathered list: level 2 in one weighing, then one warp (tp3_rounds)
            if (top == 2 && all_n >= 0) top = tp3_rounds<NT>(rcfg, m, T, all, all_n, prefix, mask, acc, thr, sh);
          }
        }
      }
#pragma unroll 1
      for (int level = top; level >= 0; --level) {
        const int sh_bits = wide ? wide_shift(level) : 8 * level;
        const int buf = rnd & 1;
        // ES, below the first round: cnt[buf] counts this CTA's weighted elements a bin (zeroed
        // here: the other CTAs read buffer buf of round rnd - 2 before round rnd - 1's barrier)
        const bool count = ES && level < 3;
        // LATE, a round on the gathered list: the same count, of the list (the whole cluster's), in
        // cnt[0], which no other CTA reads after a gather (their last remote reads of cnt precede the
        // gather's barrier)
        const bool lcount = (LATE || TP) && all_n >= 0;
        for (int i = tid; i < 256 * kRep; i += NT) {
          sh.hlo[i] = 0;
          sh.hhi[i] = 0;
        }
        if (count && tid < 256) sh.cnt[buf][tid] = 0;
        if (lcount && tid < 256) sh.cnt[0][tid] = 0;
        __syncthreads();
        const uint32_t copy = lane & uint32_t(kRep - 1);
        if constexpr (LEAN) {  // 4 elements at a time, their exps interleaved (lean_weights4)
          LeanRow lm = lean_row(rcfg, m, T);
          lm.u_min = -__int_as_float(0x7f800000);  // top-p's masses are before min-p
          lm.min_w = 0;
          const int n = all_n >= 0 ? all_n : use_cand ? int(sh.cand_n) : int(v1 - v0);
          const float* src = all_n >= 0 ? all : use_cand ? sh.cand : zs;
          const bool viac = TK && all_n < 0 && use_cand;  // the list's slice indices
          // TP2, a round on the gathered list: lean_weights_sparse4 (a position's exps only where a lane of the
          // warp weighs its element there: the list's bin thins out round by round), so a warp-uniform trip count
          const bool sparse = TP2 && all_n >= 0;
          for (int i0 = tid; (sparse ? (i0 & ~31) : i0) < n; i0 += 4 * NT) {
            float x[4];
            bool on[4];
            uint32_t w[4], k[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const int i = i0 + j * NT;
              x[j] = i < n ? (viac ? cv(i) : src[i]) : 0.0f;
              k[j] = key_of(x[j]);
              on[j] = i < n && k[j] >= tau && (k[j] & mask) == prefix;
            }
            if (sparse)
              lean_weights_sparse4(lm, x, on, w);
            else
              lean_weights4(lm, x, on, w);
#pragma unroll
            for (int j = 0; j < 4; ++j)
              if (w[j]) {
                const uint32_t at = ((k[j] >> sh_bits) & 255u) * kRep + copy;
                add_mass_of<LEAN>(&sh.hlo[at], &sh.hhi[at], w[j]);
                if (lcount) atomicAdd(&sh.cnt[0][(k[j] >> sh_bits) & 255u], 1u);
              }
          }
        } else if (use_cand) {
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
        uint64_t mass = 0;
        uint32_t n_bin = 0;  // ES: the cluster's weighted elements in bin 255 - tid
        if (GATHER && all_n >= 0) {  // the gathered candidates: this CTA's masses are the cluster's
          if (tid < 256) {
            for (int r = 0; r < kRep; ++r)
              mass += mass_of<LEAN>(sh.hlo[(255 - tid) * kRep + r], sh.hhi[(255 - tid) * kRep + r]);
            if (lcount) n_bin = sh.cnt[0][255 - tid];
          }
        } else {
          if (tid < 256) {
            uint64_t t = 0;
            for (int r = 0; r < kRep; ++r) t += mass_of<LEAN>(sh.hlo[tid * kRep + r], sh.hhi[tid * kRep + r]);
            sh.mass[buf][tid] = t;
          }
          exchange_sync<LEAN>();
          if (tid < 256) {
            if constexpr (LEAN) {
              for (int r = 0; r < C; ++r) mass += remote_load(&sh.mass[buf][255 - tid], unsigned(r));
            } else {
              for (int r = 0; r < C; ++r) {
                const ClusterShared<NT>* o = cluster_map(&sh, unsigned(r));
                mass += o->mass[buf][255 - tid];
                if (count) n_bin += o->cnt[buf][255 - tid];
              }
            }
          }
          ++rnd;
        }
        const uint64_t incl = acc + suffix_scan256<NT>(mass, sh);  // syncs before and after
        if (level == 3) {
          if (tid == 255) sh.b_total = incl;  // S_k: the mass of every key >= tau
          __syncthreads();
          thr = top_p_threshold(rcfg.top_p, sh.b_total);
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
          sh.b_done = (count || lcount) && n_bin == 1;  // ES: the bin's lower bound keeps the same weights
        }
        __syncthreads();
        prefix = sh.b_prefix;
        mask = sh.b_mask;
        acc = sh.b_acc;
        const int done = sh.b_done;
        __syncthreads();
        if (done) break;
        if (level == 3 && !use_cand && all_n < 0) {  // the keys >= max(tau, the chosen bin), when they fit
          if constexpr (TK) build_candidates_tk<NT>(zs, int(v1 - v0), prefix > tau ? prefix : tau, sh);
          else build_candidates<NT, decltype(zr), TK>(zr, v0, v1, prefix > tau ? prefix : tau, sh);
          cand_lo = prefix > tau ? prefix : tau;
          use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
        }
        // one gather a call, decided alike in every CTA (use_cand is a CTA's own: after a top-k
        // whose gather did not fit, some CTAs may hold candidates and others not)
        if (GATHER && level == 3 && !gather_tried) {
          gather_tried = true;
          all_n = gather_candidates<C, NT, false, TK>(sh, all, zs);
        } else if (LATE && level == 2 && all_n < 0) {
          late_gather<C, NT>(zr, v0, v1, prefix > tau ? prefix : tau, sh, all, use_cand, all_n);
        }
      }
      if (prefix > tau) tau = prefix;
      MLOPS_SAMPLE_MARK(8);
    }
    // ---- draw: kept sums per warp sub-chunk, the cluster's total, the walk in index order
    KeptWeight kw;
    kw.m = m;
    kw.t = T;
    kw.tau = tau;
    kw.use_min_p = rcfg.min_p > 0.0f;
    kw.min_thr = min_p_threshold(rcfg.min_p);
    if constexpr (TK) {
      writer = false;  // the thread that finds the target writes the token itself
      tk_draw<C, NT, TP>(p, row, step, v0, v1, zs, lean_row(rcfg, m, T), tau, use_cand && cand_lo <= tau, sh);
    } else if constexpr (LEAN) {
      writer = false;  // the thread whose chunk holds the target writes the token itself
      lean_draw<C, NT>(p, row, step, v0, v1, zs, lean_row(rcfg, m, T), tau, sh);
    } else {
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
  }
  MLOPS_SAMPLE_MARK(9);
  if (writer && tid == 0) {
    p.tokens[row] = token;
    if (p.flags) p.flags[row] = flags;
    if (p.logprobs) p.logprobs[row] = logprob;
  }
  // no CTA leaves while another may read its shared memory; every step is read
  if constexpr (LEAN) cluster_wait();
  else cluster_sync();
  MLOPS_SAMPLE_MARK(10);
  MLOPS_SAMPLE_ROW_SPAN(1);
  if (rank == 0 && tid == 0) p.steps[row] = step + 1;
#endif
}

}  // namespace
}  // namespace mlops::vocab
