// The "warps" decode variant: the same arithmetic in the same order as refine_kernel / combine_kernel
// (docs/attention.md, "Fixed order"), laid out for fewer instructions a (q head, token):
// - refine_warps_kernel: a CTA of 2 warps an item, warp g <-> group g of the chunk (slot 0: g = 0 the
//   sink, g = 1 the filling group). Scores: a lane a token (its K codes unpacked once, 4 q heads
//   against them; the integer dot is exact, so the layout does not change a bit). P V: a lane owns 4
//   channels for 4 q heads and runs their fmaf chains in token order (the V code of 4 channels is
//   assembled once a token for all heads). l and the V-min sum: lane hi of warp g, in token order.
// - combine_warps_kernel: a warp a (row, 32 channels); the per-slot exp in parallel, then each lane
//   runs the slot-order chains of combine_kernel on 32 partials loaded at once.
// The host emulation (fbla_host.cpp) is unchanged: every chain here is one of its chains.
#pragma once
#include "fbla_kernels.cuh"

namespace mlops::fbla {

constexpr int kWarpHeads = 4;                     // q heads a pass (the 32/8 GQA of issue 6: one pass)
constexpr int kWarpThreads = 32 * kChunkGroups;   // warp g <-> group g of a chunk
// imma_occ+coarse_imma: the IMMA refine at this many CTAs an SM (sm_90, nvcc 13.0: 96 registers and
// 16 bytes of spills, against 128 registers and 12 bytes at 8 CTAs; at 12 CTAs: 80 registers, 88 bytes
// of spills): 20 warps an SM instead of 16 to hide the load latency that run 14 points at
// (17.7 KB of shared memory a CTA: 10 an SM fit).
constexpr int kImmaOccCtas = 10;

// Channel d = 32w + 8i + k sits in byte i of code word 8w + k (the order the K bit planes' rotate-and-mask gathers
// made until session 25, kept by the fragment-ordered K fields: fbla_math.h). The q digits are stored in the same
// order (word 8w + k, byte i).
__device__ __forceinline__ int perm_channel(int d) { return (d & ~31) + 4 * (d & 7) + ((d >> 3) & 3); }
// A lane's per (2 or 4, the q digits' setup) channels lane * per + i sit at perm_channel(lane * per) + 4 i: i does not
// carry out of d & 7 (lane * per is a multiple of per), so one position a lane and immediate offsets, where ptxas
// computed perm_channel for each channel (~30 instructions a (head, group), session 24).
template <int per>
__device__ __forceinline__ int perm_channel_lane(int lane, int i) {
  static_assert(per == 2 || per == 4, "D 64 or 128");
  return perm_channel(lane * per) + 4 * i;
}

// float(byte i of w), exactly: the byte in the mantissa of 2^23, minus 2^23.
__device__ __forceinline__ float byte_f(uint32_t w, int i) {
  return bits_f32(0x4B000000u | ((w >> (8 * i)) & 0xffu)) - 8388608.0f;
}

// Programmatic dependent launch (sm_90): the refine lets the combine's launch start early; the combine
// waits for the refine's completion and memory. No-ops below sm_90, in the PTX builds' older targets
// and in the kernel-on-host runner (kernels run one after another there).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// A refine pass's flags (sm.ref of WarpSmem, StageSmem, MmaSmem, Mma4Smem): byte hi of word rb is 1 where 16-token
// block rb of the chunk is refined for head hi, 0 otherwise and for every head >= nh (each writer sets all 4 heads of a
// block). So "any head" is one 32-bit load and a test (session 31): the scores' per-block loop over the heads was up
// to 4 byte loads, each behind a branch. The kEarly refine's static SASS (ptxas 13.0, sm_90) 4,133 -> 3,955
// instructions; GPU run 160 (events, means of 4 calls): B8 L128K 3+3 exact 477.5 -> 469.8 us, 4+2 465.0 -> 459.2.
static_assert(kWarpHeads == 4, "RefFlags: a block's heads in one word");
struct alignas(4) RefFlags {
  unsigned char b[kChunkGroups * kBlocksPerGroup][kWarpHeads];
  __device__ __forceinline__ bool on(int hi, int rb) const { return b[rb][hi] != 0; }
  __device__ __forceinline__ void set(int hi, int rb, bool v) { b[rb][hi] = v ? 1 : 0; }
  __device__ __forceinline__ bool any(int rb) const { return word(rb) != 0u; }
  // Block rb's 4 heads at once: the first nh set where `on`, the others 0.
  __device__ __forceinline__ void set_block(int rb, int nh, bool on) {
    word(rb) = on && nh > 0 ? 0x01010101u & (0xffffffffu >> (8 * (kWarpHeads - nh))) : 0u;
  }

 private:
  __device__ __forceinline__ uint32_t& word(int rb) { return *reinterpret_cast<uint32_t*>(b[rb]); }
  __device__ __forceinline__ const uint32_t& word(int rb) const { return *reinterpret_cast<const uint32_t*>(b[rb]); }
};

struct alignas(16) WarpSmem {
  int8_t what[kWarpHeads][kChunkGroups][2][128];  // q digits in perm_channel order
  float qf[kWarpHeads][128];
  F4 pw[kChunkGroups][kGroup];  // p of the 4 heads a token
  F4 aw[kChunkGroups][kGroup];  // closed: p * v_scale of the 4 heads a token (the P V weight)
  float vmn[kChunkGroups][kGroup];
  float gv[kChunkGroups][kWarpHeads][128];
  float sw[kWarpHeads][kChunkGroups], bias[kWarpHeads][kChunkGroups];
  int32_t wsum[kWarpHeads][kChunkGroups], wabs[kWarpHeads][kChunkGroups];  // the coarse pass's
  float red[kChunkGroups][kWarpHeads], m[kWarpHeads], thr[kWarpHeads];
  float lg[kChunkGroups][kWarpHeads], bs[kChunkGroups][kWarpHeads];
  RefFlags ref;
};

// fbla_host.cpp qgroup() for (head hi, group g of the chunk), by one warp: the same per-lane folds
// and butterflies as setup_groups; the digits land in perm_channel order. Smem: WarpSmem or StageSmem
// (the same field names: what, qf, sw, bias, wsum, wabs). kSums false (the mma_pv / mma_pv4 refines, which
// never read them): the coarse pass's wsum / wabs are not computed (nor written); every other value the same.
template <int D, class Smem, bool kSums = true>
__device__ void setup_group_warp(const Layout& l, Smem& sm, const uint8_t* rec, int hi, int g) {
  constexpr int per = D / 32;
  const int lane = threadIdx.x & 31;
  const RecVals kmin(rec, l.kmin);
  const RecVals kscale(rec, l.kscale);
  int ws = 0, wa = 0;  // integers: exact in any order
  const float s_w = qhat_warp_digits<per>(
      [&](int i) { return sm.qf[hi][lane * per + i]; }, [&](int i) { return kscale[lane * per + i]; },
      [&](int i, int dh, int dl) {
        const int pc = perm_channel_lane<per>(lane, i);
        sm.what[hi][g][0][pc] = static_cast<int8_t>(dh);
        sm.what[hi][g][1][pc] = static_cast<int8_t>(dl);
        if (kSums) {
          const int q = dh * 256 + dl;
          ws += q;
          wa += q < 0 ? -q : q;
        }
      });
  if (kSums) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
      ws += __shfl_xor_sync(0xffffffffu, ws, off);
      wa += __shfl_xor_sync(0xffffffffu, wa, off);
    }
  }
  float bsum = 0.0f;
