/* mlops-attention: the FBLA compressed KV cache and its decode attention.
 *
 * Plain C. Every call validates its arguments before launching anything; a failure returns a
 * status and mlops_fbla_last_error() names the argument and what was expected. No call
 * allocates or synchronizes the host. The GPU calls take device pointers (the cache's and the
 * tensors'); the _host calls are the host emulation on host pointers: the same arithmetic in
 * the same order, the same bits (records and outputs).
 *
 * The format (docs/attention.md is the reference; this struct mirrors it):
 *   - tokens of a (sequence, kv head) form groups of 128: group g holds tokens 128g .. 128g+127;
 *   - group 0 is the sink: kept in BF16 (sink_k / sink_v), never quantized;
 *   - a group g >= 1 is closed once its 128 tokens are in: quantized to one record of
 *     mlops_fbla_record_bytes(head_dim) bytes at records[((b * kv_heads + h) * slots + g - 1)];
 *   - the group still filling (g >= 1, not closed) stays in BF16 in tail_k / tail_v at row t % 128;
 *   - lengths[b] (device memory) is the number of tokens of sequence b.
 * A record (all offsets multiples of 16 bytes, records 256-byte multiples, D = head_dim):
 *   [0, 2D)               k_min   bf16 [D]     K is quantized per channel within the group
 *   [2D, 4D)              k_scale bf16 [D]     k = k_min[d] + k_scale[d] * code (in float)
 *   [4D, 4D+256)          v_min   bf16 [128]   V is quantized per token
 *   [4D+256, 4D+512)      v_scale bf16 [128]   v = v_min[t] + v_scale[t] * code (in float)
 *   (record version 4: the mins are the smallest bf16 input, exact; a scale is (max - min) / 63 rounded
 *   up to bf16 and the codes are picked against it; versions 1 - 3 held the four arrays in fp32)
 *   [4D+512, +16 cb D)    K coarse fields: code >> fb of every (token, channel), fragment-ordered
 *   [.., +16 fb D)        K fine fields:   code & (2^fb - 1), the same order
 *   [.., +96 D)           V codes:         fragment-ordered 6-bit codes (record version 2 on, below)
 * A 6-bit code c = coarse << fb | fine. Mode 3+3: cb = fb = 3; mode 4+2: cb = 4, fb = 2.
 * K (MLOPS_FBLA_RECORD_VERSION 3 on; versions 1, 2 held bit planes [128 tokens][bits][D/8 bytes]): in a
 * region of field width `bits` (cb or fb), token t, channel d = 32w + 8i + k sit in block t / 16,
 * lane L = 4 (t % 8) + tig, field register n = 4 s + 2 j + (t / 8) % 2, byte i, where code word
 * 8w + k = 2 S tig + 2 s + j (S = D / 32; an mma.m16n8k32 A fragment: rows = tokens, k = channels).
 * A lane's 4S registers of a block are nw = D * bits / 64 uint32 words (byte i of a word holds byte i
 * of its registers' fields): 4 bits: word n/2, bits 4 (n%2); 2 bits: word n/4, bits 2 (n%4); 3 bits:
 * words 3h + v (h = n/8) hold registers 8h + 2v, 8h + 2v + 1 in bits 0-2, 3-5, and bits 6-7 of the
 * three words hold register 8h + 6's bits 0-1 | its bit 2 and register 8h + 7's bit 0 | its bits 1-2.
 * Word v of lane L in block b is the uint32 at b*32*nw + 32*ps + L*psz + (v - ps) of the region,
 * (ps, psz) its part: the lane's words cut into parts of 4, then 2, then 1 words (docs/attention.md,
 * "The K codes").
 * V (MLOPS_FBLA_RECORD_VERSION 2 on; version 1 held 6 bit planes a token): the code of token t,
 * channel d is byte i = t % 4 of register j = 2 ((t / 16) % 2) + (d / 8) % 2 of lane
 * L = 4 (d % 8) + (t % 16) / 4, tile T = d / 16, slice s = t / 32 (an mma.m16n8k32 A fragment:
 * rows = channels, k = tokens); a tile's 4 registers are 3 uint32 words: byte i of word v (0..2) =
 * register v's byte-i code in bits 0-5, bits 2v, 2v+1 of register 3's byte-i code in bits 6-7; word
 * 3T + v of lane L in slice s is the uint32 at s*6D + ((3T+v)/4)*128 + 4L + (3T+v)%4 of the region
 * (docs/attention.md, "The V codes"). Record bytes: 196 D + 512 (D = 64: 13056, D = 128: 25600). */
