// The "pipe" RoPE kernels (variants pipe4 / pipe8, rope_launch.h): grid.x = p.grid_x CTAs (a few an
// SM) and each loops over token blocks blockIdx.x, + grid_x, ... with the next block's work issued
// while the current one completes. An early CTA still pays its positions -> cos/sin chain once per
// block (2 round trips for 1 of data); here, in iteration k (block b, buffers k & 1):
//   finish b (its q / k arrived, its cos/sin staged) -> issue the q / k loads of b + G ->
//   issue the position loads of b + 2G (registers) -> stage b + G's cos/sin from its positions,
//   which the last iteration left in shared memory (one cache round trip) -> store b + 2G's
//   positions -> barrier
// so an iteration costs about one DRAM round trip with U items a thread in flight throughout.
// Same items, same per-pair arithmetic as the early kernels (Items), so the same bits.
#pragma once
#include "rope_kernel_early.cuh"

namespace mlops::rope {

// Shared memory of a pipe CTA: cos/sin [2][tpc][rd] floats, positions [2][3][tpc], flags [2][tpc].
inline size_t pipe_smem_bytes(const Params& p) {
  return sizeof(float) * 2 * size_t(p.tpc) * p.rotary_dim + sizeof(long long) * 6 * p.tpc + sizeof(int) * 2 * p.tpc;
}

template <class T, int LAYOUT, bool VEC, int U>
__global__ void __launch_bounds__(kCtaThreads, early_min_ctas<U>()) rope_kernel_pipe(const Params p) {
  extern __shared__ float smem[];
  const int rd = p.rotary_dim, half = p.half, tpc = p.tpc;
  long long* posb = reinterpret_cast<long long*>(smem + 2 * tpc * rd);  // [2][3][tpc]
  int* badb = reinterpret_cast<int*>(posb + 6 * tpc);                   // [2][tpc]
  const long long nblocks = (p.tokens + tpc - 1) / tpc, G = p.grid_x;
  const int nrows = p.mrope ? 3 : 1;
  const int h0 = blockIdx.y * p.hpc;
  const int x = (int)threadIdx.x;
  Items<T, LAYOUT, VEC, U> it(p, x, h0, min(p.hpc, p.heads - h0));
  auto ntok_of = [&](long long b) { return (int)min((long long)tpc, p.tokens - b * tpc); };

  // Positions of block b: thread x < ntok * rows loads one (issued now, stored by put_pos).
  auto get_pos = [&](long long b) -> long long {
    if (b >= nblocks) return 0;
    const int nt = ntok_of(b);
    if (x >= nt * nrows) return 0;
    const int row = x / nt;
    return position(p, row, b * tpc + (x - row * nt));
  };
  auto put_pos = [&](long long b, int buf, long long v) {
    if (b >= nblocks) return;
    const int nt = ntok_of(b);
    if (x >= nt * nrows) return;
    const int row = x / nt;
    posb[(buf * 3 + row) * tpc + (x - row * nt)] = v;
  };
  // Block b's flags and cos/sin into buffer buf from its positions in posb[buf].
  auto stage = [&](long long b, int buf) {
    if (b >= nblocks) return;
    const int nt = ntok_of(b);
    const long long* pb = posb + buf * 3 * tpc;
    float* cs = smem + buf * tpc * rd;
    if (x < nt) {
      bool ok = true;
      for (int row = 0; row < nrows; ++row) ok = ok && (!row_used(p, row) || pos_in_range(p, pb[row * tpc + x]));
      badb[buf * tpc + x] = !ok;
      if (!ok && p.flag && blockIdx.y == 0) *p.flag = 1;
    }
    for (int idx = x; idx < nt * half; idx += kCtaThreads) {
      const int tk = idx / half, i = idx - tk * half;
      const long long pos = pb[freq_row(p, i) * tpc + tk];
      if (pos_in_range(p, pos)) freq_at(p, pos, i, cs + tk * rd);  // nothing read out of range
    }
  };

  long long b = blockIdx.x;
  if (b >= nblocks) return;  // uniform: the whole CTA
  it.start(b * tpc, ntok_of(b));
  it.load(p);  // q / k of the first block in flight before its positions are read
  {
    const long long v0 = get_pos(b), v1 = get_pos(b + G);
    put_pos(b, 0, v0);
    put_pos(b + G, 1, v1);
  }
  __syncthreads();
  stage(b, 0);
  __syncthreads();
  for (int k = 0; b < nblocks; ++k, b += G) {
    const int buf = k & 1;
    const int nt = ntok_of(b);
    it.finish(p, smem + buf * tpc * rd, badb + buf * tpc);
    // A block with more than U items a thread (a split the planner does not pick): U more at a time.
    for (int done = U * kCtaThreads; done < nt * it.ipt; done += U * kCtaThreads) {
      it.load(p);
      it.finish(p, smem + buf * tpc * rd, badb + buf * tpc);
    }
    if (b + G < nblocks) {
      it.start((b + G) * tpc, ntok_of(b + G));
      it.load(p);
    }
    const long long v = get_pos(b + 2 * G);  // posb[buf] was read by stage(b) before the last barrier
    stage(b + G, buf ^ 1);                    // cs / flags [buf ^ 1] were read by finish(b - G) before it
    put_pos(b + 2 * G, buf, v);
    __syncthreads();
  }
}

}  // namespace mlops::rope
