// FBLA kernels: the encoder (close / store / advance) and the decode (coarse / refine / combine).
// Every sum runs in the order fbla_host.cpp runs it (docs/attention.md, "Numerics"), so the GPU
// and the host emulation give the same bits; integer dot products (DP4A, sm_61+) are exact.
// The decode grid does not depend on the context: CTAs loop over work items of a fixed size
// (MLOPS_FBLA_CHUNK_GROUPS closed groups), each item writes its own partial, and a separate
// combine kernel merges the partials in slot order.
#pragma once
#include <cuda_runtime.h>

#include "fbla_internal.h"
#include "mlops/common/fixed_sum.h"

namespace mlops::fbla {

constexpr int kThreads = 256;
constexpr int kCloseThreads = 128;

// ---- shared pieces --------------------------------------------------------------------------
// 1 when any sequence would pass capacity (or a count is out of range): the whole call writes
// nothing. Every thread of the CTA must call it.
__device__ __forceinline__ bool any_full(const mlops_fbla_cache& c, const mlops_fbla_kv& kv) {
  int bad = 0;
  for (int b = threadIdx.x; b < c.batch; b += blockDim.x) {
    const int n = kv.counts ? kv.counts[b] : kv.count;
    if (static_cast<long long>(c.lengths[b]) + n > c.capacity || n < 0 || n > kv.max_count) bad = 1;
  }
  return __syncthreads_or(bad) != 0;
}

__device__ __forceinline__ const uint16_t* in_row(const uint16_t* base, long long bs, long long hs, long long ts, int b,
                                                  int h, long long t) {
  return base + b * bs + h * hs + t * ts;
}

// Byte i of each of 4 words -> word i (a 4 x 4 byte transpose): out[i] byte r = in[r] byte i.
__device__ __forceinline__ void transpose4x4(const uint32_t (&in)[4], uint32_t (&out)[4]) {
  const uint32_t t0 = __byte_perm(in[0], in[1], 0x5140u), t1 = __byte_perm(in[0], in[1], 0x7362u);
  const uint32_t t2 = __byte_perm(in[2], in[3], 0x5140u), t3 = __byte_perm(in[2], in[3], 0x7362u);
  out[0] = __byte_perm(t0, t2, 0x5410u);
  out[1] = __byte_perm(t0, t2, 0x7632u);
  out[2] = __byte_perm(t1, t3, 0x5410u);
  out[3] = __byte_perm(t1, t3, 0x7632u);
}

// ---- reading the fragment-ordered V codes (fbla_math.h) outside the MMA ---------------------
// Four consecutive tokens u0 .. u0 + 3 (u0 % 4 == 0) share their words: byte q of a word is token u0 + q (a
// channel's 4 codes: fo_v_codes_of_channel, fbla_math.h).
// The codes of channels 32 w + 8 i + k (i = 0 .. 3), tokens u0 .. u0 + 3: code[q] byte i = token u0 + q's code of
// channel 32 w + 8 i + k. Those channels are rows k (i even) / k + 8 (i odd) of tiles 2 w, 2 w + 1, all in lane
// 4 k + tig: 6 words, two tiles unpacked, their registers 2 h, 2 h + 1 (h: token bit 4) transposed.
template <int D>
__device__ __forceinline__ void fo_v_codes4(const uint32_t* vp, int u0, int w, int k, uint32_t (&code)[4]) {
  const int sl = u0 >> 5, tt = u0 & 31, L = 4 * k + ((tt & 15) >> 2);
  uint32_t r[4];  // [i]: register 2 h + (i & 1) of tile 2 w + (i >> 1), h = token bit 4 (the same for u0 .. u0 + 3)
  if (tt < 16) {  // registers 0, 1: words 0, 1 alone
#pragma unroll
    for (int th = 0; th < 2; ++th) {
      r[2 * th] = vp[fo_v_word(D, sl, 2 * w + th, 0, L)] & 0x3F3F3F3Fu;
      r[2 * th + 1] = vp[fo_v_word(D, sl, 2 * w + th, 1, L)] & 0x3F3F3F3Fu;
    }
  } else {  // registers 2, 3: word 2, and register 3 from the top bits of all three
#pragma unroll
    for (int th = 0; th < 2; ++th) {
      uint32_t a[4];
      const int T = 2 * w + th;
      fo_v_tile(vp[fo_v_word(D, sl, T, 0, L)], vp[fo_v_word(D, sl, T, 1, L)], vp[fo_v_word(D, sl, T, 2, L)], a);
      r[2 * th] = a[2];
      r[2 * th + 1] = a[3];
    }
  }
  transpose4x4(r, code);
}

// ---- append: close the groups an append fills ------------------------------------------------
// CTA (b, h, k): group g = max(1, L/128) + k of sequence b, head h, when the append fills it.
// K per channel: thread d quantizes its channel; V per token: thread t its token; each into shared memory, then the CTA
// packs the fragment-ordered words (K: coarse and fine fields, fbla_math.h; V: whole codes).
template <int D>
__global__ void __launch_bounds__(kCloseThreads) close_kernel(AppendParams p) {
  const mlops_fbla_cache& c = p.c;
  const mlops_fbla_kv& kv = p.kv;
  if (any_full(c, kv)) return;
  const int k = blockIdx.x % p.closes;
  const int h = (blockIdx.x / p.closes) % c.kv_heads;
  const int b = blockIdx.x / (p.closes * c.kv_heads);
  const int L = c.lengths[b];
  const int n = kv.counts ? kv.counts[b] : kv.count;
  const int g = (L / kGroup > 1 ? L / kGroup : 1) + k;
  if (static_cast<long long>(kGroup) * (g + 1) > static_cast<long long>(L) + n) return;
  const Layout l = layout(D, c.mode);
  uint8_t* rec = c.records + ((static_cast<long long>(b) * c.kv_heads + h) * c.slots + (g - 1)) * c.record_bytes;
  const size_t tile = static_cast<size_t>(kGroup) * D;
  const uint16_t* tk = c.tail_k + (static_cast<size_t>(b) * c.kv_heads + h) * tile;
  const uint16_t* tv = c.tail_v + (static_cast<size_t>(b) * c.kv_heads + h) * tile;
  auto krow = [&](int i) -> const uint16_t* {
    const long long pos = static_cast<long long>(kGroup) * g + i;
    return pos < L ? tk + static_cast<size_t>(i) * D : in_row(kv.k, kv.batch_stride, kv.head_stride, kv.token_stride, b, h, pos - L);
  };
  auto vrow = [&](int i) -> const uint16_t* {
    const long long pos = static_cast<long long>(kGroup) * g + i;
    return pos < L ? tv + static_cast<size_t>(i) * D
                   : in_row(kv.v, kv.v_batch_stride, kv.v_head_stride, kv.v_token_stride, b, h, pos - L);
  };
  const int tid = threadIdx.x;
  // rows of D + 4 bytes: a warp's word stores (one token a thread) fall in distinct banks
  constexpr int kLd = D + 4;
  __shared__ uint32_t code_words[kGroup * kLd / 4];
  uint8_t* const codes = reinterpret_cast<uint8_t*>(code_words);
  // K: thread d quantizes channel d into shared memory (whole warps: D is a multiple of 32); then the coarse and fine
  // fields are packed in fragment order, a thread a word (fo_k_pack_word: consecutive threads, consecutive words)
  if (tid < D) {
    const int d = tid;
    float mn, inv;
    quant_row([&](int t) { return krow(t)[d]; }, kGroup, reinterpret_cast<uint16_t*>(rec + l.kmin)[d],
              reinterpret_cast<uint16_t*>(rec + l.kscale)[d], mn, inv);
    for (int t = 0; t < kGroup; ++t) codes[t * kLd + d] = static_cast<uint8_t>(quant_code(bf16_to_f32(krow(t)[d]), mn, inv));
  }
  __syncthreads();
  uint32_t* kw = reinterpret_cast<uint32_t*>(rec + l.kc);  // the fine region follows the coarse one (layout())
  for (int i = tid; i < fo_k_regions_words(D); i += kCloseThreads)
    kw[i] = fo_k_pack_regions_word(codes, kLd, D, l.cb, i);
  __syncthreads();  // the K codes are read: the buffer takes the V codes
  // V: thread t quantizes token t into shared memory; then the codes are packed in fragment order, a thread a
  // word (fo_v_pack_word: consecutive threads, consecutive words)
  {
    const int t = tid;
    const uint16_t* x = vrow(t);
    float mn, inv;
    quant_row([&](int d) { return x[d]; }, D, reinterpret_cast<uint16_t*>(rec + l.vmin)[t],
              reinterpret_cast<uint16_t*>(rec + l.vscale)[t], mn, inv);
    for (int d = 0; d < D; d += 4) {
      uint32_t w4 = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) w4 |= static_cast<uint32_t>(quant_code(bf16_to_f32(x[d + i]), mn, inv)) << (8 * i);
      *reinterpret_cast<uint32_t*>(&codes[t * kLd + d]) = w4;
    }
  }
  __syncthreads();
  uint32_t* vw = reinterpret_cast<uint32_t*>(rec + l.v);
  for (int i = tid; i < kSlicesPerGroup * fo_v_slice_words(D); i += kCloseThreads) vw[i] = fo_v_pack_word(codes, kLd, D, i);
}

