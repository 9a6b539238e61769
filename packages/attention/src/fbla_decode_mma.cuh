// The "mma_pv" decode variant (mma_pv+coarse_imma): the refine of the digits P V form (MLOPS_FBLA_PV_DIGITS,
// fbla_math.h / docs/attention.md "Two P V forms"), where both integer products of a closed group run on the
// tensor core: the scores (as imma_scores) and P V, whose weights p * v_scale are two int8 digits a slice.
// Why: the chains form's P V is 64 fp32 FMAs a (token, channel) pair of 4 heads and its code unpacking, issued
// one warp an item; at B8 L128K that refine ran at 24 % of the copy bandwidth, issue- and latency-bound
// (GPU runs 19-22). Here the P V of a 32-token slice is D / 16 mma.m16n8k32 a warp.
// - a CTA of 8 warps an item; warp w <-> slice w: group w / 4 of the chunk, tokens 32 (w % 4) .. + 31;
// - a closed chunk's records from v_min on are staged in shared memory (cp.async.bulk on sm_90, stage_issue);
//   the q digits are set up from k_min / k_scale in global memory meanwhile (warp w: head w % 4, group w / 4);
// - scores: imma_scores_regs over the slice's 2 blocks (lane (gid, tig): tokens 16 m + gid, + 8, head tig);
//   the chunk max over the 8 warps; p; the slice's weights, their max, their digits into shared memory;
// - P V: out[channel][2 head + digit] = sum over the slice's tokens of code[token][channel] * digit[token]:
//   A = the V codes (16 channels x 32 tokens), B = the digits (32 tokens x 8 columns), s32 accumulation. The
//   records hold V fragment-ordered (fbla_math.h, record version 2): k = the slice's token, tile T's rows channels
//   16 T .. 16 T + 15, so a lane's words of the slice are 3 D / 64 lane-contiguous 16-byte loads and a tile's A
//   registers 6 instructions (fo_v_tile). (Until session 20: bit planes, ~45 instructions a tile.)
// - l and the V-min term: each lane sums its 4 tokens of head tig, then a butterfly over the 8 gid lanes;
// - the BF16 item (slot 0) in the same slices: a lane a token for the scores (the K row's fmaf chain in channel
//   order), a lane 4 channels x 4 heads for P V (fmaf chains in token order over the slice);
// - a slice's sums (4 heads x D floats) are written over its group's K fields, dead once every warp has its
//   scores (a pass of more than 4 heads copies the K fields again), so a CTA needs 62 KB at D 128: 3 an SM;
// - the partial: the 8 slices' sums in slice order (fbla_host.cpp decode_host, pv digits).
// Below sm_80 (compute_61 / 70 / 75 PTX) and in the kernel-on-host runner the MMA is mma_s8_16x8x32's
// shuffles + DP4A, below sm_90 the staging plain copies: the same bits everywhere.
#pragma once
#include "fbla_decode_stage.cuh"

