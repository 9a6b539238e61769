// The "dec" RoPE kernels (variants dec / dec2 / dec4, rope_launch.h; session 5, round A): a warp is one
// token and a few heads, and nothing makes one warp wait for another.
// Why (H200 run 25, ncu --set full, T = 1): early2 from the cache runs 3.55 us, 7,495 warp instructions
// = ~312 a warp, one every 12.6 cycles, 40 % of the stall on the CTA barrier (warps waiting for the
// positions -> cos/sin phase); stage4 on the fly ~447 a warp. torch's mul_ of the same bytes: 43 a
// warp at 33.7 cycles each (pure DRAM latency), 2.43 us. Decode is the length of each warp's serial
// instruction chain, not bytes. So here:
// - grid (tokens / 8, head groups), a CTA's 8 warps = 8 tokens (the warps of a CTA share nothing);
//   a warp takes hpc heads of its token (dec: 32 / chunks a head = 4 heads of 8 chunks, one item a
//   lane; dec2 / dec4: up to 2 / 4 items a lane, 8 / 14 of 40 heads, the T = 4096 candidates: a
//   token's sincos computed 5 / 3 times instead of 10), a lane an item;
// - the lane's q / k loads, its token's position and (on the fly) inv_freq of its two frequencies
//   are issued together: one DRAM round trip;
// - from the cache (no mrope, 16-byte aligned cache): the lane reads its item's cos / sin straight
//   from the cache row (P floats of each, 16-byte loads; the row is shared in L1 / L2 by the heads):
//   no shared memory at all, two round trips (positions, then the row) and no barrier;
// - on the fly (and mrope / a misaligned cache): the token's half frequencies are spread over the
//   warp's 32 lanes (two a lane at rotary_dim 128, their fp64 sincos interleaved), written to the
//   warp's own rotary_dim floats of shared memory, __syncwarp, then read back by 16-byte loads as
//   the early kernels read theirs. Shuffles would do the same hand-over (16 SHFL a lane against 4
//   STS + 4 LDS.128) only for geometries where a lane's frequencies land in one register slot; the
//   warp's shared row works for every half, P and mrope, and no CTA barrier is involved;
// - the out-of-range flag is written by lane 0 of the token's first head group.
// The arithmetic is rotate() per pair with the cache's values or cos_sin() (what the cache holds):
// the same bits as every other variant.
#pragma once
#include "rope_access.cuh"

namespace mlops::rope {

// A lane's items of its warp's (token, head group): U at a time in registers, item it = it0 + lane + 32 u
// as (head hl, chunk c) = it / cph, it % cph. Flags in one register (bit u: live, bit 8 + u: in place),
// not bool arrays: nvcc 13.0 (sm_90) put the arrays of a first version (lambdas capturing them) in
// local memory (STL / LDL on the decode path).
using u64 = unsigned long long;

template <class T, int LAYOUT, bool VEC, int U>
struct DecItems {
  using G = Geometry<T, LAYOUT, VEC>;
  static constexpr int P = G::P, TE = G::TE;
  static constexpr int XW = LAYOUT == kNeox ? P : 2 * P, YW = LAYOUT == kNeox ? P : 1;
  Regs<T, XW, VEC> xa[U];
  Regs<T, YW, VEC> ya[U];
  T* out[U];
  int jj[U];
  int fl;

