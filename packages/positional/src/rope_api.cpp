// The C API of mlops-positional: validation (before any launch), the planner, the entry points.
#include <cuda_runtime.h>

#include <cmath>
#include <string>


#include "mlops/common/api_error.h"
#include "mlops/rope.h"
#include "rope_launch.h"

namespace mlops::rope {
namespace {
using common::is_float_type;

thread_local common::ErrorSlot g_err;  // this package's last error (api_error.h)

mlops_status check_side(const char* name, const mlops_rope_tensor& t, int64_t head_dim) {
  if (t.heads < 0) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "%s: expected heads >= 0, got %lld", name, (long long)t.heads);
  if (t.heads == 0) return MLOPS_OK;
  if (!t.x) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "%s: NULL input with %lld heads", name, (long long)t.heads);
  if (!t.out) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "%s: NULL output (pass the input for in place)", name);
  const int64_t s[6] = {t.batch_stride, t.seq_stride, t.head_stride, t.out_batch_stride, t.out_seq_stride,
                        t.out_head_stride};
  for (int i = 0; i < 6; ++i)
    if (s[i] < 0) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "%s: negative stride %lld", name, (long long)s[i]);
  if (t.heads > 1 && (t.head_stride < head_dim || t.out_head_stride < head_dim))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "%s: head stride %lld / %lld is smaller than head_dim %lld: heads overlap",
                      name, (long long)t.head_stride, (long long)t.out_head_stride, (long long)head_dim);
  if (t.out == t.x && (t.batch_stride != t.out_batch_stride || t.seq_stride != t.out_seq_stride ||
                       t.head_stride != t.out_head_stride))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "%s: in place (out == x) needs the same strides for both", name);
  return MLOPS_OK;
}

mlops_status check(const mlops_rope_args* a) {
  g_err.clear();
  if (!a) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "args: NULL");
  if (a->batch < 1 || a->seq < 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "positions: expected at least one token, got batch %lld x seq %lld",
                      (long long)a->batch, (long long)a->seq);
  if (a->batch * a->seq > 0x7fffffffLL || a->batch > 0x7fffffffLL || a->seq > 0x7fffffffLL)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "positions: expected fewer than 2^31 tokens, got batch %lld x seq %lld",
                      (long long)a->batch, (long long)a->seq);
  if (a->head_dim < 64 || a->head_dim > 256)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "head_dim: expected 64 ... 256, got %lld", (long long)a->head_dim);
  if (a->rotary_dim < 2 || a->rotary_dim > a->head_dim || a->rotary_dim % 2)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "rotary_dim: expected an even value in [2, head_dim=%lld], got %lld",
                      (long long)a->head_dim, (long long)a->rotary_dim);
  if (a->layout != MLOPS_ROPE_NEOX && a->layout != MLOPS_ROPE_GPTJ)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "layout: expected neox (0) or gptj (1), got %d", int(a->layout));
  if (!is_float_type(a->dtype))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "q: expected bfloat16, float16 or float32, got %s", mlops_dtype_name(a->dtype));
  mlops_status st = check_side("q", a->q, a->head_dim);
  if (st != MLOPS_OK) return st;
  st = check_side("k", a->k, a->head_dim);
  if (st != MLOPS_OK) return st;
  if (a->q.heads + a->k.heads < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "q: no heads in q nor k");
  if (a->pos_dtype != MLOPS_DTYPE_INT32 && a->pos_dtype != MLOPS_DTYPE_INT64)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "positions: expected int32 or int64, got %s", mlops_dtype_name(a->pos_dtype));
  if (!a->positions) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "positions: NULL pointer");
  const int32_t* ms = a->mrope_section;
  if (ms[0] || ms[1] || ms[2]) {
    if (ms[0] < 0 || ms[1] < 0 || ms[2] < 0 || int64_t(ms[0]) + ms[1] + ms[2] != a->rotary_dim / 2)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "mrope_section: expected three values >= 0 summing to rotary_dim/2 = %lld, got (%d, %d, %d)",
                        (long long)(a->rotary_dim / 2), ms[0], ms[1], ms[2]);
    if (a->pos_row_stride < a->batch * a->seq)
      return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "positions: mrope rows overlap (row stride %lld < %lld tokens)",
                        (long long)a->pos_row_stride, (long long)(a->batch * a->seq));
  }
  if (a->max_positions < 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "max_positions: expected >= 1, got %lld", (long long)a->max_positions);
  if (!a->cos_sin_cache && !a->inv_freq)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "cos_sin_cache: NULL and no inv_freq to compute cos/sin on the fly");
  if (!std::isfinite(a->attention_scaling))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "attention_scaling: expected a finite value, got %g", double(a->attention_scaling));
  if (a->tokens_per_cta < 0 || a->tokens_per_cta > 16)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "tokens_per_cta: expected 0 (planner) or 1 ... 16, got %d", a->tokens_per_cta);
  if (a->heads_per_cta < 0 || a->heads_per_cta > a->q.heads + a->k.heads)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "heads_per_cta: expected 0 (all) or 1 ... %lld, got %d",
                      (long long)(a->q.heads + a->k.heads), a->heads_per_cta);
  if (a->variant < 0 || a->variant > kNumVariants)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: expected 0 (planner) or 1 ... %d, got %d", kNumVariants, a->variant);
  return MLOPS_OK;
}

