// The validated call, flattened for the kernels and the host emulation alike.
#pragma once
#include "mlops/rope.cuh"

namespace mlops::rope {

struct Side {
  const void* x;
  void* out;
  long long heads;
  long long bs, ss, hs;    // x strides (elements)
  long long obs, oss, ohs; // out strides
};

struct Params {
  long long batch, seq, tokens;
  int head_dim, rotary_dim, half;
  Side q, k;
  int heads;               // q.heads + k.heads
  const void* pos;
  int pos64;
  long long pos_row_stride;
  int mrope, s0, s1;       // mrope sections 0 and 1 (section 2 is the rest)
  const float* cache;
  long long max_pos;
  const float* inv_freq;
  float scaling;
  int* flag;
  int tpc;                 // tokens per CTA (grid.x covers the tokens)
  int hpc;                 // heads per CTA (grid.y covers q heads then k heads)
  int tail;                // 1: some output is out of place and rotary_dim < head_dim: copy the tail
  int grid_x;              // CTAs along x: the token blocks
  int dec_cph, dec_lg;     // the dec kernels (dec_grid): chunks a head, its log2 if a power of two (else -1)
};

// Position of token t in row r (mrope rows 0..2), read as int64.
template <class P>
MLOPS_ROPE_HD long long load_pos(const Params& p, int row, long long t) {
  return static_cast<long long>(static_cast<const P*>(p.pos)[row * p.pos_row_stride + t]);
}

MLOPS_ROPE_HD long long position(const Params& p, int row, long long t) {
  return p.pos64 ? load_pos<long long>(p, row, t) : load_pos<int>(p, row, t);
}

MLOPS_ROPE_HD bool pos_in_range(const Params& p, long long pos) { return pos >= 0 && pos < p.max_pos; }

// The position row frequency i reads (mrope: its section's row).
MLOPS_ROPE_HD int freq_row(const Params& p, int i) { return p.mrope ? mrope_row(i, p.s0, p.s1) : 0; }

// Whether position row `row` is read by any frequency (mrope: an empty section's row is not).
MLOPS_ROPE_HD bool row_used(const Params& p, int row) {
  return !p.mrope || (row == 0 ? p.s0 : (row == 1 ? p.s1 : p.half - p.s0 - p.s1)) != 0;
}

// cos / sin of frequency i at an in-range position into cs[i], cs[half + i].
MLOPS_ROPE_HD void freq_at(const Params& p, long long pos, int i, float* cs) {
  float c, s;
  if (p.cache) {
    c = p.cache[pos * (2 * p.half) + i];
    s = p.cache[pos * (2 * p.half) + p.half + i];
  } else {
    cos_sin(pos, p.inv_freq[i], p.scaling, &c, &s);
  }
  cs[i] = c;
  cs[p.half + i] = s;
}

// cos / sin of frequency i for token t into cs[i], cs[half + i]; false if the position is out of range.
MLOPS_ROPE_HD bool token_freq(const Params& p, long long t, int i, float* cs) {
  const long long pos = position(p, freq_row(p, i), t);
  if (!pos_in_range(p, pos)) return false;
  freq_at(p, pos, i, cs);
  return true;
}

// Whether token t's positions are all in range: the rows its frequencies read, so the same verdict
// as token_freq over every frequency.
MLOPS_ROPE_HD bool token_in_range(const Params& p, long long t) {
  for (int row = 0; row < (p.mrope ? 3 : 1); ++row)
    if (row_used(p, row) && !pos_in_range(p, position(p, row, t))) return false;
  return true;
}

}  // namespace mlops::rope