namespace mlops::fbla {

constexpr int kMmaWarps = kSlicesPerChunk;  // 8: warp w <-> slice w
constexpr int kMmaThreads = 32 * kMmaWarps;
constexpr int kMmaCtas = 3;  // CTAs an SM asked of ptxas (62 KB of shared memory a CTA at D 128: 3 fit)

struct alignas(16) MmaSmem {
  int8_t what[kWarpHeads][kChunkGroups][2][128];  // q digits in perm_channel order (setup_group_warp)
  float qf[kWarpHeads][128];
  float sw[kWarpHeads][kChunkGroups], bias[kWarpHeads][kChunkGroups];
  int32_t wsum[kWarpHeads][kChunkGroups], wabs[kWarpHeads][kChunkGroups];
  float red[kMmaWarps][kWarpHeads], m[kWarpHeads], thr[kWarpHeads];
  float ls[kMmaWarps][kWarpHeads];                 // a slice's l
  F4 pt[kMmaWarps][kSlice];                        // BF16 slices: p of a token, 4 heads
  int8_t dig[kMmaWarps][2 * kWarpHeads][kSlice];   // P V digits: column 2 head + digit, k position
  RefFlags ref;
};
constexpr int kMmaFront = (static_cast<int>(sizeof(MmaSmem)) + 127) / 128 * 128;

// The front, then the two staged records (a slice's sums over its group's K fields: slice_sums).
MLOPS_HD constexpr int mma_smem_bytes(int D) { return kMmaFront + kChunkGroups * stage_group_bytes(D); }
static_assert(kMmaFront >= 8 * 128, "a staged record pointer (8 D before its copy) stays in the buffer");

// Where slice sl's sums live: 16 D bytes of its group's staged K fields (96 D bytes a group), laid out
// [tile][row half][gid][head] (pv_sum_index) so that a warp's stores of one MMA tile are 32 consecutive floats.
__device__ __forceinline__ float* slice_sums(uint8_t* stage0, long long sbytes, const Layout& l, int sl) {
  return reinterpret_cast<float*>(stage0 + (sl / kSlicesPerGroup) * sbytes + (l.kc - l.vmin) +
                                  (sl % kSlicesPerGroup) * 16LL * l.D);
}

// The channel of P V tile T, row gid + 8 h: the A fragment's row (fragment-ordered V codes, fbla_math.h).
__device__ __forceinline__ int pv_channel(int T, int gid, int h) { return 16 * T + 8 * h + gid; }

// The position of (tile T, row gid + 8 h, head) in a slice's sums: 4 d + head for channel d = pv_channel(T, gid, h),
// so position i holds channel i / 4 (the BF16 slices store a channel's 4 heads as one F4 at 4 d).
__device__ __forceinline__ int pv_sum_index(int T, int h, int gid, int head) { return ((2 * T + h) * 8 + gid) * 4 + head; }

// The integer P V of warp w's closed slice, a tile at a time: out(T, c) gets c of tile T (rows gid, gid + 8;
// head tig's hi / lo digit sums). vp: the group's staged V codes (fragment-ordered, fbla_math.h: a lane's
// 3 D / 16 words of the slice, word 3 T + v of tile T, loaded up front by 3 D / 64 16-byte loads); t0: the slice's
// first token in the group. The MMA's k is the slice's token (dig[column][token]). (Loading a tile's 3 words at its
// MMA instead made ptxas 13.0 spill 32 bytes in the one-round refine_mma4_kernel instance; up front none spill.)
template <int D, class Out>
__device__ __forceinline__ void pv_mma(const uint32_t* vp, int t0, const int8_t (&dig)[2 * kWarpHeads][kSlice],
                                       Out out) {
  const int lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  const uint32_t b[2] = {*reinterpret_cast<const uint32_t*>(&dig[gid][4 * tig]),
                         *reinterpret_cast<const uint32_t*>(&dig[gid][16 + 4 * tig])};
  const U4* vq = reinterpret_cast<const U4*>(vp + (t0 / kSlice) * fo_v_slice_words(D)) + lane;
  uint32_t w[3 * D / 16];
#pragma unroll
  for (int q = 0; q < 3 * D / 64; ++q) {
    const U4 x = vq[32 * q];
    w[4 * q] = x.x, w[4 * q + 1] = x.y, w[4 * q + 2] = x.z, w[4 * q + 3] = x.w;
  }
#pragma unroll
  for (int T = 0; T < D / 16; ++T) {
    uint32_t af[4];
    fo_v_tile(w[3 * T], w[3 * T + 1], w[3 * T + 2], af);
    int32_t c[4] = {0, 0, 0, 0};
    mma_s8_16x8x32(af, b, c);
    out(T, c);
  }
}

// Refine pass, "mma_pv" layout (above), pv digits only. __launch_bounds__(256, 3): 3 CTAs an SM (what the
// shared memory allows at D 128), at most 80 registers.
template <int D>
__global__ void __launch_bounds__(kMmaThreads, kMmaCtas) refine_mma_kernel(DecodeParams p, int items) {
  __shared__ uint64_t bars[1];
  uint8_t* const dyn = dyn_smem();
  MmaSmem& sm = *reinterpret_cast<MmaSmem*>(dyn);
  uint8_t* const stage0 = dyn + kMmaFront;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x, w = tid / 32, lane = tid & 31, gid = lane >> 2, tig = lane & 3;
  const int g = w / kSlicesPerGroup, t0 = kSlice * (w % kSlicesPerGroup);  // the warp's slice
  const long long sbytes = stage_group_bytes(D);
  const size_t tile = static_cast<size_t>(kGroup) * D;
  stage_init(bars, 1);
  pdl_launch_dependents();  // every CTA of this grid is resident: the combine's CTAs may queue behind them
  uint32_t ph = 0u;
  // the items blockIdx.x + k gridDim.x, decoded by item_add (two divisions a CTA, not a few an item)
  const Item step = items > 0 ? item_of(gridDim.x, c.batch, c.kv_heads) : Item{0, 0, 0};
  Item nxt = items > 0 ? item_of(blockIdx.x, c.batch, c.kv_heads) : Item{0, 0, 0};
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const Item it = nxt;
    nxt = item_add(it, step, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq);
    if (it.slot > nch) continue;  // uniform over the CTA
    const bool bf16 = it.slot == 0;
    const int ch = it.slot - 1;
    const int ng = bf16 ? 2 : (nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups);
    const uint8_t* grec0 = bf16 ? nullptr : record_of(c, it.b, it.kh, ch * kChunkGroups);  // contiguous records
    __syncthreads();  // the previous item is done with the shared memory
    if (!bf16)
      stage_issue(&bars[0], stage0, sbytes, grec0 + l.vmin, c.record_bytes, static_cast<int>(l.bytes - l.vmin), ng);
    prefetch_item_at(p, nxt, item + static_cast<int>(gridDim.x) < items, 1);
    const uint8_t* srec = !bf16 && g < ng ? stage0 + g * sbytes - l.vmin : nullptr;  // at the record's offsets
    // BF16 item: the slice's tokens (sink: group 0, filling group: group 1)
    const int cnt = bf16 ? (g == 0 ? sink_tokens(L) : tail_tokens(L)) : 0;
    const int nt = bf16 ? (cnt - t0 < 0 ? 0 : (cnt - t0 > kSlice ? kSlice : cnt - t0)) : 0;
    const size_t kvbase = (static_cast<size_t>(it.b) * c.kv_heads + it.kh) * tile;
    bool waited = bf16;
    for (int h0 = 0; h0 < p.Gq; h0 += kWarpHeads) {
      const int nh = p.Gq - h0 < kWarpHeads ? p.Gq - h0 : kWarpHeads;
      const int hq0 = it.kh * p.Gq + h0;
      if (h0 > 0) {  // the previous pass is done with sm and wrote its sums over the K fields: copy them again
        __syncthreads();
        if (!bf16) {
          stage_issue(&bars[0], stage0 + (l.kc - l.vmin), sbytes, grec0 + l.kc, c.record_bytes,
                      static_cast<int>(l.v - l.kc), ng);
          waited = false;
        }
      }
      pass_q_and_flags<D, kMmaThreads>(p, sm, it, hq0, nh, ng, ch, nch, p.exact || bf16, tid);
      {  // warp w: the q digits of (head w % 4, group w / 4)
        const int hs = w % kWarpHeads, gs = w / kWarpHeads;
        if (!bf16 && hs < nh && gs < ng) setup_group_warp<D, MmaSmem, false>(l, sm, grec0 + gs * c.record_bytes, hs, gs);
      }
      __syncthreads();
      if (!waited) {  // every thread, once a copy
        stage_wait(bars, 0, ph);
        waited = true;
      }
      // ---- scores, the warp's max a head
      float sc[2][2];  // closed: token t0 + 16 m + gid + 8 r, head tig
      float s4[kWarpHeads];  // BF16: token t0 + lane, head hi
      float wm = neg_inf();
      if (bf16) {
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi) s4[hi] = neg_inf();
        if (lane < nt) {
          const uint16_t* kr = (g == 0 ? c.sink_k : c.tail_k) + kvbase + static_cast<size_t>(t0 + lane) * D;
          float dot[kWarpHeads] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 4
          for (int d0 = 0; d0 < D; d0 += 8)
            bf16_dot8(*reinterpret_cast<const U4*>(kr + d0), sm.qf, d0, nh, dot);  // 8 channels, 16 bytes
#pragma unroll
          for (int hi = 0; hi < kWarpHeads; ++hi)
            if (hi < nh) s4[hi] = dot[hi] * p.scale;
        }
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi) {
          float x = s4[hi];
#pragma unroll
          for (int off = 16; off >= 1; off >>= 1) x = fmax_step(x, __shfl_xor_sync(0xffffffffu, x, off));
          if (lane == 0) sm.red[w][hi] = x;
        }
      } else {
#pragma unroll
        for (int m = 0; m < 2; ++m) sc[m][0] = sc[m][1] = neg_inf();
        if (srec) {
          imma_scores_regs<D, MmaSmem, 2>(l, sm, srec, g, nh, p.scale, sc, t0 / kBlock);
          wm = fmax_step(fmax_step(wm, fmax_step(sc[0][0], sc[0][1])), fmax_step(sc[1][0], sc[1][1]));
        }
#pragma unroll
        for (int off = 4; off <= 16; off <<= 1) wm = fmax_step(wm, __shfl_xor_sync(0xffffffffu, wm, off));
        if (gid == 0) sm.red[w][tig] = wm;
      }
      __syncthreads();
      float mh[kWarpHeads];  // the chunk's max a head (maxima: exact in any order)
#pragma unroll
      for (int hi = 0; hi < kWarpHeads; ++hi) {
        float x = neg_inf();
#pragma unroll
        for (int ww = 0; ww < kMmaWarps; ++ww) x = fmax_step(x, sm.red[ww][hi]);
        mh[hi] = x;
      }
      if (tid < kWarpHeads) sm.m[tid] = tid == 0 ? mh[0] : tid == 1 ? mh[1] : tid == 2 ? mh[2] : mh[3];  // no local array
      float* const aw = slice_sums(stage0, sbytes, l, w);  // this slice's P V sums (over dead K fields)
      if (bf16) {
        // ---- p (lane a token), l (lane h: head h, token order), P V (lane 4 channels x 4 heads, token order)
        float pt[kWarpHeads];
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi) pt[hi] = lane < nt && hi < nh ? exp_att(s4[hi] - mh[hi]) : 0.0f;
        sm.pt[w][lane] = F4{pt[0], pt[1], pt[2], pt[3]};
        __syncwarp();
        if (lane < kWarpHeads) {
          float ls = 0.0f;
          for (int u = 0; u < nt; ++u) ls = ls + f4_at(sm.pt[w][u], lane);
          sm.ls[w][lane] = ls;
        }
        float acc[kWarpHeads][4];
#pragma unroll
        for (int hi = 0; hi < kWarpHeads; ++hi)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[hi][i] = 0.0f;
        if (4 * lane < D) {
          const uint16_t* vr = (g == 0 ? c.sink_v : c.tail_v) + kvbase + static_cast<size_t>(t0) * D + 4 * lane;
          bf16_pv_rows<D, 8>(vr, nt, sm.pt[w], kWarpHeads, acc);  // 8 tokens' V rows loaded together
#pragma unroll
          for (int i = 0; i < 4; ++i)  // channel 4 lane + i's 4 heads in one 16-byte store (position 4 d + h;
            // heads past nh store their zeros, which the partial does not read): 4-way bank conflicts, 16-way as 16 floats
            reinterpret_cast<F4*>(aw)[4 * lane + i] = F4{acc[0][i], acc[1][i], acc[2][i], acc[3][i]};
        }
      } else if (srec) {
        // ---- p, the weights p * v_scale and their digits (lane (gid, tig): 4 tokens of head tig)
        const RecVals vsc(srec, l.vscale);
        const RecVals vmn(srec, l.vmin);
        const float mt = tig == 0 ? mh[0] : tig == 1 ? mh[1] : tig == 2 ? mh[2] : mh[3];
        float wt[2][2];
        float wmax = 0.0f, ls = 0.0f, bs = 0.0f;  // l and the V-min term: the lane's 4 tokens, then a butterfly
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const bool valid = tig < nh && sm.ref.on(tig, g * kBlocksPerGroup + t0 / kBlock + m);
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int i = kBlock * m + gid + 8 * r;
            const float pr = valid ? exp_att(sc[m][r] - mt) : 0.0f;
            ls = ls + pr;
            bs = bs + pr * vmn[t0 + i];
            wt[m][r] = pr * vsc[t0 + i];
            wmax = fmax_step(wmax, wt[m][r]);
          }
        }