  // Issue the loads of the lane's next U items (the pass-through tail of an out-of-place head is
  // copied right here: it needs no position). lg: log2(cph) when cph is a power of two (the 16-byte
  // path without a tail: 8 chunks at rotary_dim 128), else -1 (a division an item).
  __device__ __forceinline__ void load(const Params& p, int it0, int n, int cph, int lg, int rot_chunks, int h0,
                                       long long b, long long s) {
    fl = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int it = it0 + 32 * u;
      if (it >= n) continue;
      const int hl = lg >= 0 ? it >> lg : it / cph;
      const int c = it - hl * cph;
      const int h = h0 + hl;
      const bool isq = h < int(p.q.heads);
      const Side& sd = isq ? p.q : p.k;
      const int hh = isq ? h : h - int(p.q.heads);
      // s, hh >= 0 and < 2^31: 32 x 64-bit products (two instructions each, not three; the low 64 bits
      // of a product do not depend on signedness); the batch term only when there is a batch
      long long io = (long long)(u64(unsigned(s)) * u64(sd.ss) + u64(unsigned(hh)) * u64(sd.hs));
      long long oo = (long long)(u64(unsigned(s)) * u64(sd.oss) + u64(unsigned(hh)) * u64(sd.ohs));
      if (b) {
        io += b * sd.bs;
        oo += b * sd.obs;
      }
      const T* in = static_cast<const T*>(sd.x) + io;
      out[u] = static_cast<T*>(sd.out) + oo;
      const bool ip = (const void*)out[u] == (const void*)in;
      if (c >= rot_chunks) {
        if (!ip) {
          const int off = p.rotary_dim + (c - rot_chunks) * TE;
          stv<T, TE, VEC>(out[u] + off, ldv<T, TE, VEC>(in + off));
        }
        continue;
      }
      fl |= (1 << u) | (int(ip) << (8 + u));
      jj[u] = c * P;
      if constexpr (LAYOUT == kNeox) {
        xa[u].load(in + jj[u]);
        ya[u].load(in + p.half + jj[u]);
      } else {
        xa[u].load(in + 2 * jj[u]);
      }
    }
  }

  // Rotate the loaded items (cos of pair j at cs[j], sin at cs[half + j]: the cache row in global
  // memory or the warp's shared row, generic loads) and store them.
  __device__ __forceinline__ void finish(const Params& p, const float* cs, bool ok) {
    const int half = p.half;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!(fl >> u & 1)) continue;
      const int j = jj[u];
      if (!ok && (fl >> (8 + u) & 1)) continue;  // an out-of-range token is left as it is (copied out of place)
      if (ok) {
        float cv[P], sv[P];
        lds_floats<P, VEC>(cs + j, cv);
        lds_floats<P, VEC>(cs + half + j, sv);
        rotate_item<LAYOUT, P, VEC && sizeof(T) == 2>(xa[u], ya[u], cv, sv);
      }
      store_item<LAYOUT>(xa[u], ya[u], out[u], j, half);
    }
  }
};

// The token's cos / sin into the warp's shared row (on the fly, mrope, or a misaligned cache): the
// lane's frequencies i0 = k0 + lane and i1 = i0 + 32, two a step (one step at rotary_dim <= 128),
// both computed before either is stored so their fp64 chains interleave. f0 / f1: inv_freq[lane],
// inv_freq[lane + 32], read with the position.
__device__ __forceinline__ void dec_row(const Params& p, long long t, long long pos0, int lane, float f0, float f1,
                                        float* row) {
  const int half = p.half;
#pragma unroll 1
  for (int k0 = 0; k0 < half; k0 += 64) {
    const int i0 = k0 + lane, i1 = i0 + 32;
    if (p.cache) {  // freq_at's reads, a frequency's row by its mrope section
      if (i0 < half) freq_at(p, position(p, freq_row(p, i0), t), i0, row);
      if (i1 < half) freq_at(p, position(p, freq_row(p, i1), t), i1, row);
      continue;
    }
    if (k0) {
      f0 = i0 < half ? p.inv_freq[i0] : 0.0f;
      f1 = i1 < half ? p.inv_freq[i1] : 0.0f;
    }
    const long long ps0 = p.mrope ? position(p, freq_row(p, min(i0, half - 1)), t) : pos0;
    const long long ps1 = p.mrope ? position(p, freq_row(p, min(i1, half - 1)), t) : pos0;
    float c0, s0, c1, s1;
    cos_sin(ps0, f0, p.scaling, &c0, &s0);
    cos_sin(ps1, f1, p.scaling, &c1, &s1);
    if (i0 < half) { row[i0] = c0; row[half + i0] = s0; }
    if (i1 < half) { row[i1] = c1; row[half + i1] = s1; }
  }
}