Side make_side(const mlops_rope_tensor& t) {
  return Side{t.x, t.out, t.heads, t.batch_stride, t.seq_stride, t.head_stride,
              t.out_batch_stride, t.out_seq_stride, t.out_head_stride};
}

Params make_params(const mlops_rope_args& a, int tpc, int hpc) {
  Params p{};
  p.batch = a.batch; p.seq = a.seq; p.tokens = a.batch * a.seq;
  p.head_dim = int(a.head_dim); p.rotary_dim = int(a.rotary_dim); p.half = int(a.rotary_dim / 2);
  p.q = make_side(a.q); p.k = make_side(a.k);
  p.heads = int(a.q.heads + a.k.heads);
  p.pos = a.positions; p.pos64 = a.pos_dtype == MLOPS_DTYPE_INT64; p.pos_row_stride = a.pos_row_stride;
  p.mrope = a.mrope_section[0] || a.mrope_section[1] || a.mrope_section[2];
  p.s0 = a.mrope_section[0]; p.s1 = a.mrope_section[1];
  p.cache = a.cos_sin_cache; p.max_pos = a.max_positions;
  p.inv_freq = a.inv_freq;
  p.scaling = a.attention_scaling;
  p.flag = a.out_of_range;
  p.tpc = tpc;
  p.hpc = hpc > 0 ? hpc : p.heads;
  const bool oop = (a.q.heads && a.q.out != a.q.x) || (a.k.heads && a.k.out != a.k.x);
  p.tail = oop && a.rotary_dim < a.head_dim;
  p.grid_x = int((p.tokens + tpc - 1) / tpc);  // a CTA a token block
  return p;
}

// 16-byte accesses are safe when every head start and every chunk boundary is 16-byte aligned.
bool can_vectorize(const mlops_rope_args& a) {
  const int64_t es = mlops_dtype_size(a.dtype), E = 16 / es;
  const int64_t half = a.rotary_dim / 2;
  if (a.layout == MLOPS_ROPE_NEOX ? half % E : a.rotary_dim % E) return false;
  if (a.rotary_dim % E || (a.head_dim - a.rotary_dim) % E) return false;
  for (const mlops_rope_tensor* t : {&a.q, &a.k}) {
    if (!t->heads) continue;
    if ((reinterpret_cast<uintptr_t>(t->x) | reinterpret_cast<uintptr_t>(t->out)) & 15u) return false;
    const int64_t s[6] = {t->batch_stride, t->seq_stride, t->head_stride, t->out_batch_stride, t->out_seq_stride,
                          t->out_head_stride};
    for (int i = 0; i < 6; ++i)
      if (s[i] % E) return false;
  }
  return true;
}

// SMs of the current device, queried once a device: an eager decode call is host-bound, and
// cudaDeviceGetAttribute costs a driver call each time. 0 without a device.
int sm_count() {
  static int cached[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64 && cached[dev] > 0) return cached[dev];
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cached[dev] = sms;  // a racing thread writes the same value
  return sms;
}

}  // namespace
}  // namespace mlops::rope

using namespace mlops::rope;

