// The "flat" RoPE kernels (variants flat2 / flat2p / flat4p, rope_launch.h; round-B candidates of
// session 4): no shared memory, no barrier, no per-CTA token block. The (token, head, chunk) items of
// the whole call form one list, walked grid-stride like torch's elementwise kernels (run 20's mul_
// reference: 21.2 us of kernel at T = 4096 for the bytes early2x5 moves in 24.3). Each item fetches
// its own cos/sin: from the cache row (16-byte loads when the cache is aligned; L1 / L2 hits after
// the token's first item: the 40 heads of a token share the 512-byte row) or, on the fly, P sincos.
// Why: the early / stage kernels make every CTA pay positions -> cos/sin -> barrier before its first
// store, and at T = 4096 the grid is 1.5 ... 2.1 waves of such CTAs (run 19 ncu: SMs active 84 %);
// here a warp's chain is only its own items' (data and position loads issued together, then the cache
// row), and warps never wait for each other. At decode (T = 1, 32) the chain has no barrier and no
// shared-memory round trip either.
// - flat2: 2 items a thread, a grid that covers every item once (a step a thread, as torch's mul_);
// - flat2p: the same kernel on a persistent grid (SMs x 4 CTAs, items strided by the grid);
// - flat4p: 4 items a thread a step (all their loads issued at once), SMs x 2 CTAs (111 registers).
// The arithmetic is rotate() of rope.cuh per pair with the cache's values or cos_sin() (what the
// cache holds): the same bits as every other variant. Meant for the cache path: on the fly an item
// computes its P sincos one after another (fp64; a CTA-shared row costs one a frequency), correct but
// slow, measured all the same.
#pragma once
#include "rope_access.cuh"

