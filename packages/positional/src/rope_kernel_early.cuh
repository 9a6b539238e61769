// The "early" RoPE kernels (variants early2 / early4 / early8, rope_launch.h): each thread issues
// the q / k loads of its first U items before the CTA reads its positions. rope_kernel reads the
// positions, then the cos/sin rows, then q / k: three dependent DRAM round trips before a store,
// the data in flight only during the last (ncu, H200 run 13: DRAM 46 % at T = 4096, long-scoreboard
// stalls half the cycles). Here the data round trip overlaps the positions -> cos/sin chain.
// Other differences, none in the arithmetic (rotate() of rope.cuh per pair, so the same bits):
// - item indices advance by a precomputed step (rope_kernel divides twice an item);
// - one barrier: the thread of token tok checks its positions (token_in_range) and writes its flag
//   alone, so no atomics and no barrier to clear the flags first;
// - item pointers from the token index (the loads come before any shared memory is written);
// - cos/sin read from shared memory by 16-byte loads where the alignment is proven.
#pragma once
#include "rope_access.cuh"

namespace mlops::rope {

// CTAs an SM the register budget allows: U items hold 8 registers of data each (16 bytes of
// each half) plus their output pointer.
template <int U>
constexpr int early_min_ctas() {
  return U <= 2 ? 4 : (U <= 4 ? 3 : 2);
}

// A thread's items of one token block (t0, ntok tokens; heads h0 ... h0 + nh - 1): U at a time in
// registers. The item it = x + k * kCtaThreads is (tok, hl, c) = it / ipt, (it % ipt) / cph, it % cph,
// advanced by kCtaThreads = st tokens + sh heads + sc chunks: at most one carry each, no division.
// STAGE (the stage variants, rope_kernel_stage.cuh; 16-byte path only): the items' q / k go to
// the thread's own shared-memory slots by cp.async instead of registers (slot s of thread x at
// stage + (s * kCtaThreads + x) * 16 bytes: a warp's 16-byte accesses are consecutive, no bank
// conflict), so U items cost no data registers.
template <class T, int LAYOUT, bool VEC, int U, bool STAGE = false>
struct Items {
  static_assert(!STAGE || VEC, "staging moves 16-byte chunks");
  using G = Geometry<T, LAYOUT, VEC>;
  static constexpr int P = G::P, TE = G::TE;
  static constexpr int XW = LAYOUT == kNeox ? P : 2 * P;  // elements of an item's first access (GPT-J: its only one)
  static constexpr int YW = LAYOUT == kNeox ? P : 1;      // and of its second (NeoX: the other half)
  // STAGE, NeoX, 8 pairs a chunk (bf16 / fp16): cos/sin in the order of cs_index, so the 16-byte
  // shared loads of a warp's 8 chunks are contiguous (run 19 ncu, early2x5: 48 % of the shared
  // wavefronts were bank-conflict excess from the 32-byte stride of the natural order)
  static constexpr bool kPermCs = STAGE && LAYOUT == kNeox && P == 8;
  int rot_chunks, cph, nh, ipt, h0, hq;
  int tok0, hl0, c0, st, sh, sc;  // the thread's first item of a block, and the step
  int tok, hl, c;                 // the next item to load
  long long t0;
  int ntok;
  Regs<T, XW, VEC> xa[U];
  Regs<T, YW, VEC> ya[U];
  T* out[U];
  unsigned char* slot;  // STAGE: the thread's first 16-byte slot (set by the kernel)
  int m[U];  // -1: nothing to finish; else token | j << 5 | in place << 13 (tokens < 17, j < 128): one register

  __device__ __forceinline__ Items(const Params& p, int x, int h0_, int nh_) : nh(nh_), h0(h0_) {
    rot_chunks = p.half / P;
    cph = rot_chunks + (p.tail ? (p.head_dim - p.rotary_dim) / TE : 0);
    ipt = nh * cph;
    hq = (int)p.q.heads;
    tok0 = x / ipt;
    hl0 = (x - tok0 * ipt) / cph;
    c0 = x - tok0 * ipt - hl0 * cph;
    st = kCtaThreads / ipt;
    const int sr = kCtaThreads - st * ipt;
    sh = sr / cph;
    sc = sr - sh * cph;
  }

  __device__ __forceinline__ void start(long long t0_, int ntok_) {
    t0 = t0_;
    ntok = ntok_;
    tok = tok0;
    hl = hl0;
    c = c0;
  }