#ifndef MLOPS_FBLA_H
#define MLOPS_FBLA_H

#include <stddef.h>
#include <stdint.h>
#include "mlops/common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLOPS_FBLA_ABI_VERSION 3 /* 2: mlops_fbla_decode_args.variant; 3: .pv and mlops_fbla_decode_variant.pv */
#define MLOPS_FBLA_GROUP 128       /* tokens a group */
#define MLOPS_FBLA_BLOCK 16        /* tokens a refine block (the unit of the skip decision) */
#define MLOPS_FBLA_RECORD_VERSION 4 /* the records' byte order: 2 = V codes fragment-ordered (session 21), 3 = K too,
                                       4 = the scale arrays bf16 (session 32) */
#define MLOPS_FBLA_CHUNK_GROUPS 2  /* closed groups a decode work item (fixed: results never depend on the grid) */
#define MLOPS_FBLA_FLAG_FULL 1     /* flags[0] bit: an append was refused, the cache was full */
/* The decode's P V numerics (docs/attention.md, "Two P V forms"): each fixes every bit of the output. */
#define MLOPS_FBLA_PV_DIGITS 0 /* the default: a closed 32-token slice's weights p * v_scale as two int8 digits,
                                  the integer P V exact (tensor core), one fp32 scale a slice */
#define MLOPS_FBLA_PV_CHAINS 1 /* fp32 fmaf chains in token order (the numerics of the first ten variants) */

typedef enum mlops_fbla_mode {
  MLOPS_FBLA_3_3 = 0, /* coarse 3 bits, fine 3 bits */
  MLOPS_FBLA_4_2 = 1  /* coarse 4 bits, fine 2 bits */
} mlops_fbla_mode;

typedef struct mlops_fbla_cache {
  int32_t batch;      /* sequences */
  int32_t kv_heads;
  int32_t capacity;   /* tokens a sequence, >= 1 */
  int32_t head_dim;   /* 64 or 128 */
  mlops_fbla_mode mode;
  int32_t slots;      /* closed-group records a (sequence, kv head): max(0, capacity / 128 - 1) */
  int64_t record_bytes;
  uint8_t* records;   /* [batch][kv_heads][slots][record_bytes], 16-byte aligned (empty(): 256) */
  uint16_t* sink_k;   /* bf16 [batch][kv_heads][128][head_dim]: tokens 0 .. 127 */
  uint16_t* sink_v;
  uint16_t* tail_k;   /* bf16 [batch][kv_heads][128][head_dim]: the filling group, row t % 128 */
  uint16_t* tail_v;
  int32_t* lengths;   /* [batch], device memory (host memory for the _host calls) */
  int32_t* flags;     /* [1], sticky; the caller clears it */
} mlops_fbla_cache;

/* New tokens for an append: element (b, h, i, d) at ptr + b*batch_stride + h*head_stride +
 * i*token_stride + d (bf16 elements; d contiguous). Sequence b takes counts[b] tokens (counts in
 * device memory, host for _host) or, with counts NULL, count tokens. max_count >= every count
 * (sizes the launches; count when counts is NULL). */
typedef struct mlops_fbla_kv {
  const uint16_t* k;
  const uint16_t* v;
  int64_t batch_stride, head_stride, token_stride;   /* of k */
  int64_t v_batch_stride, v_head_stride, v_token_stride;
  const int32_t* counts;
  int32_t count;
  int32_t max_count;
} mlops_fbla_kv;

/* Appends the tokens (encode = append to an empty cache with counts = lengths). Closes every
 * group that fills on the device: the same records as mlops_fbla_append_host, bit for bit. If
 * any sequence would pass capacity, nothing at all is written and flags[0] |= FLAG_FULL (the
 * host call returns MLOPS_ERR_DATA instead). Enqueued on stream (a cudaStream_t). */
mlops_status mlops_fbla_append(const mlops_fbla_cache* cache, const mlops_fbla_kv* kv, void* stream);
mlops_status mlops_fbla_append_host(const mlops_fbla_cache* cache, const mlops_fbla_kv* kv);

