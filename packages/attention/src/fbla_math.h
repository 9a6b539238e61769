// The arithmetic of FBLA that runs both in the kernels and in the host emulation (MLOPS_HD):
// one piece of code, the same bits. Device code is built with -fmad=false and host code with
// -ffp-contract=off (cmake/mlops.cmake), so a*b+c is fused only where written as fmaf; division
// is IEEE on both sides (nvcc's default -prec-div=true), and the refine's digits need none (digit_scale).
#pragma once
#include "mlops/common/exp.h"
#include "mlops/common/hd.h"
#include "mlops/common/round.h"
#include "mlops/fbla.h"

namespace mlops::fbla {

constexpr int kGroup = MLOPS_FBLA_GROUP;           // tokens a group
constexpr int kBlock = MLOPS_FBLA_BLOCK;           // tokens a refine block
constexpr int kBlocksPerGroup = kGroup / kBlock;   // 8
constexpr int kChunkGroups = MLOPS_FBLA_CHUNK_GROUPS;
constexpr int kChunkTokens = kChunkGroups * kGroup;  // 256
constexpr int kLevels = 63;                        // 6-bit codes 0 .. 63
constexpr int kHeadBatch = 8;                      // q heads a decode pass holds at once (no effect on results)

constexpr int kScaleBytes = 2;  // a record's k_min / k_scale / v_min / v_scale values: bf16 (record version 4)

struct Layout {
  int D, cb, fb;
  int64_t kmin, kscale, vmin, vscale, kc, kf, v, bytes;  // byte offsets in a record, its size
  int64_t row;                                           // D / 8: bytes of one bit of every channel (region sizes)
};

MLOPS_HD constexpr Layout layout(int D, int mode) {  // (constexpr: stage_group_bytes derives from it)
  Layout l{};
  l.D = D;
  l.cb = mode == MLOPS_FBLA_4_2 ? 4 : 3;
  l.fb = 6 - l.cb;
  l.row = D / 8;
  l.kmin = 0;  // record version 4: the four scale arrays bf16 (kScaleBytes each value; version 3 held fp32)
  l.kscale = kScaleBytes * int64_t(D);
  l.vmin = 2 * kScaleBytes * int64_t(D);
  l.vscale = l.vmin + kScaleBytes * kGroup;
  l.kc = l.vscale + kScaleBytes * kGroup;
  l.kf = l.kc + int64_t(kGroup) * l.cb * l.row;
  l.v = l.kf + int64_t(kGroup) * l.fb * l.row;
  l.bytes = l.v + int64_t(kGroup) * 6 * l.row;
  return l;
}

// ---- quantization (the encoder) -------------------------------------------------------------
// min / max in a fixed order (the caller's loop order): comparisons, exact.
MLOPS_HD void minmax_step(float x, float& mn, float& mx) {
  mn = x < mn ? x : mn;
  mx = x > mx ? x : mx;
}

// Record version 4 stores the four scale arrays as bf16 (version 3: fp32; 1,024 of a D 128 record's 26,624 bytes fewer,
// the decode's bytes 3.8 % fewer). The min of bf16 inputs is one of them, so its bf16 is the same value (`min_bits`:
// the float's top half, exact). The scale (max - min) / 63 is rounded up to bf16 (`bf16_up`: less than 2^-7 above; the
// codes are then picked against the stored scale, so every value is within half a stored step of its code's value and
// the top one within the 63 steps), a step less than 0.8 % coarser than fp32's (0.3 % on average).
MLOPS_HD uint16_t min_bits(float mn) { return uint16_t(f32_bits(mn) >> 16); }  // mn: a bf16 input's value (exact)

// x rounded toward +inf to bf16, for x >= 0 (a scale), +inf and NaN (kept: NaN stays a NaN, as quant_range's inputs
// give). Integer code, the same bits on the host and every arch.
MLOPS_HD uint16_t bf16_up(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN: a quiet NaN
  return uint16_t((u >> 16) + ((u & 0xffffu) != 0u ? 1u : 0u));             // >= 0: up (to +inf past the largest)
}

// scale: (max - min) / 63 rounded up to bf16 (stored); inv = 1 / scale (used to pick codes); 0 for a zero scale.
MLOPS_HD void quant_range(float mn, float mx, uint16_t& scale, float& inv) {
  scale = bf16_up((mx - mn) / float(kLevels));
  const float s = bf16_to_f32(scale);
  inv = s > 0.0f ? 1.0f / s : 0.0f;
}

// One row of a group's quantization (K: a channel over the group's 128 tokens; V: a token over its D channels): the
// min / max of x(0) .. x(n - 1) (bf16 bits; minmax_step in index order), the row's stored bf16 min and scale
// (quant_range), and mn / inv for its codes (quant_code). The encoders' one definition: the GPU close_kernel and the
// host close_group, each for K and V (four copies of these lines until session 35).
template <class X>
MLOPS_HD void quant_row(const X& x, int n, uint16_t& min_out, uint16_t& scale_out, float& mn, float& inv) {
  mn = bf16_to_f32(x(0));
  float mx = mn;
  for (int i = 1; i < n; ++i) minmax_step(bf16_to_f32(x(i)), mn, mx);
  uint16_t scale;
  quant_range(mn, mx, scale, inv);
  min_out = min_bits(mn);
  scale_out = scale;
}

// A record's scale array (k_min / k_scale / v_min / v_scale at byte offset off) read as floats: v[i] is value i's bf16,
// exact as a float (a global or a staged shared-memory record alike).
struct RecVals {
  const uint16_t* p;
  MLOPS_HD RecVals(const uint8_t* rec, int64_t off) : p(reinterpret_cast<const uint16_t*>(rec + off)) {}
  MLOPS_HD float operator[](int i) const { return bf16_to_f32(p[i]); }
};

MLOPS_HD int quant_code(float x, float mn, float inv) {
  float r = rint_even((x - mn) * inv);
  r = r < 0.0f ? 0.0f : (r > float(kLevels) ? float(kLevels) : r);
  return int(r);
}

MLOPS_HD float dequant(float mn, float scale, int code) { return mn + scale * float(code); }

// ---- the V codes' order in a record: fragment-ordered (FO, since session 21) -------------------
// V codes are whole 6-bit codes in the bytes of the refine's P V MMA A fragments (mma.m16n8k32 s8: lane
// L = 4 gid + tig; register j, byte i holds row gid + 8 (j & 1), k 16 (j >> 1) + 4 tig + i), with row = channel
// and k = token: slice sl (tokens 32 sl ..), tile T (channels 16 T ..), register j, byte i of lane L is
//   V code of token 32 sl + 16 (j >> 1) + 4 tig + i, channel 16 T + gid + 8 (j & 1).
// A tile's 4 registers (16 codes, 96 bits) are 3 words: word v (0, 1, 2) byte i = register v's byte-i code in
// bits 0 - 5 and bits 2v, 2v + 1 of register 3's byte-i code in bits 6 - 7. Lane L's 3 D / 16 words of a slice
// (word 3 T + v) are 3 D / 64 uint4s laid out [slice][uint4 q][lane]: a warp's load of one q is 512 contiguous
// bytes, and 4 consecutive tokens of one channel share a word. Why: a tile is then 3 loads' worth and 6 ALU
// instructions (fo_v_tile), where the bit planes took ~45 a tile (docs/attention.md "The V codes").
MLOPS_HD constexpr int fo_v_slice_words(int D) { return 6 * D; }  // 32 tokens x D codes x 6 bits / 32

// The uint32 index, in the V region, of word v of tile T of lane L in slice sl.
MLOPS_HD int fo_v_word(int D, int sl, int T, int v, int L) {
  const int w = 3 * T + v;
  return sl * fo_v_slice_words(D) + (w >> 2) * 128 + 4 * L + (w & 3);
}

// Word `idx` of a group's V region from the group's codes (codes[t * ld + d], 0 .. 63): the encoder's packing.
MLOPS_HD uint32_t fo_v_pack_word(const uint8_t* codes, int ld, int D, int idx) {
  const int sl = idx / fo_v_slice_words(D), rem = idx % fo_v_slice_words(D);
  const int L = (rem & 127) >> 2, w = 4 * (rem >> 7) + (rem & 3);
  const int T = w / 3, v = w % 3, gid = L >> 2, tig = L & 3;
  const uint8_t* rv = codes + (32 * sl + 16 * (v >> 1) + 4 * tig) * ld + 16 * T + gid + 8 * (v & 1);
  const uint8_t* r3 = codes + (32 * sl + 16 + 4 * tig) * ld + 16 * T + gid + 8;
  uint32_t word = 0;
  for (int i = 0; i < 4; ++i)
    word |= static_cast<uint32_t>(rv[i * ld] | (((r3[i * ld] >> (2 * v)) & 3) << 6)) << (8 * i);
  return word;
}

// A tile's 4 A registers from its 3 words (6 instructions: 4 LOP3, 2 shifts merged by the compiler).
MLOPS_HD void fo_v_tile(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t (&a)[4]) {
  constexpr uint32_t kTop = 0xC0C0C0C0u;
  a[0] = w0 & 0x3F3F3F3Fu;
  a[1] = w1 & 0x3F3F3F3Fu;
  a[2] = w2 & 0x3F3F3F3Fu;
  a[3] = ((((w0 & kTop) >> 2) | (w1 & kTop)) >> 2 | (w2 & kTop)) >> 2;  // bits 6, 7 of word v -> code bits 2v, 2v + 1
}

// The codes of channel d, tokens u0 .. u0 + 3 (u0 % 4 == 0: four consecutive tokens share their words): byte q =
// the code of token u0 + q (1 load, or 3 for a tile's register 3). The kernels' per-channel reader and the host's.
MLOPS_HD uint32_t fo_v_codes_of_channel(const uint32_t* words, int D, int u0, int d) {
  const int sl = u0 >> 5, tt = u0 & 31, L = 4 * (d & 7) + ((tt & 15) >> 2), T = d >> 4;
  const int j = 2 * (tt >> 4) + ((d >> 3) & 1);
  if (j < 3) return words[fo_v_word(D, sl, T, j, L)] & 0x3F3F3F3Fu;
  uint32_t a[4];
  fo_v_tile(words[fo_v_word(D, sl, T, 0, L)], words[fo_v_word(D, sl, T, 1, L)], words[fo_v_word(D, sl, T, 2, L)], a);
  return a[3];
}

// ---- the K codes' order in a record: fragment-ordered (FO, since session 26) -------------------
// K keeps its coarse / fine split (the coarse pass reads the coarse region alone): the coarse region holds each code's
// top cb bits (code >> fb), the fine region its low fb bits, each as fields of the refine's score MMA A fragments
// (mma.m16n8k32 s8; lane L = 4 gid + tig; rows = tokens, k = channels in the q digits' perm_channel order). Block b
// (tokens 16 b ..), lane L, register n = 4 s + a (k-step s < S = D / 32, a = 0 .. 3: the fragment's a0 .. a3), byte i:
//   token 16 b + gid + 8 (a & 1), channel 32 w + 8 i + k0 + 2 s + (a >> 1), with w = (2 S tig) / 8, k0 = (2 S tig) % 8
// (the channels of code word 2 S tig + 2 s + (a >> 1) in perm_channel order: the order the bit planes' gathers made
// until session 25, so the q digits and the MMAs' B fragments did not change). A lane's 4 S fields of one block are
// fo_k_lane_words(D, bits) little-endian words (byte i of each holds byte i of its registers' fields):
//   4 bits: word v holds field 2 v in bits 0 - 3, field 2 v + 1 in bits 4 - 7;
//   2 bits: word v holds field 4 v + u in bits 2 u, 2 u + 1 (u = 0 .. 3);
//   3 bits: words 3 h + v (h = 0 .. S / 2 - 1 halves of 8 fields, R = 8 h, v = 0 .. 2) hold field R + 2 v in bits
//   0 - 2, field R + 2 v + 1 in bits 3 - 5; bits 6, 7 hold field R + 6's bits 0, 1 (v = 0), its bit 2 and field
//   R + 7's bit 0 (v = 1), field R + 7's bits 1, 2 (v = 2).
// The words are laid out block by block, a block's in parts of 4, then 2, then 1 words a lane ([part][lane][word]):
// every load of a warp is lane-contiguous (LDS.128 / LDS.64 / LDS.32, no bank conflicts). Why: a 16-token block's A
// registers are 2 or 3 vector loads and ~2 ALU instructions a register, where the bit planes took 12 scalar loads a
// block and ~7 a register (docs/attention.md "The K codes").
MLOPS_HD constexpr int fo_k_lane_words(int D, int bits) { return D * bits / 64; }

// The uint32 index, in a K field region (coarse: bits = cb; fine: bits = fb), of word v of lane L in block b.
MLOPS_HD int fo_k_word(int D, int bits, int b, int L, int v) {
  const int nw = fo_k_lane_words(D, bits), n4 = nw & ~3, n2 = (nw - n4) & ~1;
  const int ps = v < n4 ? (v & ~3) : (v < n4 + n2 ? n4 : n4 + n2);  // the part's first word and its size
  const int psz = v < n4 ? 4 : (v < n4 + n2 ? 2 : 1);
  return b * 32 * nw + 32 * ps + L * psz + (v - ps);
}

// Lane L's fo_k_lane_words(D, bits) words of block b of a K field region, in order (the scalar loads of the host's
// and the chains forms' readers; the MMA kernels' vector loads: fo_k_block_regs).
MLOPS_HD void fo_k_lane_load(const uint32_t* region, int D, int bits, int b, int L, uint32_t (&w)[8]) {
  for (int v = 0; v < fo_k_lane_words(D, bits); ++v) w[v] = region[fo_k_word(D, bits, b, L, v)];
}

// Field register n (byte i = that field of byte i) from a lane's words of one block (w[v], v < fo_k_lane_words).
template <int bits>
MLOPS_HD uint32_t fo_k_field(const uint32_t* w, int n) {
  static_assert(bits == 2 || bits == 3 || bits == 4, "cb / fb are 2, 3 or 4");
  if (bits == 4) return (w[n >> 1] >> (4 * (n & 1))) & 0x0F0F0F0Fu;
  if (bits == 2) return (w[n >> 2] >> (2 * (n & 3))) & 0x03030303u;
  const uint32_t* h = w + 3 * (n >> 3);
  const int r = n & 7;
  if (r < 6) return (h[r >> 1] >> (3 * (r & 1))) & 0x07070707u;
  if (r == 6) return ((h[0] >> 6) & 0x03030303u) | ((h[1] >> 4) & 0x04040404u);
  return ((h[1] >> 7) & 0x01010101u) | ((h[2] >> 5) & 0x06060606u);
}

// fo_k_field<3> for the refine's score MMAs (fo_k_block_dots<D, 3>), the odd registers (n & 1: token gid + 8) as 8 x
// their field: those fields sit at bits 3 - 5 of their bytes (r = 1, 3, 5 above), so h & 0x38383838 is 8 x the field
// in one instruction instead of a shift and a mask (session 30); field 7 (its bits in h[1] and h[2]) shifted into bits
// 3 - 5. The even registers as fo_k_field<3>. 8 x 7 = 56: still an s8 operand.
MLOPS_HD uint32_t fo_k_field3_x8odd(const uint32_t* w, int n) {
  if ((n & 1) == 0) return fo_k_field<3>(w, n);
  const uint32_t* h = w + 3 * (n >> 3);
  const int r = n & 7;
  if (r < 6) return h[r >> 1] & 0x38383838u;
  return ((h[1] >> 4) & 0x08080808u) | ((h[2] >> 2) & 0x30303030u);
}

// The same for mode 4+2 (fo_k_block_dots<D, 4>): the odd registers of the 4-bit coarse fields as 16 x their field
// (bits 4 - 7: w & 0xF0F0F0F0, up to 240: a u8 operand) and of the 2-bit fine fields as 4 x theirs (u = 1: bits 2 - 3,
// one mask; u = 3: bits 6 - 7, a shift by 4 and a mask, as before).
MLOPS_HD uint32_t fo_k_field4_x16odd(const uint32_t* w, int n) {
  return (n & 1) == 0 ? fo_k_field<4>(w, n) : w[n >> 1] & 0xF0F0F0F0u;
}
MLOPS_HD uint32_t fo_k_field2_x4odd(const uint32_t* w, int n) {
  if ((n & 1) == 0) return fo_k_field<2>(w, n);
  return (n & 2) == 0 ? w[n >> 2] & 0x0C0C0C0Cu : (w[n >> 2] >> 4) & 0x0C0C0C0Cu;
}

// fo_k_field with the field width a run-time value (host readers and the chains forms' per-token reads).
MLOPS_HD uint32_t fo_k_field_n(const uint32_t* w, int bits, int n) {
  return bits == 4 ? fo_k_field<4>(w, n) : (bits == 3 ? fo_k_field<3>(w, n) : fo_k_field<2>(w, n));
}

// Word v of a lane's block from the lane's 4 S field registers (f[n], byte i = the field of byte i): the packing.
MLOPS_HD uint32_t fo_k_pack(const uint32_t* f, int bits, int v) {
  if (bits == 4) return f[2 * v] | (f[2 * v + 1] << 4);
  if (bits == 2) return f[4 * v] | (f[4 * v + 1] << 2) | (f[4 * v + 2] << 4) | (f[4 * v + 3] << 6);
  const uint32_t* r = f + 8 * (v / 3);
  const int u = v % 3;
  const uint32_t top = u == 0 ? (r[6] & 0x03030303u) << 6
                              : (u == 1 ? ((r[6] & 0x04040404u) << 4) | ((r[7] & 0x01010101u) << 7)
                                        : (r[7] & 0x06060606u) << 5);
  return r[2 * u] | (r[2 * u + 1] << 3) | top;
}

// The (token, channel) of byte i of field register n of lane L in block b (the map above).
MLOPS_HD int fo_k_token(int b, int L, int n) { return 16 * b + (L >> 2) + 8 * (n & 1); }
MLOPS_HD int fo_k_channel(int D, int L, int n, int i) {
  const int cw0 = (D / 16) * (L & 3);  // 2 S tig
  return 32 * (cw0 >> 3) + 8 * i + (cw0 & 7) + 2 * (n >> 2) + ((n >> 1) & 1);
}

// Word `idx` of a K field region from the group's codes (codes[t * ld + d], 0 .. 63): the field (code >> shift) &
// mask of each byte (coarse: shift fb, mask 2^cb - 1; fine: 0, 2^fb - 1). The encoder's packing.
MLOPS_HD uint32_t fo_k_pack_word(const uint8_t* codes, int ld, int D, int bits, int shift, int idx) {
  const int nw = fo_k_lane_words(D, bits), n4 = nw & ~3, n2 = (nw - n4) & ~1;
  const int b = idx / (32 * nw), rem = idx % (32 * nw);
  // rem's part: parts of 4 words a lane (128 words each), then one of 2 (64), then one of 1 (32)
  const int ps = rem < 32 * n4 ? 4 * (rem / 128) : (rem < 32 * (n4 + n2) ? n4 : n4 + n2);
  const int psz = rem < 32 * n4 ? 4 : (rem < 32 * (n4 + n2) ? 2 : 1);
  const int L = (rem - 32 * ps) / psz, v = ps + (rem - 32 * ps) % psz;
  const int mask = (1 << bits) - 1;
  uint32_t f[16];  // the registers word v packs: n0 .. n0 + nn - 1 (fo_k_pack reads no others)
  const int n0 = bits == 4 ? 2 * v : (bits == 2 ? 4 * v : 8 * (v / 3));
  const int nn = bits == 4 ? 2 : (bits == 2 ? 4 : 8);
  for (int n = n0; n < n0 + nn; ++n) {
    f[n] = 0;
    for (int i = 0; i < 4; ++i)
      f[n] |= static_cast<uint32_t>((codes[fo_k_token(b, L, n) * ld + fo_k_channel(D, L, n, i)] >> shift) & mask)
              << (8 * i);
  }
  return fo_k_pack(f, bits, v);
}

// The words of a group's two K regions together (coarse, then fine right after it: 16 cb D + 16 fb D bytes = 24 D words
// in either mode), and word `idx` of them from the codes: the encoder's loop on the device and on the host.
MLOPS_HD constexpr int fo_k_regions_words(int D) { return 24 * D; }
MLOPS_HD uint32_t fo_k_pack_regions_word(const uint8_t* codes, int ld, int D, int cb, int idx) {
  const int nc = kBlocksPerGroup * 32 * fo_k_lane_words(D, cb), fb = 6 - cb;
  return idx < nc ? fo_k_pack_word(codes, ld, D, cb, fb, idx) : fo_k_pack_word(codes, ld, D, fb, 0, idx - nc);
}

// Token t's codes in perm_channel order (c4[cw] byte i = channel 32 (cw >> 3) + 8 i + (cw & 7)), read from a group's K
// regions (kc, kf: uint32 words); coarse_only: code >> fb. A lane's words are read once for its 2 S code words (the
// chains forms' per-token reader and the host's).
template <int D>
MLOPS_HD void fo_k_token_words(const uint32_t* kc, const uint32_t* kf, int cb, int t, bool coarse_only,
                               uint32_t (&c4)[D / 4]) {
  constexpr int S = D / 32;
  const int fb = 6 - cb, b = t >> 4, r = (t >> 3) & 1;
  for (int tig = 0; tig < 4; ++tig) {
    const int L = 4 * (t & 7) + tig;
    uint32_t wc[8], wf[8];
    fo_k_lane_load(kc, D, cb, b, L, wc);
    if (!coarse_only) fo_k_lane_load(kf, D, fb, b, L, wf);
    for (int rem = 0; rem < 2 * S; ++rem) {  // code word 2 S tig + rem: k-step rem / 2, k-half rem % 2
      const int n = 4 * (rem >> 1) + 2 * (rem & 1) + r;
      const uint32_t c = fo_k_field_n(wc, cb, n);
      c4[2 * S * tig + rem] = coarse_only ? c : (c << fb) | fo_k_field_n(wf, fb, n);
    }
  }
}

// The K code of (token t, channel d) (host readers, tests; one field register's words read).
MLOPS_HD int fo_k_code(const uint32_t* kc, const uint32_t* kf, int D, int cb, int t, int d) {
  const int S = D / 32, cw = 8 * (d >> 5) + (d & 7), i = (d >> 3) & 3, fb = 6 - cb;
  const int tig = cw / (2 * S), rem = cw % (2 * S), b = t >> 4, L = 4 * (t & 7) + tig;
  const int n = 4 * (rem >> 1) + 2 * (rem & 1) + ((t >> 3) & 1);
  uint32_t wc[8], wf[8];
  fo_k_lane_load(kc, D, cb, b, L, wc);
  fo_k_lane_load(kf, D, fb, b, L, wf);
  const uint32_t c = (fo_k_field_n(wc, cb, n) << fb) | fo_k_field_n(wf, fb, n);
  return (c >> (8 * i)) & 63;
}

// The V code of (token t, channel d) from a group's V region (words: uint32, little-endian).
MLOPS_HD int fo_v_code(const uint32_t* words, int D, int t, int d) {
  return (fo_v_codes_of_channel(words, D, t & ~3, d) >> (8 * (t & 3))) & 63;
}

// ---- the query against a closed group ------------------------------------------------------
// K of a group is k[t][d] = k_min[d] + k_scale[d] * code[t][d], so
//   q . k[t] = sum_d q_d k_min[d] + sum_d (q_d k_scale[d]) code[t][d].
// w_d = q_d * k_scale[d] is quantized per (head, group) to a 15-bit integer N_d = rint(w_d * S) held as two int8
// digits, N_d = 256 hi + lo (digits_of), with S = c 2^k, c in {1.5, 1, 0.75}, chosen from amax = max_d |w_d|
// (digit_scale) so that amax * S lies in [21759.6, 32639.5): |N_d| <= 32639 = 127 * 256 + 127, and w_d ~ s_w * N_d with
// s_w = RN(1 / S) (exact for c = 1). The relative error is at most 2^-15 / 0.67 of amax (the old 32512 / amax scale:
// 2^-16), against one int8's 2^-8. Both digit dots are DP4A / IMMA (exact integers); the combined
// what . code = 256 (hi . code) + lo . code < 2^31, and
//   score[t] = (bias + s_w * float(what . code[t])) * scale.
// Until session 27 S was 32512 / amax (an IEEE division, and amax / 32512 another) and the digits two rint / clamp
// steps: ~25 instructions a (head, group) and a slice's P V weights more, in the issue-bound refine; S's three forms
// need no division (a power of two alone lost up to a bit: test_decode_against_float64's D 64 / G 4 case went from
// 4.0e-5 to 2.2e-4 of max|V|), and w * S rounds once, to N.
// A group whose largest |q_d k_scale_d| is at most 2^-96 gets S = 0 and s_w = 0: all digits 0, its score the bias term
// alone (off by < 2^-96 * 63 * D * scale). An inf amax gets S = 0 and s_w = inf (the score NaN, as before).
constexpr float kTinyWeight = 1.2621774483536189e-29f;  // 2^-96

struct DigitScale {
  float S;     // c 2^k, or 0
  float step;  // RN(1 / S); 0 (tiny amax), or amax itself (inf or NaN)
};

// amax = f 2^e (f in [1, 2), mantissa bits m): S = 1.5 2^(14 - e) where f 24576 <= 32639.49609375 (m <= 2752340: a
// float, so no |w| S rounds above it; at m = 2752341, f 24576 is a tie that can round to 32639.5), else 2^(14 - e)
// where f 16384 < 32639.5 (m < 0x7EFF00; w S exact), else 0.75 2^(14 - e); 1 / S is 2^(e - 14) times 2 / 3, 1 or 4 / 3
// (RN: 0x3F2AAAAB, exact, 0x3FAAAAAB). N = rint(fl(w S)): one rounding of the product where c is not 1, then rint.
// e >= -96 and e <= 127 keep S and 1 / S normal. Integer operations on amax's bits: no division.
MLOPS_HD DigitScale digit_scale(float amax) {
  // Selects, no branches: a P V slice's wmax differs between the warp's 4 heads (run 137: with the three forms as
  // branches the kEarly refine ran 5 us slower at B8 L128K than with a power of two alone).
  const uint32_t u = f32_bits(amax), be = u >> 23, m = u & 0x7fffffu;  // amax's biased exponent and mantissa
  const bool c15 = m <= 2752340u, c1 = m < 0x7eff00u;                  // c = 1.5; c = 1.5 or 1
  const bool half = c15 || !c1;                                         // c = 1.5 or 0.75: mantissa 1.5
  const uint32_t sb = ((268u - be - (c1 ? 0u : 1u)) << 23) | (half ? 0x400000u : 0u);
  const uint32_t tb = ((be - (c15 ? 15u : 14u)) << 23) | (half ? 0x2AAAABu : 0u);
  const bool ok = amax > kTinyWeight && u < 0x7f800000u;  // (be, m of a tiny amax, inf or NaN: not used)
  return DigitScale{ok ? bits_f32(sb) : 0.0f, ok ? bits_f32(tb) : (amax > kTinyWeight || amax != amax ? amax : 0.0f)};
}

// N = rint(x) for |x| <= 32639.5 or NaN (0), the GPU's cvt.rni (one F2I) and the host's rint.
MLOPS_HD int rint_small(float x) {
#if defined(__CUDA_ARCH__)
  return __float2int_rn(x);
#else
  return x == x ? int(__builtin_rintf(x)) : 0;
#endif
}

// The digits of w (|w| <= the amax S came from, or NaN): N = rint(fl(w S)) (|fl(w S)| <= 32639.5), hi =
// round(N / 256) (half up), lo = N - 256 hi, so hi in [-127, 127], lo in [-128, 127] and 256 hi + lo = N (lo is N's low
// byte as an int8: the kernels store it without computing it). S = 0 gives 0, 0.
MLOPS_HD void digits_of(float w, float S, int& hi, int& lo) {
  const int n = rint_small(w * S);
  hi = (n + 128) >> 8;
  lo = n - hi * 256;
}

MLOPS_HD float qhat_w(float qf, float kscale) { return qf * kscale; }

MLOPS_HD float score_of(float bias, float s_w, int32_t idot, float scale) {
  return (bias + s_w * float(idot)) * scale;
}

// With an integer 2x dot (the coarse centre and its bounds are half-integers), same rounding path:
// for i2 >= 2 * idot, score_half(i2) >= score_of(idot) (every step is monotone: s_w >= 0, scale > 0).
MLOPS_HD float score_half(float bias, float s_w, int32_t idot2, float scale) {
  return (bias + s_w * (0.5f * float(idot2))) * scale;
}

// The coarse code of channel d is cc = code >> fb; its centre (cc << fb) + (2^fb - 1) / 2. Twice the
// centre dot: (what . cc) << (fb + 1) + (2^fb - 1) * sum(what). The full code lies within
// (2^fb - 1) / 2 of the centre, so |2 what.code - centre2| <= (2^fb - 1) * sum|what| = err2.
MLOPS_HD int32_t coarse_dot2(int32_t cdot, int32_t wsum, int fb) {
  return cdot * (1 << (fb + 1)) + ((1 << fb) - 1) * wsum;
}

MLOPS_HD int32_t coarse_err2(int32_t wabs, int fb) { return ((1 << fb) - 1) * wabs; }

// ---- P V in the digits form (MLOPS_FBLA_PV_DIGITS) ------------------------------------------
// A chunk's tokens split into slices of 32 (4 a group). In a closed slice, the weight of token t for a head
// is w_t = p_t * v_scale[t] (>= 0); with wmax the slice's largest, w_t ~ s * N_t by the q-digit rule (digits_of with
// digit_scale(wmax): N_t = 256 hi_t + lo_t, s = 1 / S), so sum_t w_t code[t][d] ~ s * I[d] with
// I[d] = sum_t N_t code[t][d] an exact integer (|.| < 32639 * 63 * 32 < 2^26; the tensor
// core's s8 MMA gives it in any order), and the slice's P V is fmaf(s, float(I[d]), sum_t p_t v_min[t]).
// A slice whose wmax is at most 2^-96 weighs nothing (S 0, all digits 0).
constexpr int kSlice = 32;
constexpr int kSlicesPerGroup = kGroup / kSlice;  // 4
constexpr int kSlicesPerChunk = kChunkGroups * kSlicesPerGroup;  // 8

// fmax_step(m, s) where m is not NaN and neither is -0 (a slice's largest P V weight: m starts at +0, the weights are
// p * v_scale >= +0, inf or NaN): one max instruction instead of a compare and a select. fmax_step keeps m for a NaN s,
// and so does fmaxf; for equal m and s both give the one value (no -0 to tell apart).
MLOPS_HD float fmax_nonneg(float m, float s) { return fmaxf(m, s); }

// Attention's softmax exp: e^x for x <= 0 (s - m, m the max of the s; m_i - M in the combine), -inf or NaN, the same
// bits on the host and every GPU. exp_det's reduction and polynomial (common/exp.h) with a cheaper front and back
// (session 27; exp_det_le before it was exp_det's bits, ~24 instructions): n = rint(x / ln2) comes out of one fmaf
// with 1.5 * 2^23 (t's low mantissa bits are n; rounding the exact product, where exp_det rounds x / ln2 first), and
// 2^n is t's bits shifted into the exponent (one instruction) instead of a float -> int conversion and two scale
// factors. The price: x < -87 gives 0 (2^n stays normal, n >= -126), where exp_det gave the subnormal results down to
// x = -103.5; those weigh under 2^-125 of the largest token. NaN gives x, -inf 0. tests/c/exp_att_check.cpp checks
// every float x in [-87, 0] against the float64 exp (within 2 ulp) and the edge cases.
MLOPS_HD float exp_att(float x) {
  const bool in = x >= -87.0f;  // false: x < -87, -inf or NaN
  const float xc = in ? x : 0.0f;
  const float t = fmaf(xc, 1.44269504088896341f, 12582912.0f);  // 1.5 * 2^23 + n, exactly (|n| <= 126)
  const float p = exp_det_poly(xc, t - 12582912.0f);
  const float e = p * bits_f32((f32_bits(t) + 127u) << 23);  // t's bits are 0x4B400000 + n: (n + 127) << 23 mod 2^32
  return in ? e : (x == x ? 0.0f : x);
}

// ---- softmax pieces -----------------------------------------------------------------------
MLOPS_HD float neg_inf() { return bits_f32(0xff800000u); }

MLOPS_HD float fmax_step(float m, float s) { return s > m ? s : m; }

// A maximum of scores (a chunk's, a slice's, the partials' m in the combine): fmax_step's value wherever neither
// operand is NaN, as one max instruction (FMNMX) instead of fmax_step's compare and select (session 28: ~100 static
// SASS instructions fewer in the kEarly refine). Two differences, neither visible in an output: a zero maximum may
// carry the other sign (a maximum is read only as s - m or m_i - M, and exp_att(+0) = exp_att(-0) = 1, s - (+0) =
// s - (-0) for s != 0), and a NaN score is left out wherever it sits, where fmax_step drops it only as its second
// operand (the host's token order and the kernels' trees already give different maxima there: NaN scores have no bit
// contract).
MLOPS_HD float fmax_score(float m, float s) { return fmaxf(m, s); }

}  // namespace mlops::fbla