#pragma unroll
  for (int i = 0; i < per; ++i) bsum = fmaf(sm.qf[hi][lane * per + i], kmin[lane * per + i], bsum);
  bsum = warp_butterfly32(bsum);
  if (lane == 0) {
    sm.sw[hi][g] = s_w;
    sm.bias[hi][g] = bsum;
    if (kSums) {
      sm.wsum[hi][g] = ws;
      sm.wabs[hi][g] = wa;
    }
  }
}

// The coarse codes (code >> fb) of token t, in perm_channel order.
template <int D>
__device__ __forceinline__ void load_coarse_perm(const Layout& l, const uint8_t* rec, int t, uint32_t (&c4)[D / 4]) {
  fo_k_token_words<D>(reinterpret_cast<const uint32_t*>(rec + l.kc), reinterpret_cast<const uint32_t*>(rec + l.kf),
                      l.cb, t, true, c4);
}

// The codes of token t (all six bits), word 8w + k byte i = channel 32w + 8i + k.
template <int D>
__device__ __forceinline__ void load_codes_perm(const Layout& l, const uint8_t* rec, int t, uint32_t (&c4)[D / 4]) {
  fo_k_token_words<D>(reinterpret_cast<const uint32_t*>(rec + l.kc), reinterpret_cast<const uint32_t*>(rec + l.kf),
                      l.cb, t, false, c4);
}

// 8- and 16-byte global vectors (the BF16 rows: 16-byte aligned, the API checks it for this variant).
struct alignas(16) U4 {
  uint32_t x, y, z, w;
};
struct alignas(8) U2 {
  uint32_t x, y;
};


__device__ __forceinline__ float f4_at(const F4& v, int i) { return reinterpret_cast<const float*>(&v)[i]; }

// The P V chains of a lane's 4 channels of cnt BF16 V rows (vr: row 0 at the lane's channels, rows D apart),
// token order, heads 0 .. nh - 1 weighted by pw[u] (4 heads a token); kStepV rows loaded at once.
// refine_warps_item and mma_pv's BF16 slices.
template <int D, int kStepV>
__device__ __forceinline__ void bf16_pv_rows(const uint16_t* vr, int cnt, const F4* pw, int nh, float (&acc)[kWarpHeads][4]) {
  for (int u0 = 0; u0 < cnt; u0 += kStepV) {
    U2 vx[kStepV];
#pragma unroll
    for (int q = 0; q < kStepV; ++q)
      vx[q] = u0 + q < cnt ? *reinterpret_cast<const U2*>(vr + static_cast<size_t>(u0 + q) * D) : U2{0u, 0u};
#pragma unroll
    for (int q = 0; q < kStepV; ++q) {
      if (u0 + q >= cnt) break;
      const float vf[4] = {bits_f32(vx[q].x << 16), bits_f32(vx[q].x & 0xffff0000u), bits_f32(vx[q].y << 16),
                           bits_f32(vx[q].y & 0xffff0000u)};
      const F4 pu = pw[u0 + q];
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi)
        if (hi < nh)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[hi][i] = fmaf(f4_at(pu, hi), vf[i], acc[hi][i]);
    }
  }
}

// 8 channels d0 .. d0 + 7 of a BF16 K row (one 16-byte load) into the fmaf chains of heads 0 .. nh - 1, in
// channel order (qf: the heads' q rows as floats). refine_warps_item and mma_pv's BF16 slices.
template <class Qf>
__device__ __forceinline__ void bf16_dot8(const U4& kx, const Qf& qf, int d0, int nh, float (&dot)[kWarpHeads]) {
  const uint32_t kw[4] = {kx.x, kx.y, kx.z, kx.w};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float kf = bits_f32(i & 1 ? kw[i / 2] & 0xffff0000u : kw[i / 2] << 16);
#pragma unroll
    for (int hi = 0; hi < kWarpHeads; ++hi)
      if (hi < nh) dot[hi] = fmaf(qf[hi][d0 + i], kf, dot[hi]);
  }
}

// bf16_dot8 for every one of the kWarpHeads heads, the q values as 16-byte shared loads (qf: 16-byte aligned rows): 2 a
// head instead of 8 scalar ones under a head predicate each (ptxas 13.0 sm_90 did not merge those: 32 LDS and their
// predicates a step). The chains of heads >= nh run on whatever qf holds there and the caller reads only heads < nh,
// whose chains are bf16_dot8's (the same fmaf in channel order), so the same bits. mma_pv4's BF16 slices (session 23).
__device__ __forceinline__ void bf16_dot8_all(const U4& kx, const float (&qf)[kWarpHeads][128], int d0,
                                              float (&dot)[kWarpHeads]) {
  const uint32_t kw[4] = {kx.x, kx.y, kx.z, kx.w};
  float kf[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) kf[i] = bits_f32(i & 1 ? kw[i / 2] & 0xffff0000u : kw[i / 2] << 16);
#pragma unroll
  for (int hi = 0; hi < kWarpHeads; ++hi) {
    const F4 a = *reinterpret_cast<const F4*>(&qf[hi][d0]), b = *reinterpret_cast<const F4*>(&qf[hi][d0 + 4]);
    const float q[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) dot[hi] = fmaf(q[i], kf[i], dot[hi]);
  }
}

// __dp4a(a, b, c) with a's bytes unsigned where kUA (dp4a.u32.s32; the kernel-on-host runner: the same sums).
template <bool kUA>
__device__ __forceinline__ int dp4a_a(int a, int b, int c) {
  if constexpr (!kUA) {
    return __dp4a(a, b, c);
  } else {
#if defined(__CUDA_ARCH__)
    int r;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
#else
    for (int i = 0; i < 4; ++i)
      c += static_cast<int>((static_cast<uint32_t>(a) >> (8 * i)) & 0xffu) * static_cast<int>(static_cast<int8_t>(b >> (8 * i)));
    return c;
#endif
  }
}

// D (16 x 8, s32) += A (16 x 32, s8, row) B (32 x 8, s8, col) by a warp, in the PTX fragments of
// mma.m16n8k32 (gid = lane / 4, tig = lane % 4): a[0] row gid, k 4tig .. 4tig+3; a[1] row gid + 8, the
// same k; a[2] / a[3] the same rows, k + 16; b[0] column gid, k 4tig .. 4tig+3; b[1] k + 16; c[0] / c[1]
// row gid, columns 2tig / 2tig+1; c[2] / c[3] row gid + 8. Integer sums (no overflow here): the same
// integers in any order. sm_80+: the tensor core; compute_61 / 70 / 75 (PTX) and the kernel-on-host
// runner: the same sums by shuffles and DP4A (every lane of the warp must call it).
// kUA (session 30, fo_k_block_dots' 4+2 coarse plane): A unsigned (u8, B still s8).
template <bool kUA = false>
__device__ __forceinline__ void mma_s8_16x8x32(const uint32_t (&a)[4], const uint32_t (&b)[2], int32_t (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kUA)
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int sa = 4 * gid + t;  // the lane holding k 4t .. 4t+3 (and + 16) of rows gid, gid + 8
    const int a0 = __shfl_sync(0xffffffffu, static_cast<int>(a[0]), sa);
    const int a1 = __shfl_sync(0xffffffffu, static_cast<int>(a[1]), sa);
    const int a2 = __shfl_sync(0xffffffffu, static_cast<int>(a[2]), sa);
    const int a3 = __shfl_sync(0xffffffffu, static_cast<int>(a[3]), sa);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int sb = 4 * (2 * tig + j) + t;  // the lane holding column 2tig + j, the same k
      const int b0 = __shfl_sync(0xffffffffu, static_cast<int>(b[0]), sb);
      const int b1 = __shfl_sync(0xffffffffu, static_cast<int>(b[1]), sb);
      c[j] = dp4a_a<kUA>(a2, b1, dp4a_a<kUA>(a0, b0, c[j]));
      c[2 + j] = dp4a_a<kUA>(a3, b1, dp4a_a<kUA>(a1, b0, c[2 + j]));
    }
  }
