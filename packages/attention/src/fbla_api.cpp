// The C API of mlops-attention: validation (before any launch), the entry points.
#include <cuda_runtime.h>

#include <cmath>
#include <string>


#include "mlops/common/api_error.h"
#include "fbla_internal.h"
#include "mlops/fbla.h"

namespace mlops::fbla {
namespace {

thread_local common::ErrorSlot g_err;  // this package's last error (api_error.h)

// The warps refine reads the sink / tail rows 16 bytes a load.
bool rows_aligned16(const mlops_fbla_cache& c) {
  const void* rows[4] = {c.sink_k, c.sink_v, c.tail_k, c.tail_v};
  for (const void* r : rows)
    if (reinterpret_cast<uintptr_t>(r) & 15u) return false;
  return true;
}

mlops_status check_cache(const mlops_fbla_cache* c) {
  g_err.clear();
  if (!c) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "cache: NULL");
  if (c->batch < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "batch: expected >= 1, got %d", c->batch);
  if (c->kv_heads < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "kv_heads: expected >= 1, got %d", c->kv_heads);
  if (c->capacity < 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "capacity: expected >= 1, got %d", c->capacity);
  if (c->head_dim != 64 && c->head_dim != 128)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "head_dim: expected 64 or 128, got %d", c->head_dim);
  if (c->mode != MLOPS_FBLA_3_3 && c->mode != MLOPS_FBLA_4_2)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "mode: expected MLOPS_FBLA_3_3 (0) or MLOPS_FBLA_4_2 (1), got %d", int(c->mode));
  const int slots = c->capacity / kGroup > 1 ? c->capacity / kGroup - 1 : 0;
  if (c->slots != slots)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "slots: expected max(0, capacity / 128 - 1) = %d, got %d", slots, c->slots);
  const int64_t rb = layout(c->head_dim, c->mode).bytes;
  if (c->record_bytes != rb)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "record_bytes: expected %lld for head_dim %d, got %lld", (long long)rb,
                      c->head_dim, (long long)c->record_bytes);
  // the kernels index records as an int (record_of)
  if (static_cast<long long>(c->batch) * c->kv_heads * slots >= (1LL << 31))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "batch: %d x kv_heads %d x %d slots reach 2^31 records", c->batch,
                      c->kv_heads, slots);
  if (slots > 0 && !c->records) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "records: NULL with %d slots", slots);
  if (c->records && (reinterpret_cast<uintptr_t>(c->records) & 15u))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "records: expected a 16-byte aligned pointer");
  if (!c->sink_k || !c->sink_v || !c->tail_k || !c->tail_v)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "sink_k / sink_v / tail_k / tail_v: NULL");
  if (!c->lengths) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "lengths: NULL");
  if (!c->flags) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "flags: NULL");
  return MLOPS_OK;
}

mlops_status check_kv(const mlops_fbla_cache* c, const mlops_fbla_kv* kv) {
  mlops_status st = check_cache(c);
  if (st != MLOPS_OK) return st;
  if (!kv) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "kv: NULL");
  if (kv->max_count < 0) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "max_count: expected >= 0, got %d", kv->max_count);
  if (!kv->counts && (kv->count < 0 || kv->count > kv->max_count))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "count: expected 0 ... max_count = %d, got %d", kv->max_count, kv->count);
  if (kv->max_count > c->capacity)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "max_count: %d tokens exceed capacity %d", kv->max_count, c->capacity);
  if (kv->max_count > 0 && (!kv->k || !kv->v)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "k / v: NULL");
  const int64_t s[6] = {kv->batch_stride, kv->head_stride, kv->token_stride,
                        kv->v_batch_stride, kv->v_head_stride, kv->v_token_stride};
  for (int i = 0; i < 6; ++i)
    if (s[i] < 0) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "k / v: negative stride %lld", (long long)s[i]);
  return MLOPS_OK;
}