namespace {
// 8-pair chunks (items) of a token's heads, as the planner counts them (bf16 16-byte chunks).
int64_t plan_items(int64_t heads, int64_t rotary_dim) {
  const int64_t chunks = (rotary_dim / 2 + 7) / 8 > 0 ? (rotary_dim / 2 + 7) / 8 : 1;
  return heads * chunks > 0 ? heads * chunks : 1;
}
// The planner's kernel (H200 run 27, 32 + 8 heads x 128 bf16, 132 SMs, every candidate in one bench;
// CUDA events / CUPTI kernel time, the empty kernel 4.35 us by events):
// - from the cache, dec while its grid (one item a lane at 4 CTAs an SM) is at most kDecWaves waves:
//   T = 1 5.76 / 1.82 us (early2 6.40 / 2.40), T = 32 6.05 / 2.11 (early2 6.53 / 2.72), T = 4096 (9.7
//   waves) 25.92 / 22.06, the fastest row from the cache (early2x5 26.38 / 22.34); at T = 32768 (77.6
//   waves) dec ran 221.5 / 220.1 against early2x5's 173.2 / 169.1: one item a lane is 32 KB an SM in
//   flight against early2x5's 80 KB, too little for DRAM at steady state; at T = 4096 the ramp and
//   the L2 (which holds the writes) dominate instead. No point between 4096 and 32768 was measured,
//   so the bound is the largest measured win.
// - on the fly, dec while the call is at most one CTA of tokens (kDecWarps, a warp each): T = 1 6.10 /
//   2.35 against stage4's 6.43 / 2.56; at T = 32 a tie (6.59 / 2.66 against 6.53 / 2.69) and at T = 4096
//   dec loses (30.78 against 25.25): each of a token's 10 warps computes its sincos, so its on-the-fly
//   cost grows with the tokens an SM. Linear between T = 1 and 32 the event gap closes at ~27
//   tokens; 8 keeps inside the win. stage4 for the rest of decode (run 20), early2x5 above.
// - from the cache past decode (still within dec's wave bound), decx5 (dec at 5 CTAs an SM, direct-only
//   code; other calls run dec's kernel): H200 run 29 (ci/device/s5e.sh, the probe alone on the machine)
//   T = 4096 23.65 / 21.12 us against dec's 25.60 / 22.14 and stage4 on the fly's 24.96 / 21.36; run 28
//   20.96 us of kernel (its events host-bound). Decode keeps dec (the same kernel below one wave).
// split_given: the caller set tokens / heads a CTA, so a kernel that uses them (dec's grid ignores a
// split): early2 for decode from the cache, as before run 27.
int planner_pick(int on_the_fly, int64_t tokens, int64_t items, int sms, bool split_given) {
  const int64_t n = sms > 0 ? sms : 1;
  const bool decode = tokens * items <= 2 * n * kCtaThreads;
  const int64_t dec_wave = n * kVariants[kDec - 1].ctas_per_sm * kCtaThreads * kVariants[kDec - 1].items_per_thread;
  if (!split_given && (on_the_fly ? tokens <= kDecWarps : tokens * items <= kDecWaves * dec_wave))
    return on_the_fly || decode ? kDec : kDecx5;
  return decode ? (on_the_fly ? kStage4 : kEarly2) : kEarly2x5;
}
}  // namespace