  // Issue the loads of the thread's next U items (the pass-through tail of an out-of-place head is
  // copied right here: it needs no position).
  __device__ __forceinline__ void load(const Params& p) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      m[u] = -1;
      if (tok < ntok) {
        const long long t = t0 + tok;
        long long b = 0, s = t;
        if (p.batch > 1) {  // tokens < 2^31 (validated): a 32-bit division
          b = (long long)((unsigned)t / (unsigned)p.seq);
          s = t - b * p.seq;
        }
        const int h = h0 + hl;
        const bool isq = h < hq;
        const long long hh = isq ? h : h - hq;
        const T* in = static_cast<const T*>(isq ? p.q.x : p.k.x) + b * (isq ? p.q.bs : p.k.bs) +
                      s * (isq ? p.q.ss : p.k.ss) + hh * (isq ? p.q.hs : p.k.hs);
        T* o = static_cast<T*>(isq ? p.q.out : p.k.out) + b * (isq ? p.q.obs : p.k.obs) +
               s * (isq ? p.q.oss : p.k.oss) + hh * (isq ? p.q.ohs : p.k.ohs);
        const bool ip = (const void*)o == (const void*)in;
        if (c >= rot_chunks) {
          if (!ip) {
            const int off = p.rotary_dim + (c - rot_chunks) * TE;
            stv<T, TE, VEC>(o + off, ldv<T, TE, VEC>(in + off));
          }
        } else {
          const int j = c * P;
          m[u] = tok | j << 5 | int(ip) << 13;
          out[u] = o;
          if constexpr (STAGE && LAYOUT == kNeox) {
            cp_async16(slot + 2 * u * kSlotStride, in + j);
            cp_async16(slot + (2 * u + 1) * kSlotStride, in + p.half + j);
          } else if constexpr (STAGE) {
            cp_async16(slot + u * kSlotStride, in + 2 * j);
          } else if constexpr (LAYOUT == kNeox) {
            xa[u].load(in + j);
            ya[u].load(in + p.half + j);
          } else {
            xa[u].load(in + 2 * j);  // pairs j ... j + P - 1
          }
        }
      }
      tok += st;
      hl += sh;
      c += sc;
      if (c >= cph) { c -= cph; ++hl; }
      if (hl >= nh) { hl -= nh; ++tok; }
    }
  }

  // Rotate the loaded items with their token's cos/sin (cs: [ntok][rotary_dim]) and store them;
  // bad[tok]: the token's position is out of range.
  __device__ __forceinline__ void finish(const Params& p, const float* cs0, const int* bad) {
    const int rd = p.rotary_dim, half = p.half;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (m[u] < 0) continue;
      const int tk = m[u] & 31, j = (m[u] >> 5) & 255;
      const bool rot = !bad[tk];
      if (!rot && (m[u] >> 13)) continue;  // an out-of-range token is left as it is (copied out of place)
      if constexpr (STAGE) {  // the thread's own slots: its cp.async_wait made them visible to it
        xa[u].load(reinterpret_cast<const T*>(slot + (LAYOUT == kNeox ? 2 * u : u) * kSlotStride));
        if constexpr (LAYOUT == kNeox) ya[u].load(reinterpret_cast<const T*>(slot + (2 * u + 1) * kSlotStride));
      }
      if (rot) {
        float cv[P], sv[P];
        if constexpr (kPermCs) {  // the stage kernels' cos/sin order (cs_index): 16-byte pieces k of chunk c at (k * rot_chunks + c)
          const float* cs = cs0 + tk * rd + 4 * (j >> 3);
          lds_floats<4, VEC>(cs, cv);
          lds_floats<4, VEC>(cs + 4 * rot_chunks, cv + 4);
          lds_floats<4, VEC>(cs + half, sv);
          lds_floats<4, VEC>(cs + half + 4 * rot_chunks, sv + 4);
        } else {
          const float* cs = cs0 + tk * rd + j;
          lds_floats<P, VEC>(cs, cv);
          lds_floats<P, VEC>(cs + half, sv);
        }
        rotate_item<LAYOUT, P, STAGE && sizeof(T) == 2>(xa[u], ya[u], cv, sv);
      }
      store_item<LAYOUT>(xa[u], ya[u], out[u], j, half);
    }
  }
};

// MINB: CTAs an SM asked of ptxas (early2x5 / x6: 5 / 6 instead of 4, at most 51 / 42 registers; run 14 showed
// that from the cache occupancy beats loads a thread: early2 at 4 CTAs an SM beat early4 at 3).
template <class T, int LAYOUT, bool VEC, int U, int MINB = early_min_ctas<U>()>
__global__ void __launch_bounds__(kCtaThreads, MINB) rope_kernel_early(const Params p) {
  extern __shared__ float smem[];
  const int rd = p.rotary_dim, half = p.half;
  int* bad = reinterpret_cast<int*>(smem + p.tpc * rd);
  const long long t0 = (long long)blockIdx.x * p.tpc;
  const int ntok = (int)min((long long)p.tpc, p.tokens - t0);
  const int h0 = blockIdx.y * p.hpc;
  const int x = (int)threadIdx.x;
  Items<T, LAYOUT, VEC, U> it(p, x, h0, min(p.hpc, p.heads - h0));
  it.start(t0, ntok);
  it.load(p);  // q / k in flight before the positions are read
  if (x < ntok) {
    const bool ok = token_in_range(p, t0 + x);
    bad[x] = !ok;
    if (!ok && p.flag && blockIdx.y == 0) *p.flag = 1;
  }
  // cos / sin of the CTA's tokens; token_freq reads nothing for an out-of-range position.
  for (int idx = x; idx < ntok * half; idx += kCtaThreads) {
    const int tk = idx / half, i = idx - tk * half;
    token_freq(p, t0 + tk, i, smem + tk * rd);
  }
  __syncthreads();
  it.finish(p, smem, bad);
  // A CTA with more than U items a thread (a split the planner does not pick): U more at a time.
  for (int done = U * kCtaThreads; done < ntok * it.ipt; done += U * kCtaThreads) {
    it.load(p);
    it.finish(p, smem, bad);
  }
}

}  // namespace mlops::rope