#pragma unroll
        for (int off = 4; off <= 16; off <<= 1) {  // over the 8 gid lanes of head tig (every lane: the same bits)
          wmax = fmax_step(wmax, __shfl_xor_sync(0xffffffffu, wmax, off));
          ls = ls + __shfl_xor_sync(0xffffffffu, ls, off);
          bs = bs + __shfl_xor_sync(0xffffffffu, bs, off);
        }
        if (gid == 0) sm.ls[w][tig] = ls;
        const DigitScale ds = digit_scale(wmax);
#pragma unroll
        for (int m = 0; m < 2; ++m)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int i = kBlock * m + gid + 8 * r;
            int dh, dl;
            digits_of(wt[m][r], ds.S, dh, dl);
            sm.dig[w][2 * tig][i] = static_cast<int8_t>(dh);
            sm.dig[w][2 * tig + 1][i] = static_cast<int8_t>(dl);
          }
        __syncwarp();
        const float bsh = bs;  // head tig's
        // (the chunk-max barrier above: every warp has its scores, so the K fields under aw are dead)
        pv_mma<D>(reinterpret_cast<const uint32_t*>(srec + l.v), t0, sm.dig[w], [&](int T, const int32_t (&c4)[4]) {
#pragma unroll
          for (int h = 0; h < 2; ++h)
            aw[pv_sum_index(T, h, gid, tig)] = fmaf(ds.step, static_cast<float>(c4[2 * h] * 256 + c4[2 * h + 1]), bsh);
        });
      }
      __syncthreads();
      // ---- the partial: the slices in order (fbla_host.cpp, pv digits); thread i: position i of the sums
      const int nsl = ng * kSlicesPerGroup;
      for (int i = tid; i < kWarpHeads * D; i += kMmaThreads) {
        const int hi = i & 3, gi = (i >> 2) & 7, th = i >> 5;  // pv_sum_index(th >> 1, th & 1, gi, hi)
        if (hi >= nh) continue;
        const int d = pv_channel(th >> 1, gi, th & 1);
        const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
        float a = 0.0f;
        const bool any_tok = sm.m[hi] != neg_inf();
        if (any_tok)
          for (int sl = 0; sl < nsl; ++sl) a = a + slice_sums(stage0, sbytes, l, sl)[i];
        p.s.pacc[(row * p.s.P + it.slot) * D + d] = a;
        if (d == 0) {
          float lt = 0.0f;
          if (any_tok)
            for (int sl = 0; sl < nsl; ++sl) lt = lt + sm.ls[sl][hi];
          p.s.pm[row * p.s.P + it.slot] = sm.m[hi];
          p.s.pl[row * p.s.P + it.slot] = lt;
        }
      }
    }
  }
}

}  // namespace mlops::fbla