extern "C" {

void mlops_rope_plan_path(int variant, int on_the_fly, int64_t tokens, int64_t heads, int64_t rotary_dim, int sms,
                          int* tokens_per_cta, int* heads_per_cta, int* variant_used) {
  // An item: 16 bytes of each half of a head (bf16: 8 pairs). Small problems (decode: every item
  // of the call fits 2 CTAs an SM at one item a thread): one token a CTA, its heads spread over
  // CTAs, 128 items a CTA (H200 run 14: 16 heads a CTA beat 32, 20 and 8 at T = 1 and 32 for every
  // variant; at T = 1 early2 6.37 us vs 6.46 at 32 heads). Big ones: all heads a CTA, a few tokens a
  // CTA (fewer while that leaves < 2 CTAs an SM): step2 and early2 about 4 items a thread (rounded
  // up: 4 tokens at 40 heads; early2 issues 2 of them early), early4 / early8 at most U (all issued
  // at once). Variant 0 (H200 run 17, 32 + 8 heads x 128 bf16, all candidates interleaved in one
  // bench): early2 for decode (T = 1 6.14 us, T = 32 6.40-6.62: every variant within the rows'
  // +-0.3 us noise); early2x5 (early2 at 5 CTAs an SM) for prefill on both paths. From the cache at
  // 3 tokens a CTA (about 3 items a thread: T = 32768 175.5 us = 89.8 % of copy BW vs early2 at 4
  // tokens 181.3, early2x5 at 4 tokens 176.8; T = 4096 29.76 vs 29.39, inside the noise): the 5th CTA
  // hides the positions -> cache row round trip that early2 at 4 CTAs leaves exposed. On the fly at 4
  // tokens a CTA (T = 32768 171.57 us = 91.9 % vs early4 at 3 tokens 171.95; T = 4096 28.22 vs
  // 28.90): it reads no cache row, so its chain is positions -> sincos in registers.
  // H200 run 20 (same bench, CUDA events / CUPTI kernel time): decode on the fly takes stage4, which
  // reads positions and inv_freq in one round trip (T = 32: 6.72 / 2.62 us against early2's 6.88 /
  // 2.82; T = 1: 6.62 / 2.43 against 6.59 / 2.42, a tie); decode from the cache keeps early2 (T = 1
  // 6.43 / 2.30 against stage4's 6.72 / 2.43); prefill keeps early2x5 (T = 4096 on the fly 29.49 /
  // 24.29, the fastest row; T = 32768 cache 175.87, on the fly 172.0 = 91.7 % of copy BW).
  // H200 run 27: dec for decode (and from the cache up to 10 waves of its grid), see planner_pick.
  const int64_t chunks = (rotary_dim / 2 + 7) / 8 > 0 ? (rotary_dim / 2 + 7) / 8 : 1;
  const int64_t items = plan_items(heads, rotary_dim);
  const int64_t want = 2 * int64_t(sms > 0 ? sms : 1);
  const bool decode = tokens * items <= want * kCtaThreads;
  int v = variant;
  if (v < 1 || v > kNumVariants) v = planner_pick(on_the_fly, tokens, items, sms, false);
  const VariantInfo& info = kVariants[v - 1];
  if (info.flat) {  // no token / head blocks: one grid row over every item (flat_grid at the launch)
    if (tokens_per_cta) *tokens_per_cta = 1;
    if (heads_per_cta) *heads_per_cta = int(heads);
    if (variant_used) *variant_used = v;
    return;
  }
  if (info.dec) {  // 8 tokens a CTA (a warp each), a warp's heads (dec_grid at the launch; 8-pair chunks assumed here)
    if (tokens_per_cta) *tokens_per_cta = kDecWarps;
    if (heads_per_cta) *heads_per_cta = dec_heads(heads, int(chunks), info.items_per_thread);
    if (variant_used) *variant_used = v;
    return;
  }
  // early2x5 from the cache: about 3 items a thread (run 17, T = 32768: 3 tokens a CTA 175.5 us, 4 176.8)
  const int64_t target = v == kEarly2x5 && !on_the_fly ? 3 : 4;
  int64_t tpc = info.early && info.items_per_thread >= 4 ? info.items_per_thread * kCtaThreads / items
                                                          : (target * kCtaThreads + items - 1) / items;
  tpc = tpc < 1 ? 1 : (tpc > 16 ? 16 : tpc);
  while (tpc > 1 && (tokens + tpc - 1) / tpc < want) tpc /= 2;
  int64_t hpc = heads;
  if (tpc == 1 && decode) {
    hpc = kCtaThreads / 2 / chunks;
    hpc = hpc < 1 ? 1 : (hpc > heads ? heads : hpc);
  }
  if (tokens_per_cta) *tokens_per_cta = int(tpc);
  if (heads_per_cta) *heads_per_cta = int(hpc);
  if (variant_used) *variant_used = v;
}

void mlops_rope_plan_variant(int variant, int64_t tokens, int64_t heads, int64_t rotary_dim, int sms,
                             int* tokens_per_cta, int* heads_per_cta, int* variant_used) {
  mlops_rope_plan_path(variant, 0, tokens, heads, rotary_dim, sms, tokens_per_cta, heads_per_cta, variant_used);
}

void mlops_rope_plan(int64_t tokens, int64_t heads, int64_t rotary_dim, int sms, int* tokens_per_cta,
                     int* heads_per_cta) {
  mlops_rope_plan_variant(0, tokens, heads, rotary_dim, sms, tokens_per_cta, heads_per_cta, nullptr);
}

int mlops_rope_variants(mlops_rope_variant* out, int capacity) {
  for (int i = 0; i < kNumVariants && i < capacity; ++i)
    out[i] = mlops_rope_variant{kVariants[i].id, kVariants[i].name, kVariants[i].items_per_thread, kVariants[i].early,
                                kVariants[i].pipe};
  return kNumVariants;
}

mlops_status mlops_rope_check(const mlops_rope_args* args) { return check(args); }

mlops_status mlops_rope(const mlops_rope_args* args, void* stream) {
  mlops_status st = check(args);
  if (st != MLOPS_OK) return st;
  int tpc = args->tokens_per_cta, hpc = args->heads_per_cta;
  int variant = args->variant;
  const int sms = sm_count();
  if (sms < 1) return g_err.fail(MLOPS_ERR_CUDA, "no CUDA device available");
  if (tpc == 0)
    mlops_rope_plan_path(variant, args->cos_sin_cache == nullptr, args->batch * args->seq, args->q.heads + args->k.heads,
                         args->rotary_dim, sms, &tpc, &hpc, &variant);
  else if (variant == 0)  // a split given, the kernel left to the planner: its pick among the kernels that use a split
    variant = planner_pick(args->cos_sin_cache == nullptr, args->batch * args->seq,
                           plan_items(args->q.heads + args->k.heads, args->rotary_dim), sms, true);
  Params p = make_params(*args, tpc, hpc);
  const VariantInfo& info = kVariants[variant - 1];
  if (info.flat)  // one grid row over every item: the split's token / head blocks do not apply
    flat_grid(p, info, int(mlops_dtype_size(args->dtype)), can_vectorize(*args), int(args->layout), sms);
  if (info.dec)  // a warp a (token, head group): the split's blocks do not apply either
    dec_grid(p, info, int(mlops_dtype_size(args->dtype)), can_vectorize(*args), int(args->layout));
  cudaError_t err = launch(p, args->dtype, can_vectorize(*args), int(args->layout), variant,
                           static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "rope launch failed: %s", cudaGetErrorString(err));
  return MLOPS_OK;
}

mlops_status mlops_rope_host(const mlops_rope_args* args) {
  mlops_status st = check(args);
  if (st != MLOPS_OK) return st;
  run_host(make_params(*args, 1, 0), args->dtype, int(args->layout));
  return MLOPS_OK;
}

static mlops_status check_cache(const float* inv_freq, int64_t half, float scaling, int64_t max_positions,
                                float* cache) {
  g_err.clear();
  if (!inv_freq) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "inv_freq: NULL pointer");
  if (!cache) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "cache: NULL pointer");
  if (half < 1 || half > 128)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "inv_freq: expected 1 ... 128 frequencies, got %lld", (long long)half);
  if (max_positions < 1)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "max_positions: expected >= 1, got %lld", (long long)max_positions);
  if (!std::isfinite(scaling))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "attention_scaling: expected a finite value, got %g", double(scaling));
  return MLOPS_OK;
}

mlops_status mlops_rope_cache(const float* inv_freq, int64_t half, float scaling, int64_t max_positions, float* cache,
                              void* stream) {
  mlops_status st = check_cache(inv_freq, half, scaling, max_positions, cache);
  if (st != MLOPS_OK) return st;
  cudaError_t err = launch_cache(inv_freq, half, scaling, max_positions, cache, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "rope cache launch failed: %s", cudaGetErrorString(err));
  return MLOPS_OK;
}

mlops_status mlops_rope_cache_host(const float* inv_freq, int64_t half, float scaling, int64_t max_positions,
                                   float* cache) {
  mlops_status st = check_cache(inv_freq, half, scaling, max_positions, cache);
  if (st != MLOPS_OK) return st;
  cache_host(inv_freq, half, scaling, max_positions, cache);
  return MLOPS_OK;
}

const char* mlops_rope_last_error(void) { return g_err.message(); }

}  // extern "C"