namespace mlops::rope {

template <class T, int LAYOUT, bool VEC, int U, int MINB>
__global__ void __launch_bounds__(kCtaThreads, MINB) rope_kernel_flat(const Params p) {
  using G = Geometry<T, LAYOUT, VEC>;
  constexpr int P = G::P, TE = G::TE;
  constexpr int XW = LAYOUT == kNeox ? P : 2 * P, YW = LAYOUT == kNeox ? P : 1;
  const int half = p.half, rot_chunks = half / P;
  const int cph = rot_chunks + (p.tail ? (p.head_dim - p.rotary_dim) / TE : 0);
  const int ipt = p.heads * cph;  // every head: the launch gives the flat kernels one grid row
  const int hq = (int)p.q.heads;
  const long long n = p.tokens * ipt;
  const long long stride = (long long)p.grid_x * kCtaThreads;
  // cache rows by vector loads: j and half are multiples of P on the 16-byte path, so an aligned cache
  // makes every item's cos and sin 4 P-byte aligned (the cache is a caller's tensor: checked, not assumed)
  const bool cs_vec = VEC && (reinterpret_cast<unsigned long long>(p.cache) & 15) == 0;
  // the thread's first item and the grid stride as (tokens, heads, chunks): one division each, then carries
  long long g = (long long)blockIdx.x * kCtaThreads + threadIdx.x;
  long long tok = g / ipt;
  int hl = int(g - tok * ipt) / cph;
  int c = int(g - tok * ipt) - hl * cph;
  const long long st = stride / ipt;
  const int sr = int(stride - st * ipt), sh = sr / cph, sc = sr - sh * cph;
  for (; g < n; g += U * stride) {
    Regs<T, XW, VEC> xa[U];
    Regs<T, YW, VEC> ya[U];
    T* out[U];
    bool ip[U];  // in place
    long long tk[U], pos0[U];
    int j[U];
    bool live[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {  // every load of the step first: data and positions in one round trip
      live[u] = false;
      if (tok < p.tokens) {
        long long b = 0, s = tok;
        if (p.batch > 1) {  // tokens < 2^31 (validated): a 32-bit division
          b = (long long)((unsigned)tok / (unsigned)p.seq);
          s = tok - b * p.seq;
        }
        const int h = hl;
        const bool isq = h < hq;
        const long long hh = isq ? h : h - hq;
        const T* in = static_cast<const T*>(isq ? p.q.x : p.k.x) + b * (isq ? p.q.bs : p.k.bs) + s * (isq ? p.q.ss : p.k.ss) +
                hh * (isq ? p.q.hs : p.k.hs);
        out[u] = static_cast<T*>(isq ? p.q.out : p.k.out) + b * (isq ? p.q.obs : p.k.obs) +
                 s * (isq ? p.q.oss : p.k.oss) + hh * (isq ? p.q.ohs : p.k.ohs);
        ip[u] = (const void*)out[u] == (const void*)in;
        if (c >= rot_chunks) {  // the pass-through tail of an out-of-place head: copied right here
          if (!ip[u]) {
            const int off = p.rotary_dim + (c - rot_chunks) * TE;
            stv<T, TE, VEC>(out[u] + off, ldv<T, TE, VEC>(in + off));
          }
        } else {
          live[u] = true;
          tk[u] = tok;
          j[u] = c * P;
          pos0[u] = position(p, 0, tok);  // row 0 (mrope: read again per frequency below)
          if constexpr (LAYOUT == kNeox) {
            xa[u].load(in + j[u]);
            ya[u].load(in + half + j[u]);
          } else {
            xa[u].load(in + 2 * j[u]);
          }
        }
      }
      tok += st;
      hl += sh;
      c += sc;
      if (c >= cph) { c -= cph; ++hl; }
      if (hl >= p.heads) { hl -= p.heads; ++tok; }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!live[u]) continue;
      // the token's verdict over the rows its frequencies read (token_in_range; no mrope: row 0)
      const bool ok = p.mrope ? token_in_range(p, tk[u]) : pos_in_range(p, pos0[u]);
      if (!ok) {
        if (p.flag) *p.flag = 1;  // every writer writes 1
        if (ip[u]) continue;  // left as it is (copied out of place)
      } else {
        float cv[P], sv[P];
        if (p.cache && !p.mrope) {  // one row: the item's cos and sin off one address, issued at once
          const float* row = p.cache + pos0[u] * (2 * half) + j[u];
          if (cs_vec) {  // 16-byte (8-byte for 2 pairs) loads: a quarter of the L1 wavefronts of scalar ones
            lds_floats<P, VEC>(row, cv);
            lds_floats<P, VEC>(row + half, sv);
          } else {
#pragma unroll
            for (int e = 0; e < P; ++e) {
              cv[e] = row[e];
              sv[e] = row[half + e];
            }
          }
        } else if (p.cache) {  // mrope: a frequency's row by its section (not unrolled: an address an entry)
          float lc[P], ls[P];
#pragma unroll 1
          for (int e = 0; e < P; ++e) {
            const int i = j[u] + e;
            const float* row = p.cache + position(p, freq_row(p, i), tk[u]) * (2 * half);
            lc[e] = row[i];
            ls[e] = row[half + i];
          }
#pragma unroll
          for (int e = 0; e < P; ++e) {
            cv[e] = lc[e];
            sv[e] = ls[e];
          }
        } else {
          // one sincos at a time into a local array, then registers: unrolled, the fp64 sincos made
          // ptxas (13.0, sm_90, bf16 NeoX 16-byte) spill 232 bytes at 64 registers (80 at 2 a step)
          float lc[P], ls[P];
#pragma unroll 1
          for (int e = 0; e < P; ++e) {
            const int i = j[u] + e;
            const long long ps = p.mrope ? position(p, freq_row(p, i), tk[u]) : pos0[u];
            cos_sin(ps, p.inv_freq[i], p.scaling, &lc[e], &ls[e]);
          }
#pragma unroll
          for (int e = 0; e < P; ++e) {
            cv[e] = lc[e];
            sv[e] = ls[e];
          }
        }
        rotate_item<LAYOUT, P, false>(xa[u], ya[u], cv, sv);
      }
      store_item<LAYOUT>(xa[u], ya[u], out[u], j[u], half);
    }
  }
}

}  // namespace mlops::rope