// ---- append: store the tokens that land in the sink or the filling group -------------------
template <int D>
__global__ void __launch_bounds__(kThreads) store_kernel(AppendParams p) {
  const mlops_fbla_cache& c = p.c;
  const mlops_fbla_kv& kv = p.kv;
  if (any_full(c, kv)) return;
  const int h = blockIdx.x % c.kv_heads, b = blockIdx.x / c.kv_heads;
  const long long L = c.lengths[b];
  const long long end = L + (kv.counts ? kv.counts[b] : kv.count), filling = (end / kGroup) * kGroup;
  const size_t tile = static_cast<size_t>(kGroup) * D, base = (static_cast<size_t>(b) * c.kv_heads + h) * tile;
  // sink: [L, min(end, 128)); filling group: [max(L, filling, 128), end)
  const long long s1 = end < kGroup ? end : kGroup;
  long long t0 = L > filling ? L : filling;
  t0 = t0 > kGroup ? t0 : kGroup;
  const long long ns = s1 > L ? s1 - L : 0, nt = end > t0 ? end - t0 : 0;
  for (long long i = threadIdx.x; i < (ns + nt) * D; i += blockDim.x) {
    const long long j = i / D;
    const int d = static_cast<int>(i % D);
    const long long pos = j < ns ? L + j : t0 + (j - ns);
    const uint16_t kx = in_row(kv.k, kv.batch_stride, kv.head_stride, kv.token_stride, b, h, pos - L)[d];
    const uint16_t vx = in_row(kv.v, kv.v_batch_stride, kv.v_head_stride, kv.v_token_stride, b, h, pos - L)[d];
    if (j < ns) {
      c.sink_k[base + pos * D + d] = kx;
      c.sink_v[base + pos * D + d] = vx;
    } else {
      c.tail_k[base + (pos % kGroup) * D + d] = kx;
      c.tail_v[base + (pos % kGroup) * D + d] = vx;
    }
  }
}

// ---- append: advance the lengths (or flag the refused call) ----------------------------------
__global__ void __launch_bounds__(kThreads) advance_kernel(AppendParams p) {
  const mlops_fbla_cache& c = p.c;
  const mlops_fbla_kv& kv = p.kv;
  if (any_full(c, kv)) {
    if (threadIdx.x == 0) atomicOr(c.flags, MLOPS_FBLA_FLAG_FULL);
    return;
  }
  for (int b = threadIdx.x; b < c.batch; b += blockDim.x) c.lengths[b] += kv.counts ? kv.counts[b] : kv.count;
}

// ---- decode ---------------------------------------------------------------------------------
struct alignas(16) DecodeSmem {
  int8_t what[kHeadBatch][kChunkGroups][2][128];  // [..][0]: hi digits, [..][1]: lo digits
  float qf[kHeadBatch][128];
  float sc[kHeadBatch][kChunkTokens];
  float sa[kHeadBatch][kChunkTokens];  // closed chunks: p * V scale a token (the P V weight)
  float gv[kHeadBatch][kChunkGroups][128];
  float sw[kHeadBatch][kChunkGroups], bias[kHeadBatch][kChunkGroups];
  int32_t wsum[kHeadBatch][kChunkGroups], wabs[kHeadBatch][kChunkGroups];
  float lg[kHeadBatch][kChunkGroups], bs[kHeadBatch][kChunkGroups];
  float vmn[kChunkGroups][kGroup], vsc[kChunkGroups][kGroup];  // the chunk's V min / scale a token
  float m[kHeadBatch], thr[kHeadBatch];
  float red[kThreads / 32][kHeadBatch];
  unsigned char ref[kHeadBatch][kChunkGroups * kBlocksPerGroup];
  unsigned char any[kChunkGroups * kBlocksPerGroup];
};

