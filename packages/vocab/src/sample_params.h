// What the sampler kernels and their host emulation read of a call (a flat copy of
// mlops_sample_args), and the per-row arithmetic both sides share.
#pragma once
#include <cuda_runtime_api.h>

#include "vocab_math.h"

namespace mlops::vocab {

struct SampleParams {
  int64_t rows, vocab;
  float* logits; int64_t logits_stride;
  const mlops_sample_config* configs;
  const uint64_t* seeds;
  int64_t* steps;
  const int32_t* history; int64_t history_stride; const int32_t* history_len;
  int32_t* penalty_counts;
  int32_t* tokens;
  float* logprobs;
  int32_t* flags;
  const uint64_t* stats_best;
  const uint32_t* stats_key_hist;
  // The split variant: its workspace, and how many chunks (CTAs) a row is cut into.
  struct SplitRow* split;
  int chunks;
};

// The split variant's per-row workspace. Phase A (chunk CTAs) fills best / flags / hist with
// order-free integer atomics over the penalized row, the same values pass 1 computes; phase A2
// does the same for top-p's first level (mass and count of each key byte, the total) on rows
// without top-k; phase B (one CTA a row) selects and, when the kept set did not fit in shared
// memory, leaves the draw to phases C (chunk sums of kept weights) and D (the chunk holding the
// target is walked).
constexpr int kSplitMaxChunks = 64;
struct SplitRow {
  uint64_t best;
  int32_t flags;
  uint32_t tau;        // phase B's threshold for a deferred draw
  int32_t deferred;    // 1: phases C and D draw this row
  int32_t mass_ready;  // 1: phase A2 filled pmass / pcnt / ptotal
  uint32_t hist[256];
  uint64_t sum[kSplitMaxChunks];
  uint64_t pmass[256];
  uint32_t pcnt[256];
  uint64_t ptotal;
};

SampleParams make_sample_params(const mlops_sample_args& a);

// Configurations live on the device, so the kernels cannot trust them: out-of-range values
// become "off" (the host API rejects them before a launch when it can see them).
MLOPS_HD mlops_sample_config sanitize(mlops_sample_config c) {
  if (!(c.temperature > 0.0f) || c.temperature > 3.0e38f) c.temperature = 0.0f;
  if (c.top_k < 0) c.top_k = 0;
  if (!(c.top_p > 0.0f && c.top_p <= 1.0f)) c.top_p = 1.0f;
  if (!(c.min_p >= 0.0f && c.min_p <= 1.0f)) c.min_p = 0.0f;
  if (!(c.repetition_penalty > 0.0f) || c.repetition_penalty > 3.0e38f) c.repetition_penalty = 1.0f;
  if (!(c.presence_penalty == c.presence_penalty)) c.presence_penalty = 0.0f;
  if (!(c.frequency_penalty == c.frequency_penalty)) c.frequency_penalty = 0.0f;
  return c;
}

// The float whose key this is (the inverse of key_of).
MLOPS_HD float float_of_key(uint32_t k) { return bits_f32((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k); }
// The lowest float a listing by `x >= float_of_bound(lo)` takes for a key bound lo: -inf for lo at or below -inf's
// key (float_of_key would give a NaN there, which no x reaches), else float_of_key(lo). Exact against key_of(x) >= lo
// for every non-NaN x and every bin boundary but +0.0's key (the runner's check_key_float_compare).
MLOPS_HD float float_of_bound(uint32_t lo) { return lo <= kKeyNegInf ? -bits_f32(0x7f800000u) : float_of_key(lo); }

MLOPS_HD int64_t history_length(const SampleParams& p, int64_t row) {
  if (!p.history) return 0;
  int64_t n = p.history_len ? p.history_len[row] : 0;
  if (n < 0) n = 0;
  if (n > p.history_stride) n = p.history_stride;
  return n;
}

// Whether a row's max comes from the LM head's statistics: given, and no penalty changes the row.
MLOPS_HD bool row_uses_stats(const SampleParams& p, int64_t row, const mlops_sample_config& c) {
  if (p.split) return true;  // phase A measured the row after the penalties
  return p.stats_best && !(history_length(p, row) > 0 && config_has_penalty(c));
}

// The flags of a row whose max is known only as (key, index): what the max key says.
MLOPS_HD int flags_from_best(uint64_t best) {
  const uint32_t k = best_key(best);
  int f = 0;
  if (k > kKeyPosInf) f |= MLOPS_SAMPLE_FLAG_NAN;
  if (k == kKeyPosInf) f |= MLOPS_SAMPLE_FLAG_POSINF;
  if (best == 0 || k <= kKeyNegInf) f |= MLOPS_SAMPLE_FLAG_NO_FINITE;
  return f;
}

void sample_host(const SampleParams& p);
uint64_t sample_row_weights_host(const float* z, int64_t V, const mlops_sample_config& cfg, uint32_t* weights);
cudaError_t sample_launch(const SampleParams& p, int threads, void* stream);
cudaError_t sample_launch_split(const SampleParams& p, int threads, void* stream);
// staged: 0 the slice read from global memory, 1 staged in shared memory, 2 staged with the
// top-p rounds' early stop (the *_es variants), 3 staged with the lean draw (the *_lean variants),
// 4 the lean form whose later rounds run on the gathered candidates (the *_gather variants), 5 the
// gather form that gathers again after the second round when the first's did not fit (*_late)
cudaError_t sample_launch_cluster(const SampleParams& p, int cluster, int staged, int threads, void* stream);
int sample_cluster_code_arch(int cluster);
bool sample_cluster16_ok();
bool sample_cluster_staged_ok(int cluster, int threads, int64_t vocab, int staged);

}  // namespace mlops::vocab