#endif
}

// The 4 S A-fragment field registers (fo_k_field: register n = 4 s + a, k-step s, fragment register a) of lane `lane`
// in 16-token block b of a K field region (coarse: bits = cb, fine: bits = fb; fbla_math.h "The K codes' order"): the
// lane's words by its parts' lane-contiguous vector loads (D 128: 4 + 4, 4 + 2, 4 words; D 64: 4, 2 + 1, 2).
// kScaleOdd: the odd registers (token gid + 8) scaled, by 8 (bits 3: fo_k_field3_x8odd), 16 (bits 4:
// fo_k_field4_x16odd) or 4 (bits 2: fo_k_field2_x4odd).
template <int D, int bits, bool kScaleOdd = false>
__device__ __forceinline__ void fo_k_block_regs(const uint32_t* region, int b, int lane, uint32_t (&r)[D / 8]) {
  constexpr int nw = fo_k_lane_words(D, bits), n4 = nw & ~3, n2 = (nw - n4) & ~1;  // the parts' sizes (fo_k_word)
  uint32_t w[nw];
#pragma unroll
  for (int p = 0; p < n4 / 4; ++p) {
    const U4 x = *reinterpret_cast<const U4*>(region + fo_k_word(D, bits, b, lane, 4 * p));
    w[4 * p] = x.x, w[4 * p + 1] = x.y, w[4 * p + 2] = x.z, w[4 * p + 3] = x.w;
  }
  if constexpr (n2 != 0) {
    const U2 x = *reinterpret_cast<const U2*>(region + fo_k_word(D, bits, b, lane, n4));
    w[n4] = x.x, w[n4 + 1] = x.y;
  }
  if constexpr (nw > n4 + n2) w[nw - 1] = region[fo_k_word(D, bits, b, lane, nw - 1)];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
    r[n] = !kScaleOdd  ? fo_k_field<bits>(w, n)
           : bits == 3 ? fo_k_field3_x8odd(w, n)
           : bits == 4 ? fo_k_field4_x16odd(w, n)
                       : fo_k_field2_x4odd(w, n);
}

// The integer dots of block b (tokens 16 b + gid, + 8) with the q digits' B fragments (bf[s]): c[0] / c[1] (token gid)
// and c[2] / c[3] (token gid + 8) as the columns of mma_s8_16x8x32, from the coarse and the fine fields in two
// accumulators, c = (coarse . q << fb) + fine . q (exact: |c| < 2^31). kc / kf: the group's K regions.
// Session 30: token gid + 8's fields (the odd A registers) enter the MMAs scaled, so that most of them take one mask
// instead of a shift and a mask (fo_k_field3_x8odd / fo_k_field4_x16odd / fo_k_field2_x4odd): 3+3 both planes x 8
// (c[2] / c[3] come out 8 x c); 4+2 the coarse plane x 16 (up to 240: an unsigned A operand, mma_s8_16x8x32<true>)
// and the fine x 4 (c[2] / c[3] = 16 cc + 4 cf = 4 c). Exact multiples (|8 c| < 2^24), so an arithmetic shift right
// gives the same integers. 3+3: the kEarly refine's static SASS 4,189 -> 4,161 instructions (ptxas 13.0 sm_90: 32
// shifts fewer), 64 registers, no spills; GPU run 158 (events, means of 4 calls): B8 L128K 3+3 exact 487.2 -> 476.0 us
// (the refine in situ 457.3 -> 445.7), B1 L128K 81.4 -> 79.0; 4+2 (4,161 -> 4,133 instructions), run 159: B8 L128K 4+2
// exact 465.3 -> 455.1 us, B8 L16K 72.3 -> 70.3, B1 L128K 77.4 -> 75.5 (3+3's refine in situ 440.5 on that machine).
template <int D, int kCB>
__device__ __forceinline__ void fo_k_block_dots(const uint32_t* kc, const uint32_t* kf, int b, int lane,
                                                const uint32_t (&bf)[D / 32][2], int32_t (&c)[4]) {
  constexpr int S = D / 32, kFB = 6 - kCB;
  uint32_t rc[D / 8], rf[D / 8];
  fo_k_block_regs<D, kCB, true>(kc, b, lane, rc);
  fo_k_block_regs<D, kFB, true>(kf, b, lane, rf);
  int32_t cc[4] = {0, 0, 0, 0}, cf[4] = {0, 0, 0, 0};
#pragma unroll
  for (int s = 0; s < S; ++s) {
    const uint32_t ac[4] = {rc[4 * s], rc[4 * s + 1], rc[4 * s + 2], rc[4 * s + 3]};
    const uint32_t af[4] = {rf[4 * s], rf[4 * s + 1], rf[4 * s + 2], rf[4 * s + 3]};
    mma_s8_16x8x32<kCB == 4>(ac, bf[s], cc);  // 4+2: the coarse A unsigned (16 x 15)
    mma_s8_16x8x32(af, bf[s], cf);
  }
  c[0] = (cc[0] << kFB) + cf[0];
  c[1] = (cc[1] << kFB) + cf[1];
  if constexpr (kCB == 3) {  // token gid + 8's: 8 x c, exactly
    c[2] = ((cc[2] << kFB) + cf[2]) >> 3;
    c[3] = ((cc[3] << kFB) + cf[3]) >> 3;
  } else {  // 16 cc + 4 cf = 4 c
    c[2] = (cc[2] + cf[2]) >> 2;
    c[3] = (cc[3] + cf[3]) >> 2;
  }
}

// fo_k_block_dots with the mode's coarse width read at run time (cb: 3 or 4, uniform over the warp).
template <int D>
__device__ __forceinline__ void fo_k_block_dots(int cb, const uint32_t* kc, const uint32_t* kf, int b, int lane,
                                                const uint32_t (&bf)[D / 32][2], int32_t (&c)[4]) {
  if (cb == 3)
    fo_k_block_dots<D, 3>(kc, kf, b, lane, bf, c);
  else
    fo_k_block_dots<D, 4>(kc, kf, b, lane, bf, c);
}

// The B fragments of the q digits of group g: column n = gid = 2 head + digit, k-step s: code words
// 2S tig + 2s (k 4tig ..) and + 1 (k 16 + 4tig ..), in perm_channel order as sm.what.
template <int D, class Smem>
__device__ __forceinline__ void load_bfrag(const Smem& sm, int g, uint32_t (&bf)[D / 32][2]) {
  constexpr int S = D / 32;
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      bf[s][j] = *reinterpret_cast<const uint32_t*>(&sm.what[gid >> 1][g][gid & 1][4 * (2 * S * tig + 2 * s + j)]);
}