// The length of sequence b, clamped to [0, capacity]: a bad length in device memory never reads
// outside the cache (the host emulation rejects it with a status).
__device__ __forceinline__ int len_of(const DecodeParams& p, int b) {
  const int L = p.lengths[b];
  return L < 0 ? 0 : (L > p.c.capacity ? p.c.capacity : L);
}

struct Item {
  int b, kh, slot;  // slot: 0 = the BF16 tokens, 1 + ch = closed chunk ch (coarse items: ch)
};

__device__ __forceinline__ Item item_of(int item, int B, int Hkv) {
  Item it;
  const int per = B * Hkv;
  it.slot = item / per;
  it.b = (item % per) / Hkv;
  it.kh = item % Hkv;
  return it;
}

// item_of(item + step) from it = item_of(item) and st = item_of(step): a mixed-radix add (kh, then b, then slot),
// no division. The grid-stride item loops of the mma refines walk their items with it (st = item_of(gridDim.x),
// divided once a CTA) instead of dividing every item.
__device__ __forceinline__ Item item_add(Item it, const Item& st, int B, int Hkv) {
  it.kh += st.kh;
  const int ck = it.kh >= Hkv ? 1 : 0;
  it.kh -= ck * Hkv;
  it.b += st.b + ck;
  const int cb = it.b >= B ? 1 : 0;
  it.b -= cb * B;
  it.slot += st.slot + cb;
  return it;
}

// A record's address. Its index ((b Hkv + h) slots + slot) is an int: 2^31 records would take more than 25 TB (a record
// is >= 12.8 KB at D 64), and record_bytes < 2^32, so one 32 x 32 -> 64-bit product (session 31: the 64-bit chain
// was ~25 uniform instructions a warp an item at the kEarly refine's top, GPU run 162's ncu).
__device__ __forceinline__ const uint8_t* record_of(const mlops_fbla_cache& c, int b, int h, int slot) {
  const unsigned idx = static_cast<unsigned>((b * c.kv_heads + h) * c.slots + slot);
  return c.records + static_cast<size_t>(idx) * static_cast<unsigned>(c.record_bytes);
}

// Prefetch hints: no effect on any value (no-ops where the kernels are compiled as host C++).
__device__ __forceinline__ void prefetch_l2(const void* ptr) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(ptr));
#endif
  (void)ptr;
}

__device__ __forceinline__ void prefetch_l1(const void* ptr) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L1 [%0];" ::"l"(ptr));
#endif
  (void)ptr;
}

// Every 128-byte line of [base, base + bytes), spread over the CTA.
__device__ __forceinline__ void prefetch_range(const uint8_t* base, long long bytes, bool l1) {
  for (long long off = static_cast<long long>(threadIdx.x) * 128; off < bytes; off += 128LL * blockDim.x)
    l1 ? prefetch_l1(base + off) : prefetch_l2(base + off);
}

// sm_90 (nvcc 12+, as the staged copies' MLOPS_FBLA_STAGE_TMA): an L2 prefetch of a contiguous range as one bulk
// request to the TMA engine (cp.async.bulk.prefetch.L2) by one thread, instead of one prefetch.global.L2 a 128-byte
// line spread over the CTA (a D 128 chunk: 400 lines, ~2 prefetches and their loop a thread of 256, and every thread's
// item arithmetic before them). Needs a 16-byte aligned base and a multiple of 16 bytes: records are both (the API
// checks the base; layout() makes a record 196 D + 512 bytes).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && __CUDACC_VER_MAJOR__ >= 12
#define MLOPS_FBLA_BULK_PREFETCH 1
#else
#define MLOPS_FBLA_BULK_PREFETCH 0
#endif

// [base, base + bytes) into L2: with the bulk prefetch one request by the calling thread (the callers let only thread 0
// through), else prefetch_range's line a thread over the CTA.
__device__ __forceinline__ void prefetch_l2_bytes(const void* base, long long bytes) {
#if MLOPS_FBLA_BULK_PREFETCH
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(base), "r"(static_cast<unsigned>(bytes)) : "memory");
#else
  prefetch_range(static_cast<const uint8_t*>(base), bytes, false);
#endif
}

// The records of a work item already decoded (it = item_of(item), `valid`: item < items; chunk it.slot - first, its
// closed groups are contiguous) into L2: a CTA asks for its next item's records while it works on the current one.
// Every thread of the CTA calls it (with the bulk prefetch only thread 0 goes on).
__device__ __forceinline__ void prefetch_item_at(const DecodeParams& p, const Item& it, bool valid, int first) {
  if (!valid || (MLOPS_FBLA_BULK_PREFETCH && threadIdx.x != 0)) return;
  const int nq = closed_groups(len_of(p, it.b)), ch = it.slot - first;
  if (ch < 0 || ch >= chunks_of(nq)) return;
  const int ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
  prefetch_l2_bytes(record_of(p.c, it.b, it.kh, ch * kChunkGroups), static_cast<long long>(ng) * p.c.record_bytes);
}