// dec_direct: the dec kernels read cos / sin straight from the cache row (a 16-byte aligned cache, no
// mrope; the cache is a caller's tensor: its alignment is checked, not assumed). One predicate for the
// kernel's path and the launch's choices (kernel_variant, smem_for in rope_kernel.cuh).
__host__ __device__ __forceinline__ bool dec_direct(const Params& p, bool vec) {
  return p.cache && !p.mrope && (!vec || (reinterpret_cast<unsigned long long>(p.cache) & 15) == 0);
}

// ROW = false (decx5 / decx6): the direct cache path only, without the shared-row code (sincos, mrope
// rows): the launch gives such a kernel only calls with a 16-byte aligned cache and no mrope
// (dec_direct), so it holds ~48 / 40 registers for 5 / 6 CTAs an SM where the full kernel spills its
// data across the sincos code (sm_90 bf16 NeoX 16-byte, nvcc 13.0: 56 / 100 bytes).
template <class T, int LAYOUT, bool VEC, int U, int MINB, bool ROW = true>
__global__ void __launch_bounds__(kCtaThreads, MINB) rope_kernel_dec(const Params p) {
  using It = DecItems<T, LAYOUT, VEC, U>;
  extern __shared__ float smem[];
  const int lane = int(threadIdx.x) & 31, w = int(threadIdx.x) >> 5;
  const long long t = (long long)blockIdx.x * kDecWarps + w;
  if (t >= p.tokens) return;  // the whole warp (a warp is one token): no lane misses the __syncwarp below
  const long long pos0 = position(p, 0, t);  // first: the longest chain (mrope: rows read again below)
  const int half = p.half;
  // on the fly: inv_freq of the lane's frequencies (lane, lane + 32) need no position: issued with it
  float f0 = 0.0f, f1 = 0.0f;
  if (ROW && !p.cache) {
    if (lane < half) f0 = p.inv_freq[lane];
    if (lane + 32 < half) f1 = p.inv_freq[lane + 32];
  }
  const int rot_chunks = half / It::P;
  const int cph = p.dec_cph, lg = p.dec_lg;  // from the launch (dec_grid): fewer instructions before the loads
  const int h0 = blockIdx.y * p.hpc, nh = min(p.hpc, p.heads - h0);
  const int n = nh * cph;  // the warp's items
  long long b = 0, s = t;
  if (p.batch > 1) {  // tokens < 2^31 (validated): a 32-bit division
    b = (long long)((unsigned)t / (unsigned)p.seq);
    s = t - b * p.seq;
  }
  It it;
  it.load(p, lane, n, cph, lg, rot_chunks, h0, b, s);  // q / k in flight with the position
  const bool ok = ROW && p.mrope ? token_in_range(p, t) : pos_in_range(p, pos0);
  if (!ok && lane == 0 && blockIdx.y == 0 && p.flag) *p.flag = 1;
  // cos / sin straight from the cache row: one address, no frequency routing
  const bool direct = !ROW || dec_direct(p, VEC);
  const float* cs = direct ? p.cache + (ok ? pos0 : 0) * (2 * half) : smem + w * p.rotary_dim;
  if (!direct) {
    if (ok) dec_row(p, t, pos0, lane, f0, f1, smem + w * p.rotary_dim);
    __syncwarp();  // the warp's row is written (this warp only: no other warp reads it)
  }
  it.finish(p, cs, ok);
  // More than 32 U items a warp (the scalar path's many chunks a head): U more at a time.
  for (int it0 = 32 * U; it0 < n; it0 += 32 * U) {
    it.load(p, it0 + lane, n, cph, lg, rot_chunks, h0, b, s);
    it.finish(p, cs, ok);
  }
}

}  // namespace mlops::rope
