// Host emulation of the sampler, written from the definition in mlops/vocab.h rather than from
// the kernel's radix passes (thresholds by sorting, masses by exact integer sums), so the CPU
// suite checks the definition and the GPU suite checks the radix select against it bit for bit.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "sample_params.h"

namespace mlops::vocab {
namespace {

struct RowMax {
  uint64_t best = 0;
  int flags = 0;
};

RowMax row_max(const float* z, int64_t V) {
  RowMax r;
  for (int64_t v = 0; v < V; ++v) {
    if (is_nan(z[v])) { r.flags |= MLOPS_SAMPLE_FLAG_NAN; continue; }
    const uint32_t k = key_of(z[v]);
    if (k == kKeyPosInf) r.flags |= MLOPS_SAMPLE_FLAG_POSINF;
    r.best = std::max(r.best, pack_best(k, uint32_t(v)));
  }
  if (r.best == 0 || best_key(r.best) <= kKeyNegInf) r.flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
  return r;
}

}  // namespace

// Steps 3 of the definition for one (already penalized) row of a sampling configuration.
uint64_t sample_row_weights_host(const float* z, int64_t V, const mlops_sample_config& raw, uint32_t* weights) {
  const mlops_sample_config c = sanitize(raw);
  std::fill(weights, weights + V, 0u);
  const RowMax rm = row_max(z, V);
  if (rm.flags || config_greedy(c)) return 0;
  const float m = float_of_key(best_key(rm.best));
  const Temperature T = temperature_of(c.temperature);
  // top-k: the k-th largest key; ties at it kept
  uint32_t tau = 0;
  if (c.top_k > 0 && int64_t(c.top_k) < V) {
    std::vector<uint32_t> keys(V);
    for (int64_t v = 0; v < V; ++v) keys[v] = key_of(z[v]);
    std::nth_element(keys.begin(), keys.begin() + (c.top_k - 1), keys.end(), std::greater<uint32_t>());
    tau = keys[c.top_k - 1];
  }
  // top-p: keep a key while the mass of larger keys (among the top-k) is below p * S_k
  if (c.top_p < 1.0f) {
    std::map<uint32_t, uint64_t, std::greater<uint32_t>> mass_of_key;
    uint64_t total = 0;
    for (int64_t v = 0; v < V; ++v) {
      const uint32_t k = key_of(z[v]);
      if (k < tau) continue;
      const uint32_t w = sample_weight(z[v], m, T);
      mass_of_key[k] += w;
      total += w;
    }
    const double thr = top_p_threshold(c.top_p, total);
    uint64_t above = 0;
    uint32_t tau_p = tau;
    for (const auto& [k, w] : mass_of_key) {
      if (!(double(above) < thr)) break;
      tau_p = k;
      above += w;
    }
    tau = std::max(tau, tau_p);
  }
  const bool use_min_p = c.min_p > 0.0f;
  const double min_thr = min_p_threshold(c.min_p);
  uint64_t s = 0;
  for (int64_t v = 0; v < V; ++v) {
    if (key_of(z[v]) < tau) continue;
    const uint32_t w = sample_weight(z[v], m, T);
    if (use_min_p && double(w) < min_thr) continue;
    weights[v] = w;
    s += w;
  }
  return s;
}

void sample_host(const SampleParams& p) {
  for (int64_t row = 0; row < p.rows; ++row) {
    float* z = p.logits + row * p.logits_stride;
    const mlops_sample_config c = sanitize(p.configs[row]);
    // 1. penalties, in place, once per distinct token
    const int64_t n = history_length(p, row);
    if (n && config_has_penalty(c)) {
      std::map<int32_t, int32_t> counts;
      for (int64_t i = 0; i < n; ++i) {
        const int32_t t = p.history[row * p.history_stride + i];
        if (t >= 0 && t < p.vocab) ++counts[t];
      }
      for (const auto& [t, cnt] : counts) z[t] = penalize(z[t], cnt, c);
    }
    RowMax rm;
    if (row_uses_stats(p, row, c)) {
      rm.best = p.stats_best[row];
      rm.flags = flags_from_best(rm.best);
    } else {
      rm = row_max(z, p.vocab);
    }
    int32_t token = int32_t(rm.best == 0 ? 0u : best_index(rm.best));
    float logprob = std::nanf("");
    if (rm.flags || config_greedy(c)) {
      if (!rm.flags) {
        const float m = float_of_key(best_key(rm.best));
        uint64_t s = 0;
        for (int64_t v = 0; v < p.vocab; ++v) s += sample_weight(z[v], m, temperature_of(1.0f));
        logprob = float(std::log(double(kWeightScale) / double(s)));
      }
    } else {
      std::vector<uint32_t> w(p.vocab);
      const uint64_t S = sample_row_weights_host(z, p.vocab, c, w.data());
      const uint64_t target = scale_draw(draw64(p.seeds[row], p.steps[row]), S);
      uint64_t run = 0;
      for (int64_t v = 0; v < p.vocab; ++v) {
        run += w[v];
        if (w[v] && run > target) {
          token = int32_t(v);
          logprob = float(std::log(double(w[v]) / double(S)));
          break;
        }
      }
    }
    p.tokens[row] = token;
    if (p.flags) p.flags[row] = rm.flags;
    if (p.logprobs) p.logprobs[row] = logprob;
    p.steps[row] = p.steps[row] + 1;
  }
}

}  // namespace mlops::vocab