// A BF16 item's rows into L2 (sink K / V, the filling group's K / V: 4 contiguous ranges of up to 128 D bf16 values),
// asked for at the item's top: its scores and P V read them straight from global memory in ~8 dependent rounds of
// loads, which in one round of items queued behind every CTA's record copy (GPU run 115's timeline: B1 L16K's 8 BF16
// items ended at 16.4 - 17.1 us, the closed items by 13.6; B1 L4K 11.6 - 12.3 against 5.8). The bulk form needs
// 16-byte aligned rows: the digits decode's API checks them (rows_aligned16). kvbase: (b, kv head)'s first value.
// k_too false: the caller stages the K rows (a bulk copy a row on the TMA engine, mma_pv4's BF16 item, session 23); the V
// rows then go as prefetch.global.L2 lines spread over the CTA instead (GPU run 120's timeline: with the bulk prefetch
// queued among the item's 128 row copies its P V took 5.2 - 5.5 us at B1 L4K, against 3.5 - 4.1 before the staging).
__device__ __forceinline__ void prefetch_bf16_rows(const DecodeParams& p, size_t kvbase, int L, bool k_too = true) {
  const long long rb = 2LL * p.c.head_dim;  // bytes a row
  if (!k_too) {
    prefetch_range(reinterpret_cast<const uint8_t*>(p.c.sink_v + kvbase), sink_tokens(L) * rb, false);
    prefetch_range(reinterpret_cast<const uint8_t*>(p.c.tail_v + kvbase), tail_tokens(L) * rb, false);
    return;
  }
  if (MLOPS_FBLA_BULK_PREFETCH && threadIdx.x != 0) return;
  const void* const base[4] = {p.c.sink_v + kvbase, p.c.tail_v + kvbase, p.c.sink_k + kvbase, p.c.tail_k + kvbase};
  const long long bytes[4] = {sink_tokens(L) * rb, tail_tokens(L) * rb, sink_tokens(L) * rb, tail_tokens(L) * rb};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (bytes[i] > 0 && (i < 2 || k_too)) prefetch_l2_bytes(base[i], bytes[i]);
}

// prefetch_item_at for work item `item` (nothing where item >= items).
__device__ __forceinline__ void prefetch_item(const DecodeParams& p, int item, int items, int first) {
  if (item >= items) return;
  prefetch_item_at(p, item_of(item, p.c.batch, p.c.kv_heads), true, first);
}

// q of the heads of a batch -> smem floats (every thread of the CTA calls it).
template <int D>
__device__ void load_q(const DecodeParams& p, DecodeSmem& sm, int b, int h0, int nh) {
  for (int i = threadIdx.x; i < nh * D; i += blockDim.x) {
    const int hi = i / D, d = i % D;
    sm.qf[hi][d] = bf16_to_f32(p.q[b * p.qbs + static_cast<long long>(h0 + hi) * p.qhs + d]);
  }
}

// The q digits of one (head, group), by a warp, a lane's `per` channels i (fbla_host.cpp qgroup()): w = qhat_w(q(i),
// ks(i)) a channel, the warp's max |w| (a butterfly), then each channel's two digits, handed to out(i, dh, dl) as they
// are made. Returns s_w (digit_scale(amax).step). One form for setup_groups, setup_group_warp and the mma_pv4
// front's setup_group_warp_g; q / ks / out are the callers' reads and stores (inlined: the SASS of before, session 24).
template <int per, class Q, class Ks, class Out>
__device__ __forceinline__ float qhat_warp_digits(Q q, Ks ks, Out out) {
  float w[per];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < per; ++i) {
    w[i] = qhat_w(q(i), ks(i));
    amax = fmax_nonneg(amax, fabsf(w[i]));  // from +0, |w| >= +0 or NaN: fmax_step's value (session 28)
  }
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) amax = fmax_nonneg(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const DigitScale ds = digit_scale(amax);
#pragma unroll
  for (int i = 0; i < per; ++i) {
    int dh, dl;
    digits_of(w[i], ds.S, dh, dl);
    out(i, dh, dl);
  }
  return ds.step;
}

// The (head, group) query setup of fbla_host.cpp qgroup(): one warp a pair.
template <int D>
__device__ void setup_groups(const Layout& l, DecodeSmem& sm, const mlops_fbla_cache& c, int b, int kh, int slot0, int ng,
                             int nh) {
  constexpr int per = D / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  for (int pr = warp; pr < nh * ng; pr += kThreads / 32) {
    const int hi = pr / ng, gi = pr % ng;
    const uint8_t* rec = record_of(c, b, kh, slot0 + gi);
    const RecVals kmin(rec, l.kmin);
    const RecVals kscale(rec, l.kscale);
    int ws = 0, wa = 0;
    const float s_w = qhat_warp_digits<per>(
        [&](int i) { return sm.qf[hi][lane * per + i]; }, [&](int i) { return kscale[lane * per + i]; },
        [&](int i, int dh, int dl) {
          sm.what[hi][gi][0][lane * per + i] = static_cast<int8_t>(dh);
          sm.what[hi][gi][1][lane * per + i] = static_cast<int8_t>(dl);
          const int q = dh * 256 + dl;
          ws += q;
          wa += q < 0 ? -q : q;
        });
    float bsum = 0.0f;
#pragma unroll
    for (int i = 0; i < per; ++i) bsum = fmaf(sm.qf[hi][lane * per + i], kmin[lane * per + i], bsum);
    bsum = warp_butterfly32(bsum);
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
      ws += __shfl_xor_sync(0xffffffffu, ws, off);
      wa += __shfl_xor_sync(0xffffffffu, wa, off);
    }
    if (lane == 0) {
      sm.sw[hi][gi] = s_w;
      sm.bias[hi][gi] = bsum;
      sm.wsum[hi][gi] = ws;
      sm.wabs[hi][gi] = wa;
    }
  }
}

// The codes of one token row, 4 channels a word (byte i = the code of channel 4q + i).
// coarse_only: the coarse value (code >> fb), else the full 6-bit code. From the fragment-ordered K regions in
// perm_channel order (fo_k_token_words), then each 32 channels' 8 words 4 x 4 byte-transposed into channel order:
// natural word 8 w + 2 i + h, byte r = perm word 8 w + 4 h + r, byte i.
template <int D>
__device__ __forceinline__ void load_codes(const Layout& l, const uint8_t* rec, int t, bool coarse_only,
                                           uint32_t (&c4)[D / 4]) {
  uint32_t pw[D / 4];
  fo_k_token_words<D>(reinterpret_cast<const uint32_t*>(rec + l.kc), reinterpret_cast<const uint32_t*>(rec + l.kf),
                      l.cb, t, coarse_only, pw);
#pragma unroll
  for (int w = 0; w < D / 32; ++w)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t in[4] = {pw[8 * w + 4 * h], pw[8 * w + 4 * h + 1], pw[8 * w + 4 * h + 2], pw[8 * w + 4 * h + 3]};
      uint32_t out[4];
      transpose4x4(in, out);
#pragma unroll
      for (int i = 0; i < 4; ++i) c4[8 * w + 2 * i + h] = out[i];
    }
}

