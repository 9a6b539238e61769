// The RoPE kernel family: <dtype, layout, vectorized> (variant step2; the early variants are in
// rope_kernel_early.cuh). A CTA takes tpc tokens: first it puts
// their cos/sin (from the cache or computed, mrope rows picked per frequency) into shared
// memory and checks their positions, then its 256 threads walk (token, head, chunk) items;
// a chunk is 16 bytes of a head (vectorized) or one pair / element (any alignment).
#pragma once
#include "rope_access.cuh"
#include "rope_kernel_dec.cuh"
#include "rope_kernel_flat.cuh"
#include "rope_kernel_stage.cuh"

namespace mlops::rope {

template <class T, int LAYOUT, bool VEC>
__global__ void __launch_bounds__(kCtaThreads, 4) rope_kernel(const Params p) {
  using G = Geometry<T, LAYOUT, VEC>;
  constexpr int P = G::P, TE = G::TE;
  extern __shared__ float smem[];
  const int rd = p.rotary_dim, half = p.half;
  long long* base = reinterpret_cast<long long*>(smem + p.tpc * rd);  // [tpc][4]: q in, q out, k in, k out
  int* bad = reinterpret_cast<int*>(base + 4 * p.tpc);
  const long long t0 = (long long)blockIdx.x * p.tpc;
  const int ntok = (int)min((long long)p.tpc, p.tokens - t0);
  const int h0 = blockIdx.y * p.hpc;
  const int nh = min(p.hpc, p.heads - h0);
  if ((int)threadIdx.x < ntok) {
    const int tok = threadIdx.x;
    const long long t = t0 + tok;
    const long long b = t / p.seq, s = t - b * p.seq;  // once a token, not once an item
    bad[tok] = 0;
    base[4 * tok + 0] = b * p.q.bs + s * p.q.ss;
    base[4 * tok + 1] = b * p.q.obs + s * p.q.oss;
    base[4 * tok + 2] = b * p.k.bs + s * p.k.ss;
    base[4 * tok + 3] = b * p.k.obs + s * p.k.oss;
  }
  __syncthreads();
  // Phase 1: cos / sin of the CTA's tokens; an out-of-range position is never dereferenced.
  for (int idx = threadIdx.x; idx < ntok * half; idx += kCtaThreads) {
    const int tok = idx / half, i = idx - tok * half;
    if (!token_freq(p, t0 + tok, i, smem + tok * rd)) atomicOr(&bad[tok], 1);  // one writer at a time: racecheck-clean
  }
  __syncthreads();
  if ((int)threadIdx.x < ntok && bad[threadIdx.x] && p.flag && blockIdx.y == 0) *p.flag = 1;

  // Phase 2: (token, head, chunk) items, the chunk fastest so a warp reads contiguous bytes.
  // Two items a thread a step, both loads issued before either is used (more bytes in flight).
  const int rot_chunks = half / P;  // P pairs a chunk in both layouts
  const int cph = rot_chunks + (p.tail ? (p.head_dim - rd) / TE : 0);
  const int ipt = nh * cph;
  const int n = ntok * ipt;
  const int hq = (int)p.q.heads;
  constexpr int U = 2;
  for (int it0 = threadIdx.x; it0 < n; it0 += U * kCtaThreads) {
    const T* in[U];
    T* out[U];
    int j[U], tok[U];
    bool rot[U], live[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int it = it0 + u * kCtaThreads;
      live[u] = false;
      if (it >= n) continue;
      tok[u] = it / ipt;
      const int r = it - tok[u] * ipt;
      const int hl = r / cph;
      const int c = r - hl * cph;
      const int h = h0 + hl;
      const bool isq = h < hq;
      const long long hh = isq ? h : h - hq;
      in[u] = static_cast<const T*>(isq ? p.q.x : p.k.x) + base[4 * tok[u] + (isq ? 0 : 2)] +
              hh * (isq ? p.q.hs : p.k.hs);
      out[u] = static_cast<T*>(isq ? p.q.out : p.k.out) + base[4 * tok[u] + (isq ? 1 : 3)] +
               hh * (isq ? p.q.ohs : p.k.ohs);
      const bool inplace = (const void*)out[u] == (const void*)in[u];
      if (c >= rot_chunks) {  // the pass-through tail of an out-of-place head: copied right here
        if (!inplace) {
          const int off = rd + (c - rot_chunks) * TE;
          stv<T, TE, VEC>(out[u] + off, ldv<T, TE, VEC>(in[u] + off));
        }
        continue;
      }
      rot[u] = !bad[tok[u]];
      live[u] = rot[u] || !inplace;  // an out-of-range token is left as it is (copied out of place)
      j[u] = c * P;
    }
    if constexpr (LAYOUT == kNeox) {
      Vec<T, P> xa[U], ya[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (live[u]) {
          xa[u] = ldv<T, P, VEC>(in[u] + j[u]);
          ya[u] = ldv<T, P, VEC>(in[u] + half + j[u]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (!live[u]) continue;
        if (rot[u]) {
          const float* cs = smem + tok[u] * rd + j[u];
#pragma unroll
          for (int e = 0; e < P; ++e) {
            float ox, oy;
            rotate(Elem<T>::load(xa[u].v[e]), Elem<T>::load(ya[u].v[e]), cs[e], cs[half + e], &ox, &oy);
            xa[u].v[e] = Elem<T>::store(ox);
            ya[u].v[e] = Elem<T>::store(oy);
          }
        }
        stv<T, P, VEC>(out[u] + j[u], xa[u]);
        stv<T, P, VEC>(out[u] + half + j[u], ya[u]);
      }
    } else {
      Vec<T, 2 * P> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (live[u]) v[u] = ldv<T, 2 * P, VEC>(in[u] + 2 * j[u]);  // pairs j ... j + P - 1
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (!live[u]) continue;
        if (rot[u]) {
          const float* cs = smem + tok[u] * rd + j[u];
#pragma unroll
          for (int e = 0; e < P; ++e) {
            float ox, oy;
            rotate(Elem<T>::load(v[u].v[2 * e]), Elem<T>::load(v[u].v[2 * e + 1]), cs[e], cs[half + e], &ox, &oy);
            v[u].v[2 * e] = Elem<T>::store(ox);
            v[u].v[2 * e + 1] = Elem<T>::store(oy);
          }
        }
        stv<T, 2 * P, VEC>(out[u] + 2 * j[u], v[u]);
      }
    }
  }
}

using KernelFn = void (*)(Params);

// The kernel of a variant (rope_launch.h's table): shared by the launch below and the kernel-on-host
// runner (tests/c/rope_kernel_emulation.cpp), so CPU CI checks this mapping too.
template <class T, int L, bool V>
KernelFn kernel_for(int variant) {
  switch (variant) {
    case 2: return rope_kernel_early<T, L, V, 2>;
    case 3: return rope_kernel_early<T, L, V, 4>;
    case 4: return rope_kernel_early<T, L, V, 8>;
    case 5: return rope_kernel_early<T, L, V, 2, 5>;
    case 6: return rope_kernel_early<T, L, V, 2, 6>;
    case 7: return rope_kernel_stage<T, L, V, 4, 5>;
    case 8: return rope_kernel_stage<T, L, V, 8, 3>;
    case 9: return rope_kernel_stage<T, L, V, 4, 6>;
    case 10:  // flat2 and flat2p: one kernel, two grids (rope_launch.h's flat_grid)
    case 11: return rope_kernel_flat<T, L, V, 2, 4>;
    case 12: return rope_kernel_flat<T, L, V, 4, 2>;
    case 13: return rope_kernel_dec<T, L, V, 1, 4>;
    case 14: return rope_kernel_dec<T, L, V, 2, 3>;
    case 15: return rope_kernel_dec<T, L, V, 4, 2>;
    case 16: return rope_kernel_dec<T, L, V, 1, 5, false>;  // the direct cache path only (kernel_variant)
    default: return rope_kernel<T, L, V>;
  }
}

// The kernel a launch runs for its variant: decx5's kernel holds the direct cache path only (a 16-byte
// aligned cache, no mrope: rope_kernel_dec's ROW = false); any other call of decx5 runs dec's kernel.
inline int kernel_variant(const Params& p, bool vec, int variant) {
  if (variant >= 1 && variant <= kNumVariants && kVariants[variant - 1].dec == 2 && !dec_direct(p, vec)) return kDec;
  return variant;
}

// Dynamic shared memory of a launch (the stage variants size their slots by the items of a CTA).
template <class T>
size_t smem_for(const Params& p, bool vec, int layout, int variant) {
  const VariantInfo& v = kVariants[(variant >= 1 && variant <= kNumVariants ? variant : 1) - 1];
  if (v.flat) return 0;  // no shared memory
  // a row a warp, used on the fly / mrope only; none on the direct cache path (session 6: a launch that asks
  // for shared memory may make the SM change its L1 / shared carveout after the caller's kernels, which ask
  // for none; decode calls are ~2 us, so the direct path asks for none either: run 33 measures it)
  if (v.dec) return dec_direct(p, vec) ? 0 : sizeof(float) * size_t(kDecWarps) * p.rotary_dim;
  if (!v.stage) return smem_bytes(p);
  const int P = !vec ? 1 : (layout == kNeox ? Geometry<T, kNeox, true>::P : Geometry<T, kGptj, true>::P);
  const int TE = vec ? Geometry<T, kNeox, true>::TE : 1;
  const int cph = p.half / P + (p.tail ? (p.head_dim - p.rotary_dim) / TE : 0);
  return stage_smem_bytes(p, v.items_per_thread, layout, cph);
}

template <class T>
KernelFn kernel_for(bool vec, int layout, int variant) {
  if (layout == kNeox) return vec ? kernel_for<T, kNeox, true>(variant) : kernel_for<T, kNeox, false>(variant);
  return vec ? kernel_for<T, kGptj, true>(variant) : kernel_for<T, kGptj, false>(variant);
}

#ifndef MLOPS_ROPE_EMULATE_KERNEL  // tests/c/rope_kernel_emulation.cpp runs the kernels above as host code
// Launches stay in the object that instantiates the template: since nvcc 12.8 a template's
// launch stub is local to that object (-static-global-template-stub).
template <class T>
cudaError_t launch_t(const Params& p, bool vec, int layout, int variant, cudaStream_t s) {
  const dim3 grid(unsigned(p.grid_x), unsigned((p.heads + p.hpc - 1) / p.hpc));
  variant = kernel_variant(p, vec, variant);
  const KernelFn k = kernel_for<T>(vec, layout, variant);
  const size_t smem = smem_for<T>(p, vec, layout, variant);
  if (smem > 48 * 1024) {  // stage8's 64 KB of slots: past the default limit, an opt-in a call (per device, cheap)
    const cudaError_t e = cudaFuncSetAttribute(reinterpret_cast<const void*>(k),
                                               cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  k<<<grid, kCtaThreads, smem, s>>>(p);
  return cudaGetLastError();
}

#endif

}  // namespace mlops::rope