// The scores of a closed group by the warp (variant imma+coarse_warps): an MMA row tile = a 16-token
// block, k = the channels in perm_channel order, column n = 2 head + digit (the q digits, sm.what).
// Lane tig owns code words cw0 .. cw0 + 2S - 1 (cw0 = 2S tig; k-step s: words cw0 + 2s, cw0 + 2s + 1 as
// the k and k + 16 halves): the fragment-ordered K fields' registers (fo_k_block_dots), and c[0] / c[1] of lane
// (gid, tig) are the hi / lo digit sums of token 16 m + gid,
// head tig: 256 c[0] + c[1] == dot_codes, the same integer, then the same score_of. Result: score or
// -inf (block not refined for the head, or head >= nh) in component head of sm.pw[g][t] (a staging
// place: the probabilities overwrite it after two barriers).
template <int D>
__device__ __forceinline__ void imma_scores(const Layout& l, WarpSmem& sm, const uint8_t* rec, int g, int nh,
                                            float scale) {
  constexpr int S = D / 32;  // k-steps of 32 channels
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  uint32_t bf[S][2];
  load_bfrag<D>(sm, g, bf);
  const float bias = sm.bias[tig][g], sw = sm.sw[tig][g];
  const uint32_t* kc = reinterpret_cast<const uint32_t*>(rec + l.kc);
  const uint32_t* kf = reinterpret_cast<const uint32_t*>(rec + l.kf);
#pragma unroll 1
  for (int m = 0; m < kBlocksPerGroup; ++m) {
    const bool any = sm.ref.any(g * kBlocksPerGroup + m);  // (heads >= nh: 0)
    const bool mine = tig < nh && sm.ref.on(tig, g * kBlocksPerGroup + m);
    float* out0 = reinterpret_cast<float*>(&sm.pw[g][kBlock * m + gid]) + tig;
    float* out1 = reinterpret_cast<float*>(&sm.pw[g][kBlock * m + gid + 8]) + tig;
    if (!any) {  // uniform over the warp
      *out0 = neg_inf();
      *out1 = neg_inf();
      continue;
    }
    int32_t c[4];
    fo_k_block_dots<D>(l.cb, kc, kf, m, lane, bf, c);
    *out0 = mine ? score_of(bias, sw, c[0] * 256 + c[1], scale) : neg_inf();
    *out1 = mine ? score_of(bias, sw, c[2] * 256 + c[3], scale) : neg_inf();
  }
}

// The pass setup of a refine_warps item (heads hq0 .. hq0 + nh - 1): the q rows (sm.qf), the refine flags
// (sm.ref: every block of the ng groups for BF16 items and exact; else the blocks whose bound ub reaches the
// threshold sm.thr, max of lbmax - gap), the closed groups' q digits (setup_group_warp), and with kImma the
// scores into sm.pw (imma_scores).
template <int D, bool kImma>
__device__ __forceinline__ void warps_pass_setup(const DecodeParams& p, const Layout& l, WarpSmem& sm, const Item& it,
                                                 const uint8_t* rec, int hq0, int nh, int ng, int ch, int nch,
                                                 bool bf16, int tid, int g, int lane) {
  constexpr int kRef = kChunkGroups * kBlocksPerGroup;
  for (int i = tid; i < nh * D; i += kWarpThreads) {
    const int hi = i / D, d = i % D;
    sm.qf[hi][d] = bf16_to_f32(p.q[it.b * p.qbs + static_cast<long long>(hq0 + hi) * p.qhs + d]);
  }
  // the refine flags (uniform per 16-token block)
  for (int rb = tid; rb < kRef; rb += kWarpThreads)  // !bf16 && !exact: set below from the bounds
    sm.ref.set_block(rb, nh, rb / kBlocksPerGroup < ng && (bf16 || p.exact));
  if (!bf16 && !p.exact && g == 0) {  // the threshold of each head: max over the row's chunks of lbmax, - gap
    for (int hi = 0; hi < nh; ++hi) {
      const float M = row_lbmax(p, it.b, hq0, hi, nch, lane);
      if (lane == 0) sm.thr[hi] = M - p.gap;
    }
  }
  __syncthreads();
  if (!bf16 && !p.exact) {
    for (int i = tid; i < nh * kRef; i += kWarpThreads) {
      const int hi = i / kRef, rb = i % kRef, gg = rb / kBlocksPerGroup;
      if (gg < ng) {
        const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
        sm.ref.set(hi, rb, p.s.ub[row * p.s.nblk + (ch * kChunkGroups) * kBlocksPerGroup + rb] >= sm.thr[hi]);
      }
    }
  }
  if (rec)
    for (int hi = 0; hi < nh; ++hi) setup_group_warp<D>(l, sm, rec, hi, g);
  __syncthreads();
  if constexpr (kImma) {
    if (rec) imma_scores<D>(l, sm, rec, g, nh, p.scale);
    __syncwarp();  // lane t reads the scores of token t below
  }
}

// The row maxima of a refine_warps pass: warp g's maxima wmax (every lane) by butterflies, then sm.m over
// both warps (maxima: exact in any order).
__device__ __forceinline__ void warps_row_max(WarpSmem& sm, float (&wmax)[kWarpHeads], int tid, int g, int lane) {
#pragma unroll
  for (int hi = 0; hi < kWarpHeads; ++hi) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) wmax[hi] = fmax_step(wmax[hi], __shfl_xor_sync(0xffffffffu, wmax[hi], off));
    if (lane == 0) sm.red[g][hi] = wmax[hi];
  }
  __syncthreads();
  if (tid < kWarpHeads) {
    float x = neg_inf();
    for (int gg = 0; gg < kChunkGroups; ++gg) x = fmax_step(x, sm.red[gg][tid]);
    sm.m[tid] = x;
  }
  __syncthreads();
}

// l and the V-min term of a refine_warps pass: lane hi of warp g, in token order over the refined blocks
// (sm.lg, sm.bs of group g).
__device__ __forceinline__ void warps_lv(WarpSmem& sm, const uint8_t* rec, int cnt, int nh, bool bf16, int g,
                                         int lane) {
  if (lane < nh) {
    const int hi = lane;
    float lg = 0.0f, bs = 0.0f;
    if (bf16) {
      for (int u = 0; u < cnt; ++u) lg = lg + f4_at(sm.pw[g][u], hi);
    } else if (rec) {
      for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
        if (!sm.ref.on(hi, g * kBlocksPerGroup + blk)) continue;
        for (int u = blk * kBlock; u < (blk + 1) * kBlock; ++u) {
          const float pu = f4_at(sm.pw[g][u], hi);
          lg = lg + pu;
          bs = bs + pu * sm.vmn[g][u];
        }
      }
    }
    sm.lg[g][hi] = lg;
    sm.bs[g][hi] = bs;
  }
}

// The partial of a refine_warps pass: groups in order (as refine_kernel).
template <int D>
__device__ __forceinline__ void warps_partial(const DecodeParams& p, const WarpSmem& sm, const Item& it, int hq0,
                                              int nh, int ng, bool bf16, int tid) {
  write_partial<D, kWarpThreads>(
      p, it, sm.m, hq0, nh, ng, tid,
      [&](int gg, int hi, int d) { return bf16 ? sm.gv[gg][hi][d] : sm.gv[gg][hi][d] + sm.bs[gg][hi]; },
      [&](int gg, int hi) { return sm.lg[gg][hi]; });
}