// 16-byte shared-memory vectors (one ld.shared.v4 instead of four loads).
struct alignas(16) I4 {
  int x, y, z, w;
};
struct alignas(16) F4 {
  float x, y, z, w;
};

// 256 (hi . code) + lo . code: two DP4A chains, exact.
template <int D>
__device__ __forceinline__ int32_t dot_codes(const int8_t (&what)[2][128], const uint32_t (&c4)[D / 4]) {
  const I4* h4 = reinterpret_cast<const I4*>(what[0]);
  const I4* l4 = reinterpret_cast<const I4*>(what[1]);
  int ah = 0, al = 0;
#pragma unroll
  for (int q = 0; q < D / 16; ++q) {
    const I4 h = h4[q], lo = l4[q];
    ah = __dp4a(h.x, static_cast<int>(c4[4 * q + 0]), ah);
    al = __dp4a(lo.x, static_cast<int>(c4[4 * q + 0]), al);
    ah = __dp4a(h.y, static_cast<int>(c4[4 * q + 1]), ah);
    al = __dp4a(lo.y, static_cast<int>(c4[4 * q + 1]), al);
    ah = __dp4a(h.z, static_cast<int>(c4[4 * q + 2]), ah);
    al = __dp4a(lo.z, static_cast<int>(c4[4 * q + 2]), al);
    ah = __dp4a(h.w, static_cast<int>(c4[4 * q + 3]), ah);
    al = __dp4a(lo.w, static_cast<int>(c4[4 * q + 3]), al);
  }
  return ah * 256 + al;
}

// Max over the CTA of one value a head (every thread calls it; result in sm.m).
__device__ __forceinline__ void cta_max(DecodeSmem& sm, float (&v)[kHeadBatch], int nh) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
#pragma unroll
  for (int hi = 0; hi < kHeadBatch; ++hi) {
    if (hi >= nh) break;
    float x = v[hi];
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) x = fmax_step(x, __shfl_xor_sync(0xffffffffu, x, off));
    if (lane == 0) sm.red[warp][hi] = x;
  }
  __syncthreads();
  if (threadIdx.x < nh) {
    float x = neg_inf();
    for (int w = 0; w < kThreads / 32; ++w) x = fmax_step(x, sm.red[w][threadIdx.x]);
    sm.m[threadIdx.x] = x;
  }
  __syncthreads();
}

// The max over the row's nch chunks of lbmax for head hq0 + hi of batch row b, by one warp (every lane gets
// it; maxima: exact in any order): the refine passes' skip threshold is it - gap.
__device__ __forceinline__ float row_lbmax(const DecodeParams& p, int b, int hq0, int hi, int nch, int lane) {
  const float* lbm = p.s.lbmax + (static_cast<size_t>(b) * p.Hq + hq0 + hi) * p.s.nch;
  float M = neg_inf();
  for (int i = lane; i < nch; i += 32) M = fmax_step(M, lbm[i]);
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) M = fmax_step(M, __shfl_xor_sync(0xffffffffu, M, off));
  return M;
}

// The partial of a refine pass's heads hq0 .. hq0 + nh - 1 (kN threads): per channel the ng groups' P V in
// group order (group_pv(gg, hi, d)), per head m and the groups' l (group_l(gg, hi)); acc and l are 0 where no
// token of the row was scored (m = -inf).
template <int D, int kN, class GroupPv, class GroupL>
__device__ __forceinline__ void write_partial(const DecodeParams& p, const Item& it, const float* m, int hq0, int nh,
                                              int ng, int tid, GroupPv group_pv, GroupL group_l) {
  for (int i = tid; i < nh * D; i += kN) {
    const int hi = i / D, d = i % D;
    const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
    float acc = 0.0f;
    const bool any_tok = m[hi] != neg_inf();
    if (any_tok)
      for (int gg = 0; gg < ng; ++gg) acc = acc + group_pv(gg, hi, d);
    p.s.pacc[(row * p.s.P + it.slot) * D + d] = acc;
    if (d == 0) {
      float lt = 0.0f;
      if (any_tok)
        for (int gg = 0; gg < ng; ++gg) lt = lt + group_l(gg, hi);
      p.s.pm[row * p.s.P + it.slot] = m[hi];
      p.s.pl[row * p.s.P + it.slot] = lt;
    }
  }
}

// Coarse pass: item (ch, b, kh): a bound a 16-token block (ub) and the chunk's largest lower bound.
template <int D>
__global__ void __launch_bounds__(kThreads) coarse_kernel(DecodeParams p, int items) {
  __shared__ DecodeSmem sm;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x;
  if (blockIdx.x == 0 && tid == 0) p.s.work[0] = 0;  // the kEarly refine's item counter (it runs after this grid)
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const Item it = item_of(item, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq), ch = it.slot;
    if (ch >= nch) continue;  // uniform over the CTA
    prefetch_item(p, item + gridDim.x, items, 0);
    const int ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
    const int gi = tid / kGroup, t = tid % kGroup;
    const bool active = gi < ng;
    uint32_t c4[D / 4];
    if (active) load_codes<D>(l, record_of(c, it.b, it.kh, ch * kChunkGroups + gi), t, true, c4);
    for (int h0 = 0; h0 < p.Gq; h0 += kHeadBatch) {
      const int nh = p.Gq - h0 < kHeadBatch ? p.Gq - h0 : kHeadBatch;
      const int hq0 = it.kh * p.Gq + h0;
      __syncthreads();  // the previous batch / item is done with sm
      load_q<D>(p, sm, it.b, hq0, nh);
      __syncthreads();
      setup_groups<D>(l, sm, c, it.b, it.kh, ch * kChunkGroups, ng, nh);
      __syncthreads();
      float lb[kHeadBatch];
      for (int hi = 0; hi < kHeadBatch; ++hi) lb[hi] = neg_inf();
#pragma unroll
      for (int hi = 0; hi < kHeadBatch; ++hi) {
        if (hi >= nh) break;
        int32_t u2 = INT_MIN;
        if (active) {
          const int32_t c2 = coarse_dot2(dot_codes<D>(sm.what[hi][gi], c4), sm.wsum[hi][gi], l.fb);
          const int32_t e2 = coarse_err2(sm.wabs[hi][gi], l.fb);
          lb[hi] = score_half(sm.bias[hi][gi], sm.sw[hi][gi], c2 - e2, p.scale);
          u2 = c2;
        }
#pragma unroll
        for (int off = 8; off >= 1; off >>= 1) {
          const int32_t o = __shfl_xor_sync(0xffffffffu, u2, off);
          u2 = o > u2 ? o : u2;
        }
        if (active && (t % kBlock) == 0) {
          const int32_t e2 = coarse_err2(sm.wabs[hi][gi], l.fb);
          const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
          p.s.ub[row * p.s.nblk + (ch * kChunkGroups + gi) * kBlocksPerGroup + t / kBlock] =
              score_half(sm.bias[hi][gi], sm.sw[hi][gi], u2 + e2, p.scale);
        }
      }
      cta_max(sm, lb, nh);
      if (tid < nh) p.s.lbmax[(static_cast<size_t>(it.b) * p.Hq + hq0 + tid) * p.s.nch + ch] = sm.m[tid];
    }
  }
}

