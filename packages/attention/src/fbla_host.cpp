// The host emulation of FBLA: the encoder (append / encode) and the decode, the same arithmetic
// in the same order as the kernels in fbla_kernels.cuh (docs/attention.md, "Numerics"), so the
// records and the outputs are the same bits. Plain loops; slow, exact.
#include <cstring>
#include <vector>

#include "fbla_internal.h"
#include "mlops/common/fixed_sum.h"

namespace mlops::fbla {
namespace {

const uint16_t* row_of(const uint16_t* base, long long bs, long long hs, long long ts, int b, int h, long long t) {
  return base + b * bs + h * hs + t * ts;
}

// Quantizes 128 K rows and 128 V rows (bf16, rows[t] -> D values) into one record.
void close_group(const Layout& l, const uint16_t* const* krow, const uint16_t* const* vrow, uint8_t* rec) {
  const int D = l.D;
  std::memset(rec, 0, size_t(l.bytes));
  uint16_t* kmin = reinterpret_cast<uint16_t*>(rec + l.kmin);  // bf16 (record version 4: quant_range, min_bits)
  uint16_t* kscale = reinterpret_cast<uint16_t*>(rec + l.kscale);
  uint16_t* vmin = reinterpret_cast<uint16_t*>(rec + l.vmin);
  uint16_t* vscale = reinterpret_cast<uint16_t*>(rec + l.vscale);
  // K: per channel over the group's tokens, in token order; the codes then packed as fragment-ordered coarse and fine
  // fields (fo_k_pack_word)
  std::vector<uint8_t> kcodes(size_t(kGroup) * D);
  for (int d = 0; d < D; ++d) {
    float mn, inv;
    quant_row([&](int t) { return krow[t][d]; }, kGroup, kmin[d], kscale[d], mn, inv);
    for (int t = 0; t < kGroup; ++t) kcodes[size_t(t) * D + d] = uint8_t(quant_code(bf16_to_f32(krow[t][d]), mn, inv));
  }
  uint32_t* kw = reinterpret_cast<uint32_t*>(rec + l.kc);  // the fine region follows the coarse one
  for (int i = 0; i < fo_k_regions_words(D); ++i) kw[i] = fo_k_pack_regions_word(kcodes.data(), D, D, l.cb, i);
  // V: per token over its channels, in channel order; the codes then packed in fragment order (fo_v_pack_word)
  std::vector<uint8_t> vcodes(size_t(kGroup) * D);
  for (int t = 0; t < kGroup; ++t) {
    float mn, inv;
    quant_row([&](int d) { return vrow[t][d]; }, D, vmin[t], vscale[t], mn, inv);
    for (int d = 0; d < D; ++d) {
      vcodes[size_t(t) * D + d] = uint8_t(quant_code(bf16_to_f32(vrow[t][d]), mn, inv));
    }
  }
  uint32_t* vw = reinterpret_cast<uint32_t*>(rec + l.v);
  for (int i = 0; i < kSlicesPerGroup * fo_v_slice_words(D); ++i) vw[i] = fo_v_pack_word(vcodes.data(), D, D, i);
}

int k_code(const Layout& l, const uint8_t* rec, int t, int d) {
  return fo_k_code(reinterpret_cast<const uint32_t*>(rec + l.kc), reinterpret_cast<const uint32_t*>(rec + l.kf), l.D,
                   l.cb, t, d);
}

int v_code(const Layout& l, const uint8_t* rec, int t, int d) {
  return fo_v_code(reinterpret_cast<const uint32_t*>(rec + l.v), l.D, t, d);
}

// The query of one head against one closed group (kernels: one warp, lane l holds channels
// l*D/32 .. (l+1)*D/32 - 1; bias by the fixed_sum lane fold + butterfly).
struct QGroup {
  int what[128];
  int32_t wsum, wabs;
  float s_w, bias;
};

void qgroup(const Layout& l, const float* qf, const uint8_t* rec, QGroup& g) {
  const int D = l.D, per = D / 32;
  const RecVals kmin(rec, l.kmin);
  const RecVals kscale(rec, l.kscale);
  float amax = 0.0f;
  for (int d = 0; d < D; ++d) amax = fmax_step(amax, fabsf(qhat_w(qf[d], kscale[d])));
  const DigitScale ds = digit_scale(amax);
  g.s_w = ds.step;
  g.wsum = 0;
  g.wabs = 0;
  for (int d = 0; d < D; ++d) {
    int hi, lo;
    digits_of(qhat_w(qf[d], kscale[d]), ds.S, hi, lo);
    g.what[d] = hi * 256 + lo;
    g.wsum += g.what[d];
    g.wabs += g.what[d] < 0 ? -g.what[d] : g.what[d];
  }
  float lanes[32];
  for (int ln = 0; ln < 32; ++ln) {
    float s = 0.0f;
    for (int i = 0; i < per; ++i) s = fmaf(qf[ln * per + i], kmin[ln * per + i], s);
    lanes[ln] = s;
  }
  g.bias = host_butterfly32(lanes);
}

const uint8_t* record(const mlops_fbla_cache& c, int b, int h, int slot) {
  return c.records + ((int64_t(b) * c.kv_heads + h) * c.slots + slot) * c.record_bytes;
}

}  // namespace

void append_host(const AppendParams& p) {
  const mlops_fbla_cache& c = p.c;
  const mlops_fbla_kv& kv = p.kv;
  const Layout l = layout(c.head_dim, c.mode);
  const int D = c.head_dim;
  // all or nothing: refused if any sequence would pass capacity (the API reports it)
  for (int b = 0; b < c.batch; ++b) {
    const int n = kv.counts ? kv.counts[b] : kv.count;
    if (int64_t(c.lengths[b]) + n > c.capacity || n < 0 || n > kv.max_count) {
      c.flags[0] |= MLOPS_FBLA_FLAG_FULL;
      return;
    }
  }
  const size_t tile = size_t(kGroup) * D;
  for (int b = 0; b < c.batch; ++b) {
    const int L = c.lengths[b];
    const int n = kv.counts ? kv.counts[b] : kv.count;
    for (int h = 0; h < c.kv_heads; ++h) {
      uint16_t* tk = c.tail_k + (size_t(b) * c.kv_heads + h) * tile;
      uint16_t* tv = c.tail_v + (size_t(b) * c.kv_heads + h) * tile;
      uint16_t* sk = c.sink_k + (size_t(b) * c.kv_heads + h) * tile;
      uint16_t* sv = c.sink_v + (size_t(b) * c.kv_heads + h) * tile;
      // 1. close the groups this append fills (reads the tail before step 2 overwrites it)
      for (int g = L / kGroup > 1 ? L / kGroup : 1; int64_t(kGroup) * (g + 1) <= int64_t(L) + n; ++g) {
        const uint16_t* kr[kGroup];
        const uint16_t* vr[kGroup];
        for (int i = 0; i < kGroup; ++i) {
          const long long pos = int64_t(kGroup) * g + i;
          if (pos < L) {
            kr[i] = tk + size_t(i) * D;
            vr[i] = tv + size_t(i) * D;
          } else {
            kr[i] = row_of(kv.k, kv.batch_stride, kv.head_stride, kv.token_stride, b, h, pos - L);
            vr[i] = row_of(kv.v, kv.v_batch_stride, kv.v_head_stride, kv.v_token_stride, b, h, pos - L);
          }
        }
        close_group(l, kr, vr, const_cast<uint8_t*>(record(c, b, h, g - 1)));
      }
      // 2. store the tokens that land in the sink or in the group left filling
      const int64_t end = int64_t(L) + n, filling = (end / kGroup) * kGroup;
      for (int64_t pos = L; pos < end; ++pos) {
        const uint16_t* kin = row_of(kv.k, kv.batch_stride, kv.head_stride, kv.token_stride, b, h, pos - L);
        const uint16_t* vin = row_of(kv.v, kv.v_batch_stride, kv.v_head_stride, kv.v_token_stride, b, h, pos - L);
        if (pos < kGroup) {
          std::memcpy(sk + pos * D, kin, 2 * size_t(D));
          std::memcpy(sv + pos * D, vin, 2 * size_t(D));
        } else if (pos >= filling) {
          std::memcpy(tk + (pos % kGroup) * D, kin, 2 * size_t(D));
          std::memcpy(tv + (pos % kGroup) * D, vin, 2 * size_t(D));
        }
      }
    }
  }
  // 3. advance the lengths
  for (int b = 0; b < c.batch; ++b) c.lengths[b] += kv.counts ? kv.counts[b] : kv.count;
}

void decode_host(const DecodeParams& p) {
  const mlops_fbla_cache& c = p.c;
  const Layout l = layout(c.head_dim, c.mode);
  const int D = c.head_dim, Hq = p.Hq, Gq = p.Gq;
  const Scratch& s = p.s;
  const size_t tile = size_t(kGroup) * D;
  std::vector<float> qf(D), sc(kChunkTokens), pr(kChunkTokens);
  std::vector<unsigned char> refined(kChunkTokens / kBlock);
  std::vector<QGroup> qg(kChunkGroups);
  std::vector<float> val(D), acc(D);
  for (int b = 0; b < c.batch; ++b) {
    const int L = p.lengths[b];
    const int nq = closed_groups(L), nch = chunks_of(nq);
    for (int h = 0; h < Hq; ++h) {
      const int kh = h / Gq;
      const size_t row = size_t(b) * Hq + h;
      for (int d = 0; d < D; ++d) qf[d] = bf16_to_f32(p.q[b * p.qbs + h * p.qhs + d]);
      float* pm = s.pm + row * s.P;
      float* pl = s.pl + row * s.P;
      float* pacc = s.pacc + row * s.P * D;
      // ---- coarse pass (skip mode): a bound a block, the largest lower bound a chunk
      if (!p.exact) {
        for (int ch = 0; ch < nch; ++ch) {
          float lbm = neg_inf();
          for (int gi = 0; gi < kChunkGroups; ++gi) {
            const int slot = ch * kChunkGroups + gi;
            if (slot >= nq) break;
            const uint8_t* rec = record(c, b, kh, slot);
            QGroup& g = qg[0];
            qgroup(l, qf.data(), rec, g);
            const int32_t e2 = coarse_err2(g.wabs, l.fb);
            for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
              int32_t umax = 0;
              for (int i = 0; i < kBlock; ++i) {
                const int t = blk * kBlock + i;
                int32_t cdot = 0;
                for (int d = 0; d < D; ++d) cdot += g.what[d] * (k_code(l, rec, t, d) >> l.fb);
                const int32_t c2 = coarse_dot2(cdot, g.wsum, l.fb);
                umax = i == 0 || c2 > umax ? c2 : umax;
                lbm = fmax_step(lbm, score_half(g.bias, g.s_w, c2 - e2, p.scale));
              }
              s.ub[row * s.nblk + slot * kBlocksPerGroup + blk] = score_half(g.bias, g.s_w, umax + e2, p.scale);
            }
          }
          s.lbmax[row * s.nch + ch] = lbm;
        }
      }
      float M = neg_inf();
      if (!p.exact)
        for (int ch = 0; ch < nch; ++ch) M = fmax_step(M, s.lbmax[row * s.nch + ch]);
      const float thr = M - p.gap;

      // ---- the BF16 tokens (sink + filling group): partial 0
      {
        const int ns = sink_tokens(L), nt = tail_tokens(L);
        const uint16_t* kk[2] = {c.sink_k + (size_t(b) * c.kv_heads + kh) * tile,
                                 c.tail_k + (size_t(b) * c.kv_heads + kh) * tile};
        const uint16_t* vv[2] = {c.sink_v + (size_t(b) * c.kv_heads + kh) * tile,
                                 c.tail_v + (size_t(b) * c.kv_heads + kh) * tile};
        const int cnt[2] = {ns, nt};
        float m = neg_inf();
        for (int gi = 0; gi < 2; ++gi)
          for (int t = 0; t < cnt[gi]; ++t) {
            float dot = 0.0f;
            for (int d = 0; d < D; ++d) dot = fmaf(qf[d], bf16_to_f32(kk[gi][size_t(t) * D + d]), dot);
            sc[gi * kGroup + t] = dot * p.scale;
            m = fmax_step(m, sc[gi * kGroup + t]);
          }
        float lt = 0.0f;
        for (int d = 0; d < D; ++d) acc[d] = 0.0f;
        if (m != neg_inf() && p.pv == MLOPS_FBLA_PV_DIGITS) {  // slices of 32 tokens: chains in token order, then
          for (int sl = 0; sl < kSlicesPerChunk; ++sl) {       // the 8 slices' sums in slice order
            const int gi = sl / kSlicesPerGroup, t0 = kSlice * (sl % kSlicesPerGroup);
            const int t1 = cnt[gi] < t0 + kSlice ? cnt[gi] : t0 + kSlice;
            float ls = 0.0f;
            for (int d = 0; d < D; ++d) val[d] = 0.0f;
            for (int t = t0; t < t1; ++t) {
              const float pt = exp_att(sc[gi * kGroup + t] - m);
              ls = ls + pt;
              for (int d = 0; d < D; ++d) val[d] = fmaf(pt, bf16_to_f32(vv[gi][size_t(t) * D + d]), val[d]);
            }
            lt = lt + ls;
            for (int d = 0; d < D; ++d) acc[d] = acc[d] + val[d];
          }
        } else if (m != neg_inf()) {
          for (int gi = 0; gi < 2; ++gi) {
            float lg = 0.0f;
            for (int d = 0; d < D; ++d) val[d] = 0.0f;
            for (int t = 0; t < cnt[gi]; ++t) {
              const float pt = exp_att(sc[gi * kGroup + t] - m);
              lg = lg + pt;
              for (int d = 0; d < D; ++d) val[d] = fmaf(pt, bf16_to_f32(vv[gi][size_t(t) * D + d]), val[d]);
            }
            lt = lt + lg;
            for (int d = 0; d < D; ++d) acc[d] = acc[d] + val[d];
          }
        }
        pm[0] = m;
        pl[0] = lt;
        for (int d = 0; d < D; ++d) pacc[d] = acc[d];
      }

      // ---- the closed chunks: refine (every block in exact mode), partials 1 .. nch
      for (int ch = 0; ch < nch; ++ch) {
        const int ng = nq - ch * kChunkGroups < kChunkGroups ? nq - ch * kChunkGroups : kChunkGroups;
        float m = neg_inf();
        for (int gi = 0; gi < ng; ++gi) {
          const int slot = ch * kChunkGroups + gi;
          const uint8_t* rec = record(c, b, kh, slot);
          qgroup(l, qf.data(), rec, qg[gi]);
          for (int blk = 0; blk < kBlocksPerGroup; ++blk) {
            const int rb = gi * kBlocksPerGroup + blk;
            refined[rb] = p.exact || s.ub[row * s.nblk + slot * kBlocksPerGroup + blk] >= thr;
            if (!refined[rb]) continue;
            for (int i = 0; i < kBlock; ++i) {
              const int t = blk * kBlock + i;
              int32_t dot = 0;
              for (int d = 0; d < D; ++d) dot += qg[gi].what[d] * k_code(l, rec, t, d);
              sc[gi * kGroup + t] = score_of(qg[gi].bias, qg[gi].s_w, dot, p.scale);
              m = fmax_step(m, sc[gi * kGroup + t]);
            }
          }
        }
        float lt = 0.0f;
        for (int d = 0; d < D; ++d) acc[d] = 0.0f;
        if (m != neg_inf() && p.pv == MLOPS_FBLA_PV_DIGITS) {
          for (int sl = 0; sl < ng * kSlicesPerGroup; ++sl) {
            const int gi = sl / kSlicesPerGroup, t0 = kSlice * (sl % kSlicesPerGroup);
            const uint8_t* rec = record(c, b, kh, ch * kChunkGroups + gi);
            const RecVals vmin(rec, l.vmin);
            const RecVals vscale(rec, l.vscale);
            float wmax = 0.0f, wt[kSlice], lp[8], bp[8];
            for (int g8 = 0; g8 < 8; ++g8) {  // l and the V-min term: 8 lane sums, then a butterfly (the kernel's)
              lp[g8] = 0.0f;
              bp[g8] = 0.0f;
              for (int i = g8; i < kSlice; i += 8) {  // tokens g8, g8 + 8, g8 + 16, g8 + 24
                const int t = t0 + i;  // p of a block not refined: 0 (adds nothing)
                const float pt = refined[gi * kBlocksPerGroup + t / kBlock] ? exp_att(sc[gi * kGroup + t] - m) : 0.0f;
                lp[g8] = lp[g8] + pt;
                bp[g8] = bp[g8] + pt * vmin[t];
                wt[i] = pt * vscale[t];
                wmax = fmax_step(wmax, wt[i]);
              }
            }
            for (int off = 1; off < 8; off <<= 1) {
              float l2[8], b2[8];
              for (int g8 = 0; g8 < 8; ++g8) {
                l2[g8] = lp[g8] + lp[g8 ^ off];
                b2[g8] = bp[g8] + bp[g8 ^ off];
              }
              for (int g8 = 0; g8 < 8; ++g8) {
                lp[g8] = l2[g8];
                bp[g8] = b2[g8];
              }
            }
            const float ls = lp[0], bs = bp[0];
            const DigitScale ds = digit_scale(wmax);
            int wq[kSlice];
            for (int i = 0; i < kSlice; ++i) {
              int hi, lo;
              digits_of(wt[i], ds.S, hi, lo);
              wq[i] = 256 * hi + lo;
            }
            for (int d = 0; d < D; ++d) {
              int32_t I = 0;
              for (int i = 0; i < kSlice; ++i) I += wq[i] * v_code(l, rec, t0 + i, d);
              acc[d] = acc[d] + fmaf(ds.step, float(I), bs);
            }
            lt = lt + ls;
          }
        } else if (m != neg_inf()) {
          for (int gi = 0; gi < ng; ++gi) {
            const uint8_t* rec = record(c, b, kh, ch * kChunkGroups + gi);
            const RecVals vmin(rec, l.vmin);
            const RecVals vscale(rec, l.vscale);
            float lg = 0.0f, bs = 0.0f;
            for (int d = 0; d < D; ++d) val[d] = 0.0f;
            for (int t = 0; t < kGroup; ++t) {
              if (!refined[gi * kBlocksPerGroup + t / kBlock]) continue;
              const float pt = exp_att(sc[gi * kGroup + t] - m);
              lg = lg + pt;
              const float a = pt * vscale[t];
              bs = bs + pt * vmin[t];
              for (int d = 0; d < D; ++d) val[d] = fmaf(a, float(v_code(l, rec, t, d)), val[d]);
            }
            lt = lt + lg;
            for (int d = 0; d < D; ++d) acc[d] = acc[d] + (val[d] + bs);
          }
        }
        pm[1 + ch] = m;
        pl[1 + ch] = lt;
        for (int d = 0; d < D; ++d) pacc[size_t(1 + ch) * D + d] = acc[d];
      }

      // ---- combine: partials in slot order
      float Mx = neg_inf();
      for (int i = 0; i < 1 + nch; ++i) Mx = fmax_step(Mx, pm[i]);
      float lt = 0.0f;
      for (int d = 0; d < D; ++d) acc[d] = 0.0f;
      if (Mx != neg_inf()) {
        for (int i = 0; i < 1 + nch; ++i) {
          if (pm[i] == neg_inf()) continue;
          const float e = exp_att(pm[i] - Mx);
          lt = fmaf(pl[i], e, lt);
          for (int d = 0; d < D; ++d) acc[d] = fmaf(pacc[size_t(i) * D + d], e, acc[d]);
        }
      }
      for (int d = 0; d < D; ++d) {
        const float o = Mx != neg_inf() ? acc[d] / lt : 0.0f;
        if (p.out_fp32)
          static_cast<float*>(p.out)[row * D + d] = o;
        else
          static_cast<uint16_t*>(p.out)[row * D + d] = f32_to_bf16(o);
      }
    }
  }
}

}  // namespace mlops::fbla
