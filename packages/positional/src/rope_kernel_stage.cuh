// The "stage" RoPE kernels (variants stage4 / stage4x6 / stage8, rope_launch.h): the early kernels' structure
// with two changes, none in the arithmetic (rotate() of rope.cuh per pair, cos_sin / the cache row
// as freq_at reads them: the same bits).
// - The items' q / k go into the thread's own shared-memory slots by cp.async (Items<..., STAGE>),
//   not into registers. early2x5 keeps 2 items (16 data registers) a thread at 5 CTAs an SM: 80 KB
//   an SM in flight while the CTA waits for positions -> cos/sin (H200 runs 14-18: T = 4096 stays at
//   ~24 us of kernel for 84 MB, 19.7 us at copy bandwidth: the first wave's two round trips and the
//   batches after the barrier carry too few bytes). stage4 at 5 CTAs an SM puts 160 KB an SM in
//   flight at once, stage4x6 and stage8 (6 / 3 CTAs) 192 KB, with 40 ... 78 registers a thread.
// - The cos/sin phase issues every position load of the thread (and, on the fly, its inv_freq[i]
//   loads, which need no position) before any q / k load, then the cache rows / sincos: at decode on
//   the fly the chain before the first store is one DRAM round trip (positions, inv_freq and data
//   together) and the fp64 sincos; early2 reads inv_freq only after its position (a load behind a
//   range check is not hoisted), two round trips.
#pragma once
#include "rope_kernel_early.cuh"

namespace mlops::rope {

// Where cos (and, half further, sin) of frequency i goes when a chunk holds 8 pairs: piece k = (i % 8)
// / 4 of chunk c = i / 8 at (k * nch + c) * 4 + i % 4, so piece k of all nch chunks is contiguous.
MLOPS_ROPE_HD int cs_index(int i, int nch) { return (((i & 7) >> 2) * nch + (i >> 3)) * 4 + (i & 3); }

// A thread's (token, frequency) entries of the CTA's cos/sin, kBatch at a time: idx = base + k *
// kCtaThreads, (tk, i) = idx / half, idx % half. load() issues the reads that need no earlier
// result; store() waits for them, reads the cache rows (or computes), and writes shared memory.
struct CosSinBatch {
  static constexpr int kBatch = 2;  // 2 x 256 entries: 8 tokens of 64 frequencies (stage8 at 6 tokens) in one batch; 4 cost stage4 spills
  long long pos[kBatch];
  float f[kBatch];
  int base;

  __device__ __forceinline__ void load(const Params& p, long long t0, int base_, int n) {
    base = base_;
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int idx = base + k * kCtaThreads;
      pos[k] = -1;
      f[k] = 0.0f;
      if (idx < n) {
        const int tk = idx / p.half, i = idx - tk * p.half;
        pos[k] = position(p, freq_row(p, i), t0 + tk);
        if (!p.cache) f[k] = p.inv_freq[i];  // any i < half is a valid index: no position needed
      }
    }
  }

  // freq_at's arithmetic with inv_freq[i] read early; an out-of-range position writes nothing. The
  // cache reads of all entries are issued before any is used (one round trip for the batch).
  // nch > 0: cos/sin of frequency i at cs_index(i, nch) (Items::kPermCs), else at i.
  __device__ __forceinline__ void store(const Params& p, int n, float* cs0, int nch) const {
    const int half = p.half;
    float c[kBatch], s[kBatch];
    bool w[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int idx = base + k * kCtaThreads;
      w[k] = idx < n && pos_in_range(p, pos[k]);
      if (!w[k]) continue;
      const int i = idx % half;
      if (p.cache) {
        c[k] = p.cache[pos[k] * (2 * half) + i];
        s[k] = p.cache[pos[k] * (2 * half) + half + i];
      } else {
        cos_sin(pos[k], f[k], p.scaling, &c[k], &s[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      if (!w[k]) continue;
      const int idx = base + k * kCtaThreads;
      const int tk = idx / half, i = idx - tk * half;
      const int o = nch ? cs_index(i, nch) : i;
      cs0[tk * p.rotary_dim + o] = c[k];
      cs0[tk * p.rotary_dim + half + o] = s[k];
    }
  }
};

// MINB: CTAs an SM asked of ptxas (stage4 5, stage4x6 6, stage8 3); shared memory allows 6 (stage4:
// 32 KB of slots at the planner's 3 tokens of 40 heads) / 3 (stage8: 64 KB).
template <class T, int LAYOUT, bool VEC, int U, int MINB>
__global__ void __launch_bounds__(kCtaThreads, MINB) rope_kernel_stage(const Params p) {
  extern __shared__ float smem[];  // cos/sin [tpc][rotary_dim], bad [tpc], then the slots (stage_offset)
  int* bad = reinterpret_cast<int*>(smem + p.tpc * p.rotary_dim);
  const long long t0 = (long long)blockIdx.x * p.tpc;
  const int ntok = (int)min((long long)p.tpc, p.tokens - t0);
  const int h0 = blockIdx.y * p.hpc;
  const int x = (int)threadIdx.x;
  const int n = ntok * p.half;  // (token, frequency) entries of the CTA
  CosSinBatch cs;
  cs.load(p, t0, x, n);                                // positions first: the longest chain
  const bool ok = x < ntok ? token_in_range(p, t0 + x) : true;
  Items<T, LAYOUT, VEC, U, VEC> it(p, x, h0, min(p.hpc, p.heads - h0));  // STAGE on the 16-byte path
  if constexpr (VEC) it.slot = reinterpret_cast<unsigned char*>(smem) + stage_offset(p) + 16 * x;
  it.start(t0, ntok);
  it.load(p);  // q / k in flight (in shared memory) while the positions -> cos/sin chain runs
  if (x < ntok) {
    bad[x] = !ok;
    if (!ok && p.flag && blockIdx.y == 0) *p.flag = 1;
  }
  using It = Items<T, LAYOUT, VEC, U, VEC>;
  const int nch = It::kPermCs ? p.half / It::P : 0;
  cs.store(p, n, smem, nch);
  for (int b = x + CosSinBatch::kBatch * kCtaThreads; b < n; b += CosSinBatch::kBatch * kCtaThreads) {
    CosSinBatch more;  // more than 2 x 256 entries (tokens_per_cta x rotary_dim/2 > 512): a split the planner does not pick
    more.load(p, t0, b, n);
    more.store(p, n, smem, nch);
  }
  __syncthreads();
  cp_async_wait_all();
  it.finish(p, smem, bad);
  // More than U items a thread (a split the planner does not pick): U more at a time, the slots
  // reused (finish consumed the previous values before these copies are issued).
  for (int done = U * kCtaThreads; done < ntok * it.ipt; done += U * kCtaThreads) {
    it.load(p);
    cp_async_wait_all();
    it.finish(p, smem, bad);
  }
}

}  // namespace mlops::rope