// One refine item of the "warps" layout for refine_stage_kernel's BF16 items (slot 0), on a WarpSmem laid over
// its dynamic shared memory: refine_warps_kernel's item with the BF16 rows' loads batched (the same chains in
// the same order). The BF16 item is the longest of a B1 L16K round: refine_warps_kernel's SASS (sm_90) waits
// a DRAM latency for each of 4 passes x 16 K loads (a rolled loop) and each 4 tokens' V rows. kBf:
//   1: (stage+coarse_imma, stage_pipe) V rows 8 tokens a batch;
//   2: (stage_bf+coarse_imma) a lane's whole K row (D / 8 16-byte loads) in flight at once, V rows 16 tokens a
//      batch, and the item's BF16 rows asked of L2 at its start (nothing prefetches slot 0's rows).
template <int D, bool kImma, int kBf>
__device__ __forceinline__ void refine_warps_item(const DecodeParams& p, WarpSmem& sm, int item, int items) {
  constexpr int W = D / 32;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x, g = tid / 32, lane = tid & 31;
  const size_t tile = static_cast<size_t>(kGroup) * D;
  const Item it = item_of(item, c.batch, c.kv_heads);
  const int L = len_of(p, it.b);
  const int nq = closed_groups(L), nch = chunks_of(nq);
  if (it.slot > nch) return;  // uniform over the CTA
  if (item == static_cast<int>(blockIdx.x)) prefetch_item(p, item, items, 1);
  prefetch_item(p, item + gridDim.x, items, 1);
  const bool bf16 = it.slot == 0;
  const int ch = it.slot - 1;
  const int ng = bf16 ? 2 : (nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups);
  // tokens of this warp's group: BF16 rows (sink / filling) or a closed group's 128
  const int cnt = bf16 ? (g == 0 ? sink_tokens(L) : tail_tokens(L)) : (g < ng ? kGroup : 0);
  const uint8_t* rec = bf16 || g >= ng ? nullptr : record_of(c, it.b, it.kh, ch * kChunkGroups + g);
  const size_t kvbase = (static_cast<size_t>(it.b) * c.kv_heads + it.kh) * tile;
  if (kBf == 2 && bf16) {  // the BF16 rows of both groups into L2 (the K rows are read first, then V)
    const int n0 = sink_tokens(L), n1 = tail_tokens(L);
    const long long rb = 2LL * D;  // bytes a row
    prefetch_range(reinterpret_cast<const uint8_t*>(c.sink_k + kvbase), n0 * rb, false);
    prefetch_range(reinterpret_cast<const uint8_t*>(c.tail_k + kvbase), n1 * rb, false);
    prefetch_range(reinterpret_cast<const uint8_t*>(c.sink_v + kvbase), n0 * rb, false);
    prefetch_range(reinterpret_cast<const uint8_t*>(c.tail_v + kvbase), n1 * rb, false);
  }
  for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
    const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
    const int hq0 = it.kh * p.Gq + h0;
    __syncthreads();  // the previous pass / item is done with sm
    warps_pass_setup<D, kImma>(p, l, sm, it, rec, hq0, nh, ng, ch, nch, bf16, tid, g, lane);
    // ---- scores: lane a token, 4 passes of 32 tokens; the warp's max a head
    float s[4][kWarpHeads];
    float wmax[kWarpHeads];
#pragma unroll
    for (int hi = 0; hi < kWarpHeads; ++hi) wmax[hi] = neg_inf();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int t = 32 * r + lane;
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) s[r][hi] = neg_inf();
      if (t < cnt) {
        if (bf16) {
          const uint16_t* kr = (g == 0 ? c.sink_k : c.tail_k) + kvbase + static_cast<size_t>(t) * D;
          float dot[kWarpHeads] = {0.0f, 0.0f, 0.0f, 0.0f};
          if constexpr (kBf == 2) {  // the whole row in flight, then the same chains
            U4 kx[D / 8];
#pragma unroll
            for (int j = 0; j < D / 8; ++j) kx[j] = *reinterpret_cast<const U4*>(kr + 8 * j);
#pragma unroll
            for (int j = 0; j < D / 8; ++j) bf16_dot8(kx[j], sm.qf, 8 * j, nh, dot);
          } else {
            for (int d0 = 0; d0 < D; d0 += 8)
              bf16_dot8(*reinterpret_cast<const U4*>(kr + d0), sm.qf, d0, nh, dot);  // 8 channels, 16 bytes
          }
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
            if (hi < nh) s[r][hi] = dot[hi] * p.scale;
        } else if constexpr (kImma) {
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) s[r][hi] = f4_at(sm.pw[g][t], hi);
        } else {
          const bool any = sm.ref.any(g * kBlocksPerGroup + t / kBlock);  // (heads >= nh: 0)
          if (any) {
            uint32_t c4[D / 4];
            load_codes_perm<D>(l, rec, t, c4);
#pragma unroll
            for (int hi = 0; hi < kWarpHeads; ++hi)
              if (hi < nh && sm.ref.on(hi, g * kBlocksPerGroup + t / kBlock))
                s[r][hi] = score_of(sm.bias[hi][g], sm.sw[hi][g], dot_codes<D>(sm.what[hi][g], c4), p.scale);
          }
        }
      }
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) wmax[hi] = fmax_step(wmax[hi], s[r][hi]);
    }
    warps_row_max(sm, wmax, tid, g, lane);
    // ---- probabilities, P V weights, V min of this warp's tokens
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int t = 32 * r + lane;
      float pt[kWarpHeads];  // refine_kernel's condition: a token of this pass that was scored
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) {
        const bool valid = t < cnt && hi < nh && (bf16 || sm.ref.on(hi, g * kBlocksPerGroup + t / kBlock));
        pt[hi] = valid ? exp_att(s[r][hi] - sm.m[hi]) : 0.0f;
      }
      sm.pw[g][t] = F4{pt[0], pt[1], pt[2], pt[3]};
      if (rec) {
        const float vs = RecVals(rec, l.vscale)[t];
        sm.aw[g][t] = F4{pt[0] * vs, pt[1] * vs, pt[2] * vs, pt[3] * vs};
        sm.vmn[g][t] = RecVals(rec, l.vmin)[t];
      }
    }
    __syncwarp();
    warps_lv(sm, rec, cnt, nh, bf16, g, lane);
    // ---- P V: 4 channels x 4 heads a lane, chains in token order
    float acc[kWarpHeads][4];
#pragma unroll
    for (int hi = 0; hi < kWarpHeads; ++hi)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[hi][i] = 0.0f;
    if (bf16) {  // lane: channels 4 lane .. 4 lane + 3
      if (4 * lane < D) {
        const uint16_t* vr = (g == 0 ? c.sink_v : c.tail_v) + kvbase + 4 * lane;
        bf16_pv_rows<D, kBf == 2 ? 16 : 8>(vr, cnt, sm.pw[g], nh, acc);  // 16 / 8 tokens' V rows loaded together
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi)
          if (hi < nh)
#pragma unroll
            for (int i = 0; i < 4; ++i) sm.gv[g][hi][4 * lane + i] = acc[hi][i];
      }
    } else if (rec) {  // lane (w, k): channels 32w + 8i + k, i = 0..3
      const int w = lane / 8, k = lane % 8;
      if (w < W) {
        const uint32_t* vp = reinterpret_cast<const uint32_t*>(rec + l.v);
        for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
          bool rf[kWarpHeads];
          bool any = false;
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) {
            rf[hi] = hi < nh && sm.ref.on(hi, g * kBlocksPerGroup + blk);
            any = any || rf[hi];
          }
          if (!any) continue;
          for (int u0 = blk * kBlock; u0 < (blk + 1) * kBlock; u0 += 4) {
            uint32_t codes4[4];  // [q]: token u0 + q, byte i: channel 32 w + 8 i + k
            fo_v_codes4<D>(vp, u0, w, k, codes4);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const uint32_t code = codes4[q];
              float cf[4];
#pragma unroll
              for (int i = 0; i < 4; ++i) cf[i] = byte_f(code, i);
              const F4 a = sm.aw[g][u0 + q];
#pragma unroll
              for (int hi = 0; hi < kWarpHeads; ++hi)
                if (rf[hi])
#pragma unroll
                  for (int i = 0; i < 4; ++i) acc[hi][i] = fmaf(f4_at(a, hi), cf[i], acc[hi][i]);
            }
          }
        }
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi)
          if (hi < nh)