// Refine pass: item (slot, b, kh). Slot 0: the BF16 tokens (sink + filling group); slot 1 + ch:
// closed chunk ch, every block refined (exact) or those whose bound reaches max(lb) - gap.
// __launch_bounds__(256, 3): at most 80 registers, three CTAs an SM (24 warps to hide the barriers
// and load latencies of an item; at 128 registers it was two).
template <int D>
__global__ void __launch_bounds__(kThreads, 3) refine_kernel(DecodeParams p, int items) {
  __shared__ DecodeSmem sm;
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(D, c.mode);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  const size_t tile = static_cast<size_t>(kGroup) * D;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const Item it = item_of(item, c.batch, c.kv_heads);
    const int L = len_of(p, it.b);
    const int nq = closed_groups(L), nch = chunks_of(nq);
    if (it.slot > nch) continue;  // uniform over the CTA
    if (item == static_cast<int>(blockIdx.x)) prefetch_item(p, item, items, 1);  // the first item (later ones: below)
    prefetch_item(p, item + gridDim.x, items, 1);
    if (it.slot > 0) {  // this chunk's K fields (the scores) into L1; its V codes follow once the codes are in
      const int ch = it.slot - 1;
      const int ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
      for (int g = 0; g < ng; ++g)
        prefetch_range(record_of(c, it.b, it.kh, ch * kChunkGroups + g) + l.kc, static_cast<long long>(kGroup) * 6 * l.row, true);
    }
    const int gi = tid / kGroup, t = tid % kGroup;
    const size_t kvbase = (static_cast<size_t>(it.b) * c.kv_heads + it.kh) * tile;
    for (int h0 = 0; h0 < p.Gq; h0 += kHeadBatch) {
      const int nh = p.Gq - h0 < kHeadBatch ? p.Gq - h0 : kHeadBatch;
      const int hq0 = it.kh * p.Gq + h0;
      __syncthreads();
      load_q<D>(p, sm, it.b, hq0, nh);
      __syncthreads();
      float s[kHeadBatch];
      for (int hi = 0; hi < kHeadBatch; ++hi) s[hi] = neg_inf();
      int ng;
      bool active;
      if (it.slot == 0) {
        // ---- BF16 tokens: thread t of group gi (0: sink, 1: filling group)
        ng = 2;
        const int cnt = gi == 0 ? sink_tokens(L) : tail_tokens(L);
        active = t < cnt;
        if (active) {
          const uint16_t* kr = (gi == 0 ? c.sink_k : c.tail_k) + kvbase + static_cast<size_t>(t) * D;
          float dot[kHeadBatch];
          for (int hi = 0; hi < kHeadBatch; ++hi) dot[hi] = 0.0f;
          for (int d0 = 0; d0 < D; d0 += 32) {
            uint16_t kx[32];  // 32 independent loads, then the chains in channel order
#pragma unroll
            for (int i = 0; i < 32; ++i) kx[i] = kr[d0 + i];
#pragma unroll
            for (int i = 0; i < 32; ++i) {
              const float kf = bf16_to_f32(kx[i]);
#pragma unroll
              for (int hi = 0; hi < kHeadBatch; ++hi)
                if (hi < nh) dot[hi] = fmaf(sm.qf[hi][d0 + i], kf, dot[hi]);
            }
          }
#pragma unroll
          for (int hi = 0; hi < kHeadBatch; ++hi) if (hi < nh) s[hi] = dot[hi] * p.scale;
        }
        if (tid < kChunkGroups * kBlocksPerGroup) sm.any[tid] = 1;
        for (int i = tid; i < kHeadBatch * kChunkGroups * kBlocksPerGroup; i += kThreads)
          sm.ref[i / (kChunkGroups * kBlocksPerGroup)][i % (kChunkGroups * kBlocksPerGroup)] = 1;
      } else {
        // ---- closed chunk
        const int ch = it.slot - 1;
        ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
        active = gi < ng;
        setup_groups<D>(l, sm, c, it.b, it.kh, ch * kChunkGroups, ng, nh);
        // the skip threshold of each head: max over the row's chunks of the lower bounds, - gap
        if (!p.exact) {
          for (int hi = warp; hi < nh; hi += kThreads / 32) {
            const float M = row_lbmax(p, it.b, hq0, hi, nch, lane);
            if (lane == 0) sm.thr[hi] = M - p.gap;
          }
        }
        // the chunk's V min / scale into smem (one coalesced load a thread; read by the l / b and P V loops)
        for (int i = tid; i < ng * kGroup; i += kThreads) {
          const uint8_t* r = record_of(c, it.b, it.kh, ch * kChunkGroups + i / kGroup);
          sm.vmn[i / kGroup][i % kGroup] = RecVals(r, l.vmin)[i % kGroup];
          sm.vsc[i / kGroup][i % kGroup] = RecVals(r, l.vscale)[i % kGroup];
        }
        if (p.exact) {  // uniform: every block of the chunk's groups refined, no bounds to read (two barriers fewer)
          for (int i = tid; i < nh * kChunkGroups * kBlocksPerGroup; i += kThreads)
            sm.ref[i / (kChunkGroups * kBlocksPerGroup)][i % (kChunkGroups * kBlocksPerGroup)] =
                (i % (kChunkGroups * kBlocksPerGroup)) / kBlocksPerGroup < ng;
          if (tid < kChunkGroups * kBlocksPerGroup) sm.any[tid] = tid / kBlocksPerGroup < ng;  // nh >= 1
        }
        __syncthreads();
        if (!p.exact) {
          for (int i = tid; i < nh * kChunkGroups * kBlocksPerGroup; i += kThreads) {
            const int hi = i / (kChunkGroups * kBlocksPerGroup), rb = i % (kChunkGroups * kBlocksPerGroup);
            const int g = rb / kBlocksPerGroup;
            bool r = false;
            if (g < ng) {
              const size_t row = static_cast<size_t>(it.b) * p.Hq + hq0 + hi;
              r = p.s.ub[row * p.s.nblk + (ch * kChunkGroups) * kBlocksPerGroup + rb] >= sm.thr[hi];
            }
            sm.ref[hi][rb] = r;
          }
          __syncthreads();
          if (tid < kChunkGroups * kBlocksPerGroup) {
            unsigned char a = 0;
            for (int hi = 0; hi < nh; ++hi) a |= sm.ref[hi][tid];
            sm.any[tid] = a;
          }
          __syncthreads();
        }
        const int blk = gi * kBlocksPerGroup + t / kBlock;
        if (active && sm.any[blk]) {
          const uint8_t* rec = record_of(c, it.b, it.kh, ch * kChunkGroups + gi);
          uint32_t c4[D / 4];
          load_codes<D>(l, rec, t, false, c4);
#pragma unroll
          for (int hi = 0; hi < kHeadBatch; ++hi) if (hi < nh)
            if (sm.ref[hi][blk]) s[hi] = score_of(sm.bias[hi][gi], sm.sw[hi][gi], dot_codes<D>(sm.what[hi][gi], c4), p.scale);
        }
        for (int g = 0; g < ng; ++g)  // the V codes (read last, by the P V loop) into L1
          prefetch_range(record_of(c, it.b, it.kh, ch * kChunkGroups + g) + l.v, static_cast<long long>(kGroup) * 6 * l.row, true);
        active = active && sm.any[blk];
      }
      // ---- chunk max, probabilities
      cta_max(sm, s, nh);
#pragma unroll
      for (int hi = 0; hi < kHeadBatch; ++hi) {
        if (hi >= nh) break;
        const int blk = gi * kBlocksPerGroup + t / kBlock;
        const float pt = (active && sm.ref[hi][blk] && gi < ng) ? exp_att(s[hi] - sm.m[hi]) : 0.0f;
        sm.sc[hi][tid] = pt;
        if (it.slot != 0 && gi < ng) sm.sa[hi][tid] = pt * sm.vsc[gi][t];
      }
      __syncthreads();
      // ---- l and the V-min term a (head, group), sequential in token order
      // (lane 0 of warp w, w + 8, ...: one (head, group) a warp, so no warp carries two serial loops)
      for (int pr = warp; pr < nh * kChunkGroups; pr += kThreads / 32) {
        if (lane != 0) break;
        const int hi = pr / kChunkGroups, g = pr % kChunkGroups;
        float lg = 0.0f, bs = 0.0f;
        if (g < ng) {
          if (it.slot == 0) {
            const int cnt = g == 0 ? sink_tokens(L) : tail_tokens(L);
            for (int u = 0; u < cnt; ++u) lg = lg + sm.sc[hi][g * kGroup + u];
          } else {
            // a refined block's p and v_min by 16-byte loads (8 tokens a step), then the two chains in token order
#pragma unroll 1
            for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
              if (!sm.ref[hi][g * kBlocksPerGroup + blk]) continue;
              const F4* p4 = reinterpret_cast<const F4*>(&sm.sc[hi][g * kGroup + blk * kBlock]);
              const F4* v4 = reinterpret_cast<const F4*>(&sm.vmn[g][blk * kBlock]);
              for (int k0 = 0; k0 < kBlock / 4; k0 += 2) {  // 8 tokens a step
              F4 pp[2], vv[2];
#pragma unroll
              for (int k = 0; k < 2; ++k) {
                pp[k] = p4[k0 + k];
                vv[k] = v4[k0 + k];
              }
#pragma unroll
              for (int k = 0; k < 2; ++k) {
                lg = lg + pp[k].x;
                bs = bs + pp[k].x * vv[k].x;
                lg = lg + pp[k].y;
                bs = bs + pp[k].y * vv[k].y;
                lg = lg + pp[k].z;
                bs = bs + pp[k].z * vv[k].z;
                lg = lg + pp[k].w;
                bs = bs + pp[k].w * vv[k].w;
              }
              }
            }
          }
        }
        sm.lg[hi][g] = lg;
        sm.bs[hi][g] = bs;
      }
      // ---- P V: thread (group, channel), sequential in token order
      if (tid < kChunkGroups * D) {
        const int g = tid / D, d = tid % D;
        float val[kHeadBatch];
        for (int hi = 0; hi < kHeadBatch; ++hi) val[hi] = 0.0f;
        if (g < ng) {
          if (it.slot == 0) {
            const int cnt = g == 0 ? sink_tokens(L) : tail_tokens(L);
            const uint16_t* vr = (g == 0 ? c.sink_v : c.tail_v) + kvbase + d;
            for (int u0 = 0; u0 < cnt; u0 += 16) {
              uint16_t vx[16];  // 16 independent loads, then the chains in token order
#pragma unroll
              for (int i = 0; i < 16; ++i) vx[i] = u0 + i < cnt ? vr[static_cast<size_t>(u0 + i) * D] : uint16_t(0);
#pragma unroll
              for (int i = 0; i < 16; ++i) {
                if (u0 + i >= cnt) break;
                const float vf = bf16_to_f32(vx[i]);
#pragma unroll
                for (int hi = 0; hi < kHeadBatch; ++hi)
                  if (hi < nh) val[hi] = fmaf(sm.sc[hi][g * kGroup + u0 + i], vf, val[hi]);
              }
            }
          } else {
            const uint8_t* r = record_of(c, it.b, it.kh, (it.slot - 1) * kChunkGroups + g);
            const uint32_t* vp = reinterpret_cast<const uint32_t*>(r + l.v);
            for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
              const int rb = g * kBlocksPerGroup + blk;
              if (!sm.any[rb]) continue;
              bool rf[kHeadBatch];
#pragma unroll
              for (int hi = 0; hi < kHeadBatch; ++hi) rf[hi] = hi < nh && sm.ref[hi][rb];
              for (int u0 = blk * kBlock; u0 < (blk + 1) * kBlock; u0 += 4) {
                const uint32_t codes = fo_v_codes_of_channel(vp, D, u0, d);  // byte k: token u0 + k
                float cf[4];
#pragma unroll
                for (int k = 0; k < 4; ++k)  // the code in the mantissa of 2^23: float(code) exactly, by an add
                  cf[k] = bits_f32(0x4B000000u | ((codes >> (8 * k)) & 0xffu)) - 8388608.0f;
#pragma unroll
                for (int hi = 0; hi < kHeadBatch; ++hi)
                  if (rf[hi]) {  // the weights of 4 tokens in one load; the chain in token order
                    const F4 a = *reinterpret_cast<const F4*>(&sm.sa[hi][g * kGroup + u0]);
                    val[hi] = fmaf(a.x, cf[0], val[hi]);
                    val[hi] = fmaf(a.y, cf[1], val[hi]);
                    val[hi] = fmaf(a.z, cf[2], val[hi]);
                    val[hi] = fmaf(a.w, cf[3], val[hi]);
                  }
              }
            }
          }
        }
#pragma unroll
        for (int hi = 0; hi < kHeadBatch; ++hi) if (hi < nh) sm.gv[hi][g][d] = val[hi];
      }
      __syncthreads();
      // ---- the partial: groups in order
      write_partial<D, kThreads>(
          p, it, sm.m, hq0, nh, ng, tid,
          [&](int gg, int hi, int d) { return it.slot == 0 ? sm.gv[hi][gg][d] : sm.gv[hi][gg][d] + sm.bs[hi][gg]; },
          [&](int gg, int hi) { return sm.lg[hi][gg]; });
    }
  }
}