typedef struct mlops_fbla_decode_args {
  const uint16_t* q;     /* bf16, element (b, h, d) at q + b*q_batch_stride + h*q_head_stride + d */
  int64_t q_batch_stride, q_head_stride;
  int32_t q_heads;       /* a multiple of kv_heads; q head h reads kv head h / (q_heads / kv_heads) */
  void* out;             /* [batch][q_heads][head_dim] contiguous, out_dtype */
  mlops_dtype out_dtype; /* BF16 or FP32 */
  float scale;           /* softmax scale, e.g. 1/sqrt(head_dim) */
  int32_t exact;         /* 1: refine every block; 0: skip blocks whose bound is gap below the max */
  float gap;             /* > 0, natural-log units; a skipped token weighs <= exp(-gap) of the max */
  int32_t ctas;          /* 0: the device's resident CTAs; else that many (tests: the same bits) */
  int32_t variant;       /* 0: the planner's pick for pv; i >= 1: mlops_fbla_decode_variants() entry i - 1, whose
                            .pv must equal pv (every variant of a form gives that form's bits) */
  int32_t pv;            /* MLOPS_FBLA_PV_DIGITS (0) or MLOPS_FBLA_PV_CHAINS (1) */
} mlops_fbla_decode_args;

/* The decode kernel layouts as data (docs/attention.md, "Decode variants"). */
typedef struct mlops_fbla_decode_variant {
  const char* name;
  int32_t min_sm; /* major * 10 + minor */
  int32_t pv;     /* the P V form it computes: MLOPS_FBLA_PV_DIGITS or MLOPS_FBLA_PV_CHAINS */
} mlops_fbla_decode_variant;

/* Fills out[0 .. min(n, capacity)) and returns n, the number of variants. */
int32_t mlops_fbla_decode_variants(mlops_fbla_decode_variant* out, int32_t capacity);

/* The 0-based index of the variant that mlops_fbla_decode_args.variant = 0 runs (the planner's pick) for
 * pv = MLOPS_FBLA_PV_DIGITS: mma_pv+coarse_imma on every device (below sm_80 its integer MMA runs by shuffles
 * and DP4A; it needs 16-byte aligned sink / tail rows); with args.ctas = 0, where mma_pv+coarse_imma's resident CTAs
 * would take the refine's work items in more than one round, mma_pv4r+coarse_imma's refine runs instead (the same
 * bits): on every device where its CTAs (4 an SM) take them in one round, on sm_90 also with more rounds; on sm_90
 * it runs within mma_pv's one round too (GPU run 80), so there the planner's refine is always mma_pv4r's. */
int32_t mlops_fbla_decode_planner_variant(void);
/* ... for either form: for MLOPS_FBLA_PV_CHAINS, the pick on an sm_80+ device with 16-byte aligned sink / tail
 * rows; below sm_80 variant 0 runs warps+coarse_warps, with unaligned rows items+combine_warps (the same bits
 * whichever runs). -1 for another pv. */
int32_t mlops_fbla_decode_planner_variant_for(int32_t pv);

/* Decode scratch: needs no initial contents; size depends on batch, q_heads, head_dim and
 * capacity only (not on lengths), so one allocation serves every step of a CUDA graph. */
size_t mlops_fbla_decode_scratch_bytes(const mlops_fbla_cache* cache, int32_t q_heads);

/* One query token a sequence against its cache->lengths[b] tokens, read in device memory when the
 * kernels run (decode_at: one captured CUDA graph replays it as appends grow the cache; a length of
 * 0 gives out = 0). The coarse pass scores every closed
 * group from the coarse region; the refine pass scores with all six bits only the blocks whose
 * upper bound is within gap of the running max (all of them when exact); a combine kernel merges
 * the partials in a fixed order. */
mlops_status mlops_fbla_decode(const mlops_fbla_cache* cache, const mlops_fbla_decode_args* args, void* scratch,
                               size_t scratch_bytes, void* stream);
mlops_status mlops_fbla_decode_host(const mlops_fbla_cache* cache, const mlops_fbla_decode_args* args,
                                    void* scratch, size_t scratch_bytes);

/* Bytes of a closed group's record for head_dim (64 or 128; 0 otherwise). */
int64_t mlops_fbla_record_bytes(int32_t head_dim);

/* Only validates (what every call does first). */
mlops_status mlops_fbla_check_cache(const mlops_fbla_cache* cache);

/* The message of the last failed call on this thread ("" if none). */
const char* mlops_fbla_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