#pragma unroll
            for (int i = 0; i < 4; ++i) sm.gv[g][hi][32 * w + 8 * i + k] = acc[hi][i];
      }
    }
    __syncthreads();
    warps_partial<D>(p, sm, it, hq0, nh, ng, bf16, tid);
  }
}

// Refine pass, "warps" layout: item (slot, b, kh) as refine_kernel; __launch_bounds__(64, 8): at most
// 128 registers, 8+ CTAs (16+ warps) an SM. Its own body, not refine_warps_item: round A ran it through
// that function and ptxas (sm_90, nvcc 13.0) then spilled (52 bytes here, 84 in imma_occ, against 0 / 16)
// and issued the BF16 V rows one at a time instead of 4: +33 us at B1 L16K, +150 us imma_occ at B8 L128K
// (run 20 against run 18). This is the body of before round A; its pass setup, row maxima, l / V-min term and
// partial are the item's (warps_pass_setup, warps_row_max, warps_lv, warps_partial: sm_90 SASS byte-identical
// to the inline code they replaced; the probabilities and the closed groups' P V as helpers were not).
// kImma: the closed groups' scores by imma_scores (variant imma+coarse_warps), the rest the same code.
// kMinCtas: CTAs an SM asked of ptxas (8: the 128-register cap; kImmaOccCtas for variant imma_occ+coarse_imma).
template <int D, bool kImma = false, int kMinCtas = 8>
__global__ void __launch_bounds__(kWarpThreads, kMinCtas) refine_warps_kernel(DecodeParams p, int items) {
  __shared__ WarpSmem sm;
  constexpr int W = D / 32;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x, g = tid / 32, lane = tid & 31;
  const size_t tile = static_cast<size_t>(kGroup) * D;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const Item it = item_of(item, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq);
    if (it.slot > nch) continue;  // uniform over the CTA
    if (item == static_cast<int>(blockIdx.x)) prefetch_item(p, item, items, 1);
    prefetch_item(p, item + gridDim.x, items, 1);
    const bool bf16 = it.slot == 0;
    const int ch = it.slot - 1;
    const int ng = bf16 ? 2 : (nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups);
    // tokens of this warp's group: BF16 rows (sink / filling) or a closed group's 128
    const int cnt = bf16 ? (g == 0 ? sink_tokens(L) : tail_tokens(L)) : (g < ng ? kGroup : 0);
    const uint8_t* rec = bf16 || g >= ng ? nullptr : record_of(c, it.b, it.kh, ch * kChunkGroups + g);
    const size_t kvbase = (static_cast<size_t>(it.b) * c.kv_heads + it.kh) * tile;
    for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
      const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
      const int hq0 = it.kh * p.Gq + h0;
      __syncthreads();  // the previous pass / item is done with sm
      warps_pass_setup<D, kImma>(p, l, sm, it, rec, hq0, nh, ng, ch, nch, bf16, tid, g, lane);
      // ---- scores: lane a token, 4 passes of 32 tokens; the warp's max a head
      float s[4][kWarpHeads];
      float wmax[kWarpHeads];
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) wmax[hi] = neg_inf();
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int t = 32 * r + lane;
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi) s[r][hi] = neg_inf();
        if (t < cnt) {
          if (bf16) {
            const uint16_t* kr = (g == 0 ? c.sink_k : c.tail_k) + kvbase + static_cast<size_t>(t) * D;
            float dot[kWarpHeads] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int d0 = 0; d0 < D; d0 += 8) {
              const U4 kx = *reinterpret_cast<const U4*>(kr + d0);  // 8 channels, 16 bytes
              const uint32_t kw[4] = {kx.x, kx.y, kx.z, kx.w};
#pragma unroll
              for (int i = 0; i < 8; ++i) {
                const float kf = bits_f32(i & 1 ? kw[i / 2] & 0xffff0000u : kw[i / 2] << 16);
#pragma unroll
                for (int hi = 0; hi < kWarpHeads; ++hi)
                  if (hi < nh) dot[hi] = fmaf(sm.qf[hi][d0 + i], kf, dot[hi]);
              }
            }
#pragma unroll
            for (int hi = 0; hi < kWarpHeads; ++hi)
              if (hi < nh) s[r][hi] = dot[hi] * p.scale;
          } else if constexpr (kImma) {
#pragma unroll
            for (int hi = 0; hi < kWarpHeads; ++hi) s[r][hi] = f4_at(sm.pw[g][t], hi);
          } else {
            const bool any = sm.ref.any(g * kBlocksPerGroup + t / kBlock);  // (heads >= nh: 0)
            if (any) {
              uint32_t c4[D / 4];
              load_codes_perm<D>(l, rec, t, c4);
#pragma unroll
              for (int hi = 0; hi < kWarpHeads; ++hi)
                if (hi < nh && sm.ref.on(hi, g * kBlocksPerGroup + t / kBlock))
                  s[r][hi] = score_of(sm.bias[hi][g], sm.sw[hi][g], dot_codes<D>(sm.what[hi][g], c4), p.scale);
            }
          }
        }
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi) wmax[hi] = fmax_step(wmax[hi], s[r][hi]);
      }
      warps_row_max(sm, wmax, tid, g, lane);
      // ---- probabilities, P V weights, V min of this warp's tokens
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int t = 32 * r + lane;
        float pt[kWarpHeads];  // refine_kernel's condition: a token of this pass that was scored
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi) {
          const bool valid = t < cnt && hi < nh && (bf16 || sm.ref.on(hi, g * kBlocksPerGroup + t / kBlock));
          pt[hi] = valid ? exp_att(s[r][hi] - sm.m[hi]) : 0.0f;
        }
        sm.pw[g][t] = F4{pt[0], pt[1], pt[2], pt[3]};
        if (rec) {
          const float vs = RecVals(rec, l.vscale)[t];
          sm.aw[g][t] = F4{pt[0] * vs, pt[1] * vs, pt[2] * vs, pt[3] * vs};
          sm.vmn[g][t] = RecVals(rec, l.vmin)[t];
        }
      }
      __syncwarp();
      warps_lv(sm, rec, cnt, nh, bf16, g, lane);
      // ---- P V: 4 channels x 4 heads a lane, chains in token order
      float acc[kWarpHeads][4];
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[hi][i] = 0.0f;
      if (bf16) {  // lane: channels 4 lane .. 4 lane + 3
        if (4 * lane < D) {
          const uint16_t* vr = (g == 0 ? c.sink_v : c.tail_v) + kvbase + 4 * lane;
          for (int u = 0; u < cnt; ++u) {
            const U2 vx = *reinterpret_cast<const U2*>(vr + static_cast<size_t>(u) * D);
            const float vf[4] = {bits_f32(vx.x << 16), bits_f32(vx.x & 0xffff0000u), bits_f32(vx.y << 16),
                                 bits_f32(vx.y & 0xffff0000u)};
            const F4 pu = sm.pw[g][u];
#pragma unroll
            for (int hi = 0; hi < kWarpHeads; ++hi)
              if (hi < nh)
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[hi][i] = fmaf(f4_at(pu, hi), vf[i], acc[hi][i]);
          }
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
            if (hi < nh)
#pragma unroll
              for (int i = 0; i < 4; ++i) sm.gv[g][hi][4 * lane + i] = acc[hi][i];
        }
      } else if (rec) {  // lane (w, k): channels 32w + 8i + k, i = 0..3
        const int w = lane / 8, k = lane % 8;
        if (w < W) {
          const uint32_t* vp = reinterpret_cast<const uint32_t*>(rec + l.v);
          for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
            bool rf[kWarpHeads];
            bool any = false;
#pragma unroll
            for (int hi = 0; hi < kWarpHeads; ++hi) {
              rf[hi] = hi < nh && sm.ref.on(hi, g * kBlocksPerGroup + blk);
              any = any || rf[hi];
            }
            if (!any) continue;
            for (int u0 = blk * kBlock; u0 < (blk + 1) * kBlock; u0 += 4) {
              uint32_t codes4[4];  // [q]: token u0 + q, byte i: channel 32 w + 8 i + k
              fo_v_codes4<D>(vp, u0, w, k, codes4);
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const uint32_t code = codes4[q];
                float cf[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) cf[i] = byte_f(code, i);
                const F4 a = sm.aw[g][u0 + q];
#pragma unroll
                for (int hi = 0; hi < kWarpHeads; ++hi)
                  if (rf[hi])
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[hi][i] = fmaf(f4_at(a, hi), cf[i], acc[hi][i]);
              }
            }
          }
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
            if (hi < nh)