mlops_status check_decode(const mlops_fbla_cache* c, const mlops_fbla_decode_args* a, void* scratch, size_t bytes) {
  mlops_status st = check_cache(c);
  if (st != MLOPS_OK) return st;
  if (!a) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "args: NULL");
  if (a->q_heads < 1 || a->q_heads % c->kv_heads)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "q_heads: expected a positive multiple of kv_heads = %d, got %d", c->kv_heads,
                      a->q_heads);
  if (!a->q) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "q: NULL");
  if (a->q_batch_stride < 0 || a->q_head_stride < 0)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "q: negative stride");
  // the kernels index the partials' rows (b, q head, slot) as an int
  if (static_cast<long long>(c->batch) * a->q_heads * (1 + chunks_of(c->slots)) >= (1LL << 31))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "q_heads: batch %d x q_heads %d x %d partial slots reach 2^31 (the decode's "
                      "int32 partial index)", c->batch, a->q_heads, 1 + chunks_of(c->slots));
  if (!a->out) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "out: NULL");
  if (a->out_dtype != MLOPS_DTYPE_BF16 && a->out_dtype != MLOPS_DTYPE_FP32)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "out_dtype: expected bfloat16 or float32, got %s", mlops_dtype_name(a->out_dtype));
  if (!(a->scale > 0.0f) || !std::isfinite(a->scale))
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "scale: expected a finite value > 0, got %g", double(a->scale));
  if (!(a->gap > 0.0f)) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "gap: expected > 0, got %g", double(a->gap));
  if (a->exact != 0 && a->exact != 1) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "exact: expected 0 or 1, got %d", a->exact);
  if (a->ctas < 0) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "ctas: expected >= 0, got %d", a->ctas);
  if (a->variant < 0 || a->variant > kDecodeVariantCount)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: expected 0 (the planner) ... %d, got %d", kDecodeVariantCount,
                      a->variant);
  if (a->pv != MLOPS_FBLA_PV_DIGITS && a->pv != MLOPS_FBLA_PV_CHAINS)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "pv: expected MLOPS_FBLA_PV_DIGITS (0) or MLOPS_FBLA_PV_CHAINS (1), got %d", a->pv);
  if (a->variant > 0 && variant_pv(a->variant - 1) != a->pv)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "variant: entry %d computes pv %s, args.pv is %s", a->variant - 1,
                      variant_pv(a->variant - 1) == MLOPS_FBLA_PV_DIGITS ? "digits" : "chains",
                      a->pv == MLOPS_FBLA_PV_DIGITS ? "digits" : "chains");
  if (a->variant > 0 && warps_refine(a->variant - 1) && !rows_aligned16(*c))  // 16-byte loads of the BF16 rows
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "sink / tail: expected 16-byte aligned pointers (variant warps)");
  if (a->variant == 0 && a->pv == MLOPS_FBLA_PV_DIGITS && !rows_aligned16(*c))  // mma_pv: the only digits variant
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "sink / tail: expected 16-byte aligned pointers (pv digits)");
  const size_t need = mlops_fbla_decode_scratch_bytes(c, a->q_heads);
  if (!scratch) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "scratch: NULL (mlops_fbla_decode_scratch_bytes: %zu)", need);
  if (reinterpret_cast<uintptr_t>(scratch) & 15u)
    return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "scratch: expected a 16-byte aligned pointer");
  if (bytes < need) return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "scratch_bytes: expected >= %zu, got %zu", need, bytes);
  return MLOPS_OK;
}