// ---- the combines' shared steps (combine_kernel, combine_warps_kernel, combine_staged_kernel, fold_combine) ----

// A row's output value at flat index `at` (row * D + d): o = acc / lt, or 0 where the row has no token (M = -inf); fp32
// or bf16 by p.out_fp32.
__device__ __forceinline__ void store_combined(const DecodeParams& p, size_t at, bool any, float acc, float lt) {
  const float o = any ? acc / lt : 0.0f;
  if (p.out_fp32)
    static_cast<float*>(p.out)[at] = o;
  else
    static_cast<uint16_t*>(p.out)[at] = f32_to_bf16(o);
}

// The slot-order chains over a tile of n <= 32 slots (docs/attention.md "Fixed order"): for each slot k with e_k >= 0
// (-1 marks an empty partial) lt = fmaf(l_k, e_k, lt), acc = fmaf(a_k, e_k, acc). slot(k, e, l, a): slot k's three
// values. A whole tile loads all 32 first and then runs the 32 steps without a bounds test (no load between two steps of
// the l chain); a part tile the same steps under k < n. combine_warps_kernel (a[] in registers) and
// combine_staged_kernel (the staged tile): the same operations, hence the same bits, in both.
template <class Slot>
__device__ __forceinline__ void chain_tile(int n, Slot slot, float& lt, float& acc) {
  if (n == 32) {
    float ev[32], lv[32], av[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) slot(k, ev[k], lv[k], av[k]);
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      if (ev[k] < 0.0f) continue;
      lt = fmaf(lv[k], ev[k], lt);
      acc = fmaf(av[k], ev[k], acc);
    }
  } else {
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      if (k >= n) break;
      float e, l, a;
      slot(k, e, l, a);
      if (e < 0.0f) continue;
      lt = fmaf(l, e, lt);
      acc = fmaf(a, e, acc);
    }
  }
}