#pragma unroll
              for (int i = 0; i < 4; ++i) sm.gv[g][hi][32 * w + 8 * i + k] = acc[hi][i];
        }
      }
      __syncthreads();
      warps_partial<D>(p, sm, it, hq0, nh, ng, bf16, tid);
    }
  }
}

// Coarse pass, "warps" layout: item (ch, b, kh) as coarse_kernel, warp g <-> group g of the chunk, a
// lane a token (4 passes of 32): the same integers (coarse_dot2 / coarse_err2), the same score_half
// roundings, maxima (exact in any order) by butterflies.
// The coarse pass of group g by the warp in the MMA layout: writes ub of the group's blocks for heads
// < nh (rows row0 + head) and leaves in lbm[head] (every lane) the max over the group's tokens of
// score_half(c2 - e2), as coarse_warps_kernel's lane-a-token loop does (maxima: exact in any order).
template <int D>
__device__ __forceinline__ void coarse_imma(const DecodeParams& p, const Layout& l, const WarpSmem& sm,
                                            const uint8_t* rec, int g, int nh, size_t row0, int ch,
                                            float (&lbm)[kWarpHeads]) {
  constexpr int S = D / 32;
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  uint32_t bf[S][2];
  load_bfrag<D>(sm, g, bf);
  const bool hv = tig < nh;
  const float bias = sm.bias[tig][g], sw = sm.sw[tig][g];
  const int32_t wsum = hv ? sm.wsum[tig][g] : 0, e2 = hv ? coarse_err2(sm.wabs[tig][g], l.fb) : 0;
  const uint32_t* kc = reinterpret_cast<const uint32_t*>(rec + l.kc);
  float lb = neg_inf();
#pragma unroll 1
  for (int m = 0; m < kBlocksPerGroup; ++m) {
    uint32_t rc[D / 8];  // the coarse fields' registers (the coarse region alone)
    if (l.cb == 3)
      fo_k_block_regs<D, 3>(kc, m, lane, rc);
    else
      fo_k_block_regs<D, 4>(kc, m, lane, rc);
    int32_t c[4] = {0, 0, 0, 0};
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const uint32_t a[4] = {rc[4 * s], rc[4 * s + 1], rc[4 * s + 2], rc[4 * s + 3]};
      mma_s8_16x8x32(a, bf[s], c);
    }
    const int32_t c2a = coarse_dot2(c[0] * 256 + c[1], wsum, l.fb), c2b = coarse_dot2(c[2] * 256 + c[3], wsum, l.fb);
    if (hv) {
      lb = fmax_step(lb, score_half(bias, sw, c2a - e2, p.scale));
      lb = fmax_step(lb, score_half(bias, sw, c2b - e2, p.scale));
    }
    int32_t u2 = c2a > c2b ? c2a : c2b;
#pragma unroll
    for (int off = 4; off <= 16; off <<= 1) {  // the 8 gid lanes of head tig: the block's 16 tokens
      const int32_t o = __shfl_xor_sync(0xffffffffu, u2, off);
      u2 = o > u2 ? o : u2;
    }
    if (gid == 0 && hv)
      p.s.ub[(row0 + tig) * p.s.nblk + (ch * kChunkGroups + g) * kBlocksPerGroup + m] =
          score_half(bias, sw, u2 + e2, p.scale);
  }
#pragma unroll
  for (int off = 4; off <= 16; off <<= 1) lb = fmax_step(lb, __shfl_xor_sync(0xffffffffu, lb, off));
  // lane tig holds head tig's maximum: every lane gets all heads' (the caller's butterfly keeps them)
#pragma unroll
  for (int hi = 0; hi < kWarpHeads; ++hi) lbm[hi] = __shfl_sync(0xffffffffu, lb, hi);
}

// kImma (variant imma+coarse_imma): the integer dots by mma_s8_16x8x32 in imma_scores' layout (an MMA
// row tile = a 16-token block, lane (gid, tig): tokens 16 m + gid, + 8 of head tig), the same c2 / e2
// integers and score_half roundings; block maxima over the 8 gid lanes, lbmax over the warp's tokens.
template <int D, bool kImma = false>
__global__ void __launch_bounds__(kWarpThreads, 8) coarse_warps_kernel(DecodeParams p, int items) {
  __shared__ WarpSmem sm;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x, g = tid / 32, lane = tid & 31;
  if (p.fold && blockIdx.x == 0)  // the folded combine's counters (refine_mma4_kernel<.., true> runs after this grid)
    for (int i = tid; i < c.batch * c.kv_heads; i += kWarpThreads) p.s.cnt[i] = 0;
  if (blockIdx.x == 0 && tid == 0) p.s.work[0] = 0;  // the kEarly refine's item counter (it runs after this grid)
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const Item it = item_of(item, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq), ch = it.slot;
    if (ch >= nch) continue;  // uniform over the CTA
    prefetch_item(p, item + gridDim.x, items, 0);
    const int ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
    const uint8_t* rec = g < ng ? record_of(c, it.b, it.kh, ch * kChunkGroups + g) : nullptr;
    for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
      const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
      const int hq0 = it.kh * p.Gq + h0;
      __syncthreads();  // the previous pass / item is done with sm
      for (int i = tid; i < nh * D; i += kWarpThreads) {
        const int hi = i / D, d = i % D;
        sm.qf[hi][d] = bf16_to_f32(p.q[it.b * p.qbs + static_cast<long long>(hq0 + hi) * p.qhs + d]);
      }
      __syncthreads();
      if (rec)
        for (int hi = 0; hi < nh; ++hi) setup_group_warp<D>(l, sm, rec, hi, g);
      __syncwarp();  // a warp reads only its own group's setup
      float lbm[kWarpHeads];
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) lbm[hi] = neg_inf();
      if constexpr (kImma) {
        if (rec) coarse_imma<D>(p, l, sm, rec, g, nh, static_cast<size_t>(it.b) * p.Hq + hq0, ch, lbm);
      } else if (rec) {
#pragma unroll 1
        for (int r = 0; r < 4; ++r) {
          const int t = 32 * r + lane;
          uint32_t c4[D / 4];
          load_coarse_perm<D>(l, rec, t, c4);
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi) {
            if (hi >= nh) break;
            const int32_t c2 = coarse_dot2(dot_codes<D>(sm.what[hi][g], c4), sm.wsum[hi][g], l.fb);
            const int32_t e2 = coarse_err2(sm.wabs[hi][g], l.fb);
            lbm[hi] = fmax_step(lbm[hi], score_half(sm.bias[hi][g], sm.sw[hi][g], c2 - e2, p.scale));
            int32_t u2 = c2;
#pragma unroll
            for (int off = 8; off >= 1; off >>= 1) {  // the 16 lanes of a block
              const int32_t o = __shfl_xor_sync(0xffffffffu, u2, off);
              u2 = o > u2 ? o : u2;
            }
            if ((lane % kBlock) == 0) {
              const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
              p.s.ub[row * p.s.nblk + (ch * kChunkGroups + g) * kBlocksPerGroup + t / kBlock] =
                  score_half(sm.bias[hi][g], sm.sw[hi][g], u2 + e2, p.scale);
            }
          }
        }
      }
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) {
#pragma unroll
        for (int off = 16; off >= 1; off >>= 1) lbm[hi] = fmax_step(lbm[hi], __shfl_xor_sync(0xffffffffu, lbm[hi], off));
        if (lane == 0) sm.red[g][hi] = lbm[hi];
      }
      __syncthreads();
      if (tid < nh) {
        const float x = fmax_step(sm.red[0][tid], sm.red[1][tid]);
        p.s.lbmax[(static_cast<size_t>(it.b) * p.Hq + hq0 + tid) * p.s.nch + ch] = x;
      }
    }
  }
}