DecodeParams make_decode(const mlops_fbla_cache& c, const mlops_fbla_decode_args& a, void* scratch) {
  DecodeParams p{};
  p.c = c;
  p.q = a.q;
  p.qbs = a.q_batch_stride;
  p.qhs = a.q_head_stride;
  p.Hq = a.q_heads;
  p.Gq = a.q_heads / c.kv_heads;
  p.out = a.out;
  p.out_fp32 = a.out_dtype == MLOPS_DTYPE_FP32;
  p.lengths = c.lengths;
  p.scale = a.scale;
  p.gap = a.gap;
  p.exact = a.exact;
  p.pv = a.pv;
  // the planner: pv digits: mma_pv; pv chains: its pick, or items+combine_warps where the BF16 rows are not
  // 16-byte aligned
  if (a.variant > 0)
    p.variant = a.variant - 1;
  else if (a.pv == MLOPS_FBLA_PV_DIGITS)
    p.variant = kPlannerDigits;
  else
    p.variant = rows_aligned16(c) ? kPlannerVariant : kItemsCombineWarps;
  p.planned = a.variant != 0 ? 0 : p.variant == kPlannerVariant ? 1 : p.variant == kPlannerDigits ? 2 : 0;
  scratch_floats(c.batch, a.q_heads, c.head_dim, c.slots, &p.s, static_cast<float*>(scratch));
  return p;
}

AppendParams make_append(const mlops_fbla_cache& c, const mlops_fbla_kv& kv) {
  AppendParams p{};
  p.c = c;
  p.kv = kv;
  p.closes = kv.max_count / kGroup + 1;
  return p;
}

}  // namespace
}  // namespace mlops::fbla

using namespace mlops::fbla;