// Combine: CTA (b, q head), thread d; partials in slot order. m / l of a tile of D partials are
// staged in smem by one coalesced load, the acc loads are issued kStep at a time (independent), and
// every thread runs the same sequential loops as before (same order, same bits).
template <int D>
__global__ void __launch_bounds__(D) combine_kernel(DecodeParams p) {
  __shared__ float spm[D], spl[D];
  const int row = blockIdx.x, b = row / p.Hq, d = threadIdx.x;
  const int P = 1 + chunks_of(closed_groups(len_of(p, b)));
  const float* pm = p.s.pm + static_cast<size_t>(row) * p.s.P;
  const float* pl = p.s.pl + static_cast<size_t>(row) * p.s.P;
  const float* pacc = p.s.pacc + static_cast<size_t>(row) * p.s.P * D;
  float Mx = neg_inf();
  for (int i0 = 0; i0 < P; i0 += D) {
    const int n = P - i0 < D ? P - i0 : D;
    __syncthreads();
    if (d < n) spm[d] = pm[i0 + d];
    __syncthreads();
    for (int i = 0; i < n; ++i) Mx = fmax_step(Mx, spm[i]);
  }
  float lt = 0.0f, acc = 0.0f;
  if (Mx != neg_inf()) {  // uniform over the CTA
    constexpr int kStep = 8;
    for (int i0 = 0; i0 < P; i0 += D) {
      const int n = P - i0 < D ? P - i0 : D;
      __syncthreads();
      if (d < n) {
        spm[d] = pm[i0 + d];
        spl[d] = pl[i0 + d];
      }
      __syncthreads();
      for (int k0 = 0; k0 < n; k0 += kStep) {
        float a[kStep];
#pragma unroll
        for (int k = 0; k < kStep; ++k) a[k] = k0 + k < n ? pacc[static_cast<size_t>(i0 + k0 + k) * D + d] : 0.0f;
#pragma unroll
        for (int k = 0; k < kStep; ++k) {
          if (k0 + k >= n) break;
          const float m = spm[k0 + k];
          if (m == neg_inf()) continue;
          const float e = exp_att(m - Mx);
          lt = fmaf(spl[k0 + k], e, lt);
          acc = fmaf(a[k], e, acc);
        }
      }
    }
  }
  store_combined(p, static_cast<size_t>(row) * D + d, Mx != neg_inf(), acc, lt);
}

}  // namespace mlops::fbla