// Combine, a warp a (row, 32 channels): M = max of the partials' m (exact in any order); then tiles of
// 32 slots: lane i computes e of slot i0 + i (exp_att, in parallel) and every lane loads its channel
// of the 32 partials at once, then runs combine_kernel's chains in slot order (same bits).
// kPdl (variant stage+coarse_imma, mma_pv and the planner's mma_pv4r): launched as a programmatic dependent of the
// refine (sm_90), so its CTAs may start before the refine has finished: griddepcontrol.wait holds them until it has,
// memory included. Only the row's length (the decode's input, written before the refine began) is read before it.
// Session 15, a shorter path after the wait (the same operations on the same values in the same order, so the same
// bits): the first two tiles' partials are loaded with the m / l of the held tiles (before M, which they do not need),
// so one memory latency instead of two precedes the chains, and each later tile's two tiles ahead; a whole tile's e / l
// are read from shared memory before its chains (no shared load between two steps of the l chain), and its 32 steps
// have no bounds branch.
template <int D, bool kPdl = false>
__global__ void __launch_bounds__(32) combine_warps_kernel(DecodeParams p) {
  // The m / l of the first kHeld tiles of 32 slots are loaded at once (B1 L16K: 65 slots) and their e computed
  // together, and each tile's partials are loaded while the previous tile's chains run: a few memory latencies
  // a row instead of two a tile (GPU run 48: 9.3 us for B1 L16K's combine at ncu's clocks, 2 % issue).
  constexpr int kHeld = 4;
  __shared__ float se[32 * kHeld], sl[32 * kHeld];
  constexpr int S = D / 32;
  const int row = blockIdx.x / S, lane = threadIdx.x, d = (blockIdx.x % S) * 32 + lane, b = row / p.Hq;
  const int P = 1 + chunks_of(closed_groups(len_of(p, b)));
  const float* pm = p.s.pm + static_cast<size_t>(row) * p.s.P;
  const float* pl = p.s.pl + static_cast<size_t>(row) * p.s.P;
  const float* pacc = p.s.pacc + static_cast<size_t>(row) * p.s.P * D;
  if constexpr (kPdl) pdl_wait();
  float Mx = neg_inf();
  float mh[kHeld], lh[kHeld];
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    const int i = lane + 32 * j;
    mh[j] = i < P ? pm[i] : neg_inf();
    lh[j] = i < P ? pl[i] : 0.0f;
  }
  float a[32], a1[32];  // the first two tiles' partials (read whatever M is; used only when M is finite)
#pragma unroll
  for (int k = 0; k < 32; ++k) a[k] = k < P ? pacc[static_cast<size_t>(k) * D + d] : 0.0f;
#pragma unroll
  for (int k = 0; k < 32; ++k) a1[k] = 32 + k < P ? pacc[static_cast<size_t>(32 + k) * D + d] : 0.0f;
#pragma unroll
  for (int j = 0; j < kHeld; ++j) Mx = fmax_score(Mx, mh[j]);
  for (int i = lane + 32 * kHeld; i < P; i += 32) Mx = fmax_score(Mx, pm[i]);  // slots past the held tiles
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) Mx = fmax_score(Mx, __shfl_xor_sync(0xffffffffu, Mx, off));
  float lt = 0.0f, acc = 0.0f;
  if (Mx != neg_inf()) {  // uniform over the warp
#pragma unroll
    for (int j = 0; j < kHeld; ++j) {
      se[32 * j + lane] = mh[j] == neg_inf() ? -1.0f : exp_att(mh[j] - Mx);  // -1: an empty partial (e in [0, 1])
      sl[32 * j + lane] = lh[j];
    }
    // Past the held tiles, tile t's m / l are loaded during tile t - 1 (session 27: loaded in their own tile, they put
    // a memory latency before each tile's chains; run 136's ncu: 28.5 us for B8 L128K's 67 MB of partials, 513 slots)
    float mc = neg_inf(), lc = 0.0f;
    for (int i0 = 0; i0 < P; i0 += 32) {
      const int n = P - i0 < 32 ? P - i0 : 32, t = i0 / 32, base = 32 * (t % kHeld);
      float an[32];  // tile t + 2's partials, in flight during this tile's and the next one's chains
#pragma unroll
      for (int k = 0; k < 32; ++k) an[k] = i0 + 64 + k < P ? pacc[static_cast<size_t>(i0 + 64 + k) * D + d] : 0.0f;
      const int i1 = i0 + 32 + lane;  // tile t + 1's slot of this lane
      const bool load1 = t + 1 >= kHeld && i1 < P;
      const float mn = load1 ? pm[i1] : neg_inf(), ln = load1 ? pl[i1] : 0.0f;
      __syncthreads();  // se / sl written (the held tiles) or read (the tile kHeld back)
      if (t >= kHeld && lane < n) {  // past the held tiles: this tile's e / l (mc, lc: loaded during the last tile)
        se[base + lane] = mc == neg_inf() ? -1.0f : exp_att(mc - Mx);
        sl[base + lane] = lc;
      }
      mc = mn, lc = ln;
      __syncthreads();
      chain_tile(n, [&](int k, float& e, float& l, float& x) { e = se[base + k], l = sl[base + k], x = a[k]; }, lt, acc);
#pragma unroll
      for (int k = 0; k < 32; ++k) {
        a[k] = a1[k];
        a1[k] = an[k];
      }
    }
  }
  store_combined(p, static_cast<size_t>(row) * D + d, Mx != neg_inf(), acc, lt);
}

}  // namespace mlops::fbla