extern "C" {

int64_t mlops_fbla_record_bytes(int32_t head_dim) {
  return head_dim == 64 || head_dim == 128 ? layout(head_dim, MLOPS_FBLA_3_3).bytes : 0;
}

mlops_status mlops_fbla_check_cache(const mlops_fbla_cache* cache) { return check_cache(cache); }

size_t mlops_fbla_decode_scratch_bytes(const mlops_fbla_cache* c, int32_t q_heads) {
  if (!c || c->batch < 1 || q_heads < 1 || (c->head_dim != 64 && c->head_dim != 128) || c->slots < 0) return 0;
  return 4 * scratch_floats(c->batch, q_heads, c->head_dim, c->slots, nullptr, nullptr);
}

mlops_status mlops_fbla_append(const mlops_fbla_cache* cache, const mlops_fbla_kv* kv, void* stream) {
  mlops_status st = check_kv(cache, kv);
  if (st != MLOPS_OK) return st;
  cudaError_t err = append_device(make_append(*cache, *kv), static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "append launch failed: %s", cudaGetErrorString(err));
  return MLOPS_OK;
}

mlops_status mlops_fbla_append_host(const mlops_fbla_cache* cache, const mlops_fbla_kv* kv) {
  mlops_status st = check_kv(cache, kv);
  if (st != MLOPS_OK) return st;
  for (int b = 0; b < cache->batch; ++b) {
    const int n = kv->counts ? kv->counts[b] : kv->count;
    if (n < 0 || n > kv->max_count) {
      cache->flags[0] |= MLOPS_FBLA_FLAG_FULL;
      return g_err.fail(MLOPS_ERR_DATA, "counts[%d]: expected 0 ... max_count = %d, got %d; nothing written", b, kv->max_count, n);
    }
    if (int64_t(cache->lengths[b]) + n > cache->capacity) {
      cache->flags[0] |= MLOPS_FBLA_FLAG_FULL;
      return g_err.fail(MLOPS_ERR_DATA, "cache full: sequence %d holds %d tokens, %d more exceed capacity %d; nothing written", b,
                        cache->lengths[b], n, cache->capacity);
    }
  }
  append_host(make_append(*cache, *kv));
  return MLOPS_OK;
}

mlops_status mlops_fbla_decode(const mlops_fbla_cache* cache, const mlops_fbla_decode_args* args, void* scratch,
                               size_t scratch_bytes, void* stream) {
  mlops_status st = check_decode(cache, args, scratch, scratch_bytes);
  if (st != MLOPS_OK) return st;
  cudaError_t err = decode_device(make_decode(*cache, *args, scratch), args->ctas, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) return g_err.fail(MLOPS_ERR_CUDA, "decode launch failed: %s", cudaGetErrorString(err));
  return MLOPS_OK;
}

mlops_status mlops_fbla_decode_host(const mlops_fbla_cache* cache, const mlops_fbla_decode_args* args, void* scratch,
                                    size_t scratch_bytes) {
  mlops_status st = check_decode(cache, args, scratch, scratch_bytes);
  if (st != MLOPS_OK) return st;
  for (int b = 0; b < cache->batch; ++b)
    if (cache->lengths[b] < 0 || cache->lengths[b] > cache->capacity)
      return g_err.fail(MLOPS_ERR_DATA, "lengths[%d] = %d: expected 0 ... capacity %d", b, cache->lengths[b], cache->capacity);
  decode_host(make_decode(*cache, *args, scratch));
  return MLOPS_OK;
}

int32_t mlops_fbla_decode_variants(mlops_fbla_decode_variant* out, int32_t capacity) {
  static const mlops_fbla_decode_variant kList[kDecodeVariantCount] = {
      {"items", 61, MLOPS_FBLA_PV_CHAINS},                // refine: a CTA of 256 an item; combine: a CTA a row
      {"items+combine_warps", 61, MLOPS_FBLA_PV_CHAINS},  // the same refine; combine: a warp a (row, 32 channels)
      {"warps", 61, MLOPS_FBLA_PV_CHAINS},  // refine: 2 warps an item (lane a token, lane 4 channels); combine_warps
      {"warps+coarse_warps", 61, MLOPS_FBLA_PV_CHAINS},   // warps, and the coarse pass (skip mode) in the same layout
      {"imma+coarse_warps", 80, MLOPS_FBLA_PV_CHAINS},    // warps+coarse_warps, the closed groups' scores by mma.sync
      {"imma+coarse_imma", 80, MLOPS_FBLA_PV_CHAINS},     // imma+coarse_warps, the coarse pass's dots by mma.sync too
      {"imma_occ+coarse_imma", 80, MLOPS_FBLA_PV_CHAINS}, // imma+coarse_imma, the refine at kImmaOccCtas CTAs an SM
      {"stage+coarse_imma", 90, MLOPS_FBLA_PV_CHAINS},    // the chunk staged by cp.async.bulk; IMMA scores; PDL combine
      {"stage_pipe+coarse_imma", 90, MLOPS_FBLA_PV_CHAINS},  // stage+coarse_imma, the V codes in 4 pieces
      {"stage_bf+coarse_imma", 90, MLOPS_FBLA_PV_CHAINS},    // stage+coarse_imma, the BF16 item's loads batched
      {"mma_pv+coarse_imma", 80, MLOPS_FBLA_PV_DIGITS},   // pv digits: 8 warps an item, scores and P V by mma.sync
      {"mma_pv4+coarse_imma", 80, MLOPS_FBLA_PV_DIGITS},  // mma_pv in 54.5 KB of shared memory: 4 CTAs an SM
      {"mma_pv4w+coarse_imma", 80, MLOPS_FBLA_PV_DIGITS}, // mma_pv4 with 4 warps an item (2 slices a warp)
      {"mma_pv4f+coarse_imma", 80, MLOPS_FBLA_PV_DIGITS}, // mma_pv4, the combine folded into the refine's last CTAs
      {"mma_pv4r+coarse_imma", 80, MLOPS_FBLA_PV_DIGITS}, // mma_pv4, the thread index read again a phase (no spills)
  };
  for (int i = 0; out && i < kDecodeVariantCount && i < capacity; ++i) out[i] = kList[i];
  return kDecodeVariantCount;
}

int32_t mlops_fbla_decode_planner_variant(void) { return kPlannerDigits; }

int32_t mlops_fbla_decode_planner_variant_for(int32_t pv) {
  return pv == MLOPS_FBLA_PV_DIGITS ? kPlannerDigits : pv == MLOPS_FBLA_PV_CHAINS ? kPlannerVariant : -1;
}

const char* mlops_fbla_last_error(void) { return g_err.message(); }

}  // extern "C"
