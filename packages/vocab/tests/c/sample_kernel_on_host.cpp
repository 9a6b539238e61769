// The sampler's device code (src/sample_kernel.cuh: pass 1, the radix selections, the shared-memory
// candidates, the draw, the penalty kernels and the split variant's phases A, A2, B, C, D) compiled
// by the host compiler and run with one fiber an emulated GPU thread, against the host
// emulation (src/sample_host.cpp), bit for bit: tokens, flags, log-probabilities, steps and the
// penalized logits. Device intrinsics are replaced by their host meaning: __syncthreads is a
// barrier of the block's threads, a shuffle meets the 32 threads of its warp at a barrier,
// __shared__ arrays are statics (blocks run one after another), atomics are plain read-modify-writes
// (the fibers share one OS thread).
// Prints "N passed, M failed".
#include "mlops/common/testing/cuda_on_host.h"
#include "sample_cluster_kernel.cuh"

using namespace mlops::vocab;

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

struct Case {
  const char* name;
  int64_t B, V;
  mlops_sample_config cfg;
  float scale;
  bool history, specials;
  bool stats = false;  // feed the LM head's statistics (max / lowest argmax, key-byte counts)
  // the row's last 1000 logits: 40 in [40.5, 40.9] above 960 in [33, 37.8] (the last CTA's, at 3 or 4
  // CTAs): a top-k 40 whose wide list holds all of the top byte's bin [32, 128) that is listed, but
  // not the bin (the wide forms' early stop must not take that bin's lower bound)
  bool crowd = false;
  // logits 12.0, 12.01, ... at `peaks` spread indices above a bulk near 0 (scale 0.3): ~3.5 % of the
  // row's mass lies in the bulk's bins, far below the peaks' (a top-p 0.99 crosses there, 0.9 does not)
  int peaks = 0;
  // the logit 1's elements of each row on consecutive floats (1, 1 + 2^-23, ...: distinct keys in one level-2 bin);
  // 2: the ones 32 ulps apart (two level-2 bins of ~256 and ~190, a key a level-1 bin: the generic rounds stop at level
  // 1 and leave its histogram in hlo / hhi, past the first 256 words too, where MLOPS_SAMPLE_MASK_DRAW_PREZERO's chunk
  // words lie), and the row's first 20 zeros become 1.1 (the same wide bin [1, 1.25), level-2 bin 102 above the ones'
  // 0): mass above a level-2 bin of over 32 elements inside the crossing wide bin, so the mass above that bin (acc,
  // which the level-2 choice broadcasts) differs from the wide bin's (session 54)
  int ulps = 0;
  // the bench's vocabulary, one logit over 100 000 zeros and the rest distinct just below a negative level (T = 1):
  // ~76 000 zeros in one wide bin of a global-slice CTA at C = 2, whose 16-bit halves' 32-bit sums (the wide rounds'
  // two words a bin) wrapped before session 41. 1: the logit 10.5, the rest below -1: a zero weighs ~59 000 and lies
  // below the near bins (m - 10 T), which do not reach: the full round's bins. 2: the logit 10.0284 over 100 000 ones,
  // the rest just below 0.5: a one weighs ~257 500 (its low 16 bits ~61 000), every element lies in a near bin (within
  // 10 T and 8 octaves of the max): the near pass's (top-p 0.8: the ones' mass less 2^32 still reaches p S in the next
  // bin, at another place)
  // Session 42, the global-slice forms' near codes (list_nib), V = 40 000 (T, top-p of the case): 3: 5 000 logits 10 and
  // 100 distinct logits 9 .. 9.495 over the rest at -20 (top-p 0.997: the crossing bin is the 9s', one below the max's,
  // and the 10s above it overflow a CTA's list of kClusterCand at 2 CTAs while the bin's entries alone fit the gather);
  // 4: one
  // logit 10 and 40 logits 0.8 over the rest just below -30 (T = 4, top-p 0.5: the crossing bin is the 0.8s', 15 near
  // bins below the max's, past the codes' 15: the listing from the mask)
  int flat = 0;
};

// What mlops_sample launches for a variant, run on the host (split: memset, A, A2, B, C, D;
// cluster: one cluster of `cluster` CTAs a row, run together).
static void emulate(SampleParams p, int threads, bool split, int cluster, int staged, std::vector<SplitRow>& ws) {
  if (staged == 11 && p.logits_stride % 4 != 0) {  // slices that would not start 16-byte aligned: the launch runs tp3
    staged = 10;
    cluster = 4;
  }
  if (cluster) {  // the penalties are the kernel's own first phase
    const dim3 grid(unsigned(cluster), unsigned(p.rows));
    if (staged == 11) {  // the global-slice tp3 form: the gathered list and the near codes, poisoned
      const int gc = threads == 1024 || cluster == 2 ? 2 : 3, gt = threads == 1024 ? 1024 : 256;
      set_host_dynamic_shared(size_t(gsl_dyn_bytes(p.vocab, gc, gt)));
      for (auto& b : g_dyn_shared) std::memset(b.data(), 0xff, b.size() * sizeof(float4));
      if (threads == 1024)
        run_cluster_grid(grid, 2, 1024, [&] { sample_cluster_kernel<2, 1024, Tp3gForm>(p); });
      else if (cluster == 2)
        run_cluster_grid(grid, 2, 256, [&] { sample_cluster_kernel<2, 256, Tp3gForm>(p); });
      else
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, Tp3gForm>(p); });
      return;
    }
    if (staged) {  // the slice in (poisoned) dynamic shared memory: every read after staging comes from it
      set_host_dynamic_shared(size_t(cluster_stage_bytes(p.vocab, cluster)) + (staged >= 4 ? 4 * kGather : 0));
      for (auto& b : g_dyn_shared) std::memset(b.data(), 0xff, b.size() * sizeof(float4));
      if (staged == 10 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, Tp3Form>(p); });
      else if (staged == 10)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, Tp3Form>(p); });
      else if (staged == 9 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, Tp2Form>(p); });
      else if (staged == 9)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, Tp2Form>(p); });
      else if (staged == 8 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, TpForm>(p); });
      else if (staged == 8)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, TpForm>(p); });
      else if (staged == 7 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, TkForm>(p); });
      else if (staged == 7)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, TkForm>(p); });
      else if (staged == 6 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, WideForm>(p); });
      else if (staged == 6)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, WideForm>(p); });
      else if (staged == 5 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, LateForm>(p); });
      else if (staged == 5)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, LateForm>(p); });
      else if (staged == 4 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, GatherForm>(p); });
      else if (staged == 4)
        run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, GatherForm>(p); });
      else if (staged == 3 && cluster == 4)
        run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, LeanForm>(p); });
      else if (staged == 3) run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, LeanForm>(p); });
      else if (staged == 2 && cluster == 4) run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, EsForm>(p); });
      else if (staged == 2) run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, EsForm>(p); });
      else if (cluster == 4) run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256, StagedForm>(p); });
      else run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256, StagedForm>(p); });
      return;
    }
    if (cluster == 4) run_cluster_grid(grid, 4, 256, [&] { sample_cluster_kernel<4, 256>(p); });
    else run_cluster_grid(grid, 3, 256, [&] { sample_cluster_kernel<3, 256>(p); });
    return;
  }
  if (p.history) {
    const dim3 grid(unsigned((p.history_stride + 255) / 256), unsigned(p.rows));
    run_grid(grid, 256, [&] { penalty_count_kernel(p); });
    run_grid(grid, 256, [&] { penalty_apply_kernel(p); });
  }
  if (!split) {
    const dim3 grid(unsigned(p.rows));
    if (threads == 256) run_grid(grid, 256, [&] { sample_kernel<256>(p); });
    else run_grid(grid, 1024, [&] { sample_kernel<1024>(p); });
    return;
  }
  ws.assign(size_t(p.rows), SplitRow{});
  std::memset(ws.data(), 0, sizeof(SplitRow) * ws.size());
  p.split = ws.data();
  p.chunks = int((p.vocab + 2047) / 2048 > kSplitMaxChunks ? kSplitMaxChunks : (p.vocab + 2047) / 2048);
  const dim3 chunks(unsigned(p.chunks), unsigned(p.rows)), rows(unsigned(p.rows));
  run_grid(chunks, kSplitThreads, [&] { split_stats_kernel(p); });
  run_grid(chunks, kSplitThreads, [&] { split_mass_kernel(p); });
  run_grid(rows, 1024, [&] { sample_kernel<1024>(p); });
  run_grid(chunks, kSplitThreads, [&] { split_sum_kernel(p); });
  run_grid(rows, kSplitThreads, [&] { split_draw_kernel(p); });
}

static bool same_bits(const void* a, const void* b, size_t n) { return std::memcmp(a, b, n) == 0; }

// lean_weight_of_u (the lean forms' weight; its n from one FFMA since session 35, rintf of fl(u / ln2) by an FRND
// before) against the definition sample_weight computes, rint(exp_det(u) * 2^31), for the floats u in [-80, 0]:
// every float where the FFMA's n differs from exp_det's (57 of them) and every `stride`-th bit pattern from -0
// down, and +0. SAMPLE_ON_HOST_WEIGHT_STRIDE=1 takes all ~1.12 G floats (~45 s here); the default 61 keeps the
// runner's time. One check; the first difference is printed.
static void check_lean_weight_of_u() {
  using mlops::bits_f32, mlops::exp_det, mlops::f32_bits, mlops::rint_even;
  const char* env = std::getenv("SAMPLE_ON_HOST_WEIGHT_STRIDE");
  const uint32_t stride = env ? uint32_t(std::max(1, std::atoi(env))) : 61u;
  const uint32_t last = f32_bits(-80.0f);
  uint32_t bad = 0, first = 0, n_apart = 0;
  auto definition = [&](float u) { return uint32_t(rint_even(exp_det(u) * kWeightScale)); };
  auto one = [&](uint32_t b) {
    if (lean_weight_of_u(bits_f32(b)) != definition(bits_f32(b)) && bad++ == 0) first = b;
  };
  one(0u);
  for (uint64_t b = 0x80000000u; b <= last; ++b) {
    const float u = bits_f32(uint32_t(b));
    const bool apart = fmaf(u, 1.44269504088896341f, 12582912.0f) - 12582912.0f != rint_even(u * 1.44269504088896341f);
    n_apart += apart;
    if (apart || (b - 0x80000000u) % stride == 0) one(uint32_t(b));
  }
  CHECK(bad == 0 && n_apart == 57,
        "lean_weight_of_u: %u of the floats in [-80, 0] (stride %u, %u where n differs) give another weight, the "
        "first u = %a (%u vs %u)", bad, stride, n_apart, double(bits_f32(first)), lean_weight_of_u(bits_f32(first)),
        definition(bits_f32(first)));
}

// The float compare that stands for a key test (MLOPS_SAMPLE_LIST_FLOAT's listing): x >= xlo, xlo = -inf for lo at or
// below -inf's key, else float_of_key(lo), is key_of(x) >= lo for every x but NaN, for every 8-bit and 11-bit (wide)
// bin boundary lo but +0.0's key (the listing takes the key's test there). x: the floats at and around each boundary,
// the signed zeros, infinities, extremes and denormals, and a spread of bit patterns.
static void check_key_float_compare() {
  using mlops::bits_f32, mlops::f32_bits;
  uint32_t bad = 0, n = 0, first_lo = 0, first_x = 0;
  std::vector<uint32_t> xs = {0u, 0x80000000u, 1u, 0x80000001u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0xff7fffffu,
                              0x007fffffu, 0x807fffffu, 0x00800000u, 0x80800000u};
  for (uint32_t b = 0; b < 4096; ++b) xs.push_back(b * 1048573u);
  auto one = [&](uint32_t lo, uint32_t xb) {
    const float x = bits_f32(xb);
    if (x != x) return;  // NaN: no listed slice holds one
    const float xlo = float_of_bound(lo);
    ++n;
    if ((x >= xlo) != (key_of(x) >= lo) && bad++ == 0) {
      first_lo = lo;
      first_x = xb;
    }
  };
  for (uint32_t k = 0; k < 2048; ++k) {
    const uint32_t lo = k << 21;  // the 8-bit boundaries are among these
    if (lo == kKeyPosZero) continue;
    for (int d = -2; d <= 2; ++d) one(lo, f32_bits(float_of_key(lo + uint32_t(d))));
    for (uint32_t xb : xs) one(lo, xb);
  }
  CHECK(bad == 0, "the float compare against a bin boundary differs from the key test in %u of %u cases, the first lo "
        "%08x, x bits %08x", bad, n, first_lo, first_x);
}

int main() {
  check_lean_weight_of_u();
  check_key_float_compare();
  const mlops_sample_config base = {1.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0};
  auto cfg = [&](float t, int k, float p, float mp, float rep = 1.0f, float freq = 0.0f) {
    mlops_sample_config c = base;
    c.temperature = t; c.top_k = k; c.top_p = p; c.min_p = mp; c.repetition_penalty = rep; c.frequency_penalty = freq;
    return c;
  };
  const Case cases[] = {
      {"greedy", 3, 5000, cfg(0.0f, 0, 1.0f, 0.0f), 3.0f, false, false},
      {"temperature", 3, 5000, cfg(0.8f, 0, 1.0f, 0.0f), 3.0f, false, false},
      {"top_k 40 (shared-memory candidates)", 3, 5000, cfg(1.0f, 40, 1.0f, 0.0f), 3.0f, false, false},
      {"top_k 3000 (row radix)", 3, 5000, cfg(1.0f, 3000, 1.0f, 0.0f), 3.0f, false, false},
      {"top_p cold (candidates)", 3, 5000, cfg(0.3f, 0, 0.9f, 0.0f), 3.0f, false, false},
      {"top_p hot (row radix)", 3, 5000, cfg(4.0f, 0, 0.95f, 0.0f), 1.0f, false, false},
      {"min_p", 3, 5000, cfg(1.0f, 0, 1.0f, 0.05f), 3.0f, false, false},
      {"min_p below the exp bound's floor", 3, 5000, cfg(0.7f, 0, 1.0f, 5e-7f), 3.0f, false, false},
      {"min_p hot", 2, 5000, cfg(3.0f, 0, 1.0f, 0.3f), 1.0f, false, false},
      {"all + penalties", 3, 5000, cfg(0.9f, 300, 0.9f, 0.01f, 1.3f), 3.0f, true, false},
      // session 42: a frequency penalty, so that a token's count (2 where the history repeats it) changes its logit
      {"top_p + repetition and frequency penalties", 2, 5000, cfg(0.9f, 0, 0.9f, 0.0f, 1.2f, 0.7f), 3.0f, true, false},
      {"NaN / inf / -inf rows", 4, 700, cfg(1.0f, 0, 0.9f, 0.0f), 3.0f, false, true},
      {"one token", 2, 1, cfg(1.0f, 0, 0.5f, 0.0f), 3.0f, false, false},
      {"ties", 3, 2100, cfg(1.0f, 7, 1.0f, 0.0f), 0.0f, false, false},
      // session 49: integer logits, a top-k 200 whose level-2 bin (one integer: ~100 - 270 equal keys) is over the 32
      // keys tk_finish takes: the gathered rounds go on from level 1 (MLOPS_SAMPLE_TK_FINISH2's hand-over)
      {"top_k 200 ties (a level-2 bin over 32 keys)", 2, 3000, cfg(1.0f, 200, 1.0f, 0.0f), 0.0f, false, false},
      {"top_k 40 + stats", 2, 5000, cfg(1.0f, 40, 1.0f, 0.0f), 3.0f, false, false, true},
      {"all + stats", 2, 5000, cfg(0.9f, 300, 0.9f, 0.01f), 3.0f, false, false, true},
      // the bench's top-p row, scaled down: the first round's bin ([2, 8): ~3000 elements) overflows
      // the gathered list, the second's fits (the late forms gather there); history: the penalties
      {"top_p 0.9 (late gather)", 2, 12000, cfg(0.8f, 0, 0.9f, 0.0f, 1.1f), 3.0f, true, false},
      // integer logits at a high temperature: the wide forms' crossing bin (the logit 0, ~4600
      // elements) overflows the gathered list, so their rounds below go on distributed
      {"top_p ties (wide bin over the list)", 2, 12000, cfg(50.0f, 0, 0.5f, 0.0f), 0.0f, false, false},
      // integer logits at a high temperature, the crossing bin fits the gathered list: ~450 elements of the logit 1,
      // spread over consecutive floats, in the tp3 forms' level-2 bin, over the 32 their one warp takes: their
      // rounds go on from level 1
      {"top_p 0.25 near-ties (a level-2 bin of ~450 keys)", 2, 3000, cfg(50.0f, 0, 0.25f, 0.0f), 0.0f, false, false,
       false, false, 0, true},
      // the same with 20 elements at 1.1 above them in the crossing wide bin: the generic rounds from level 1 start from
      // the mass above the level-2 bin, not the wide bin's
      {"top_p 0.25 near-ties under 20 at 1.1 (mass above the level-2 bin)", 2, 3000, cfg(50.0f, 0, 0.25f, 0.0f), 0.0f,
       false, false, false, false, 0, 2},
      // the same rows without the ulps: ~450 equal keys, over the one warp at levels 2 and 1 (tp3_rounds with
      // MLOPS_SAMPLE_TP3_LEVEL1 hands level 0 to the rounds)
      {"top_p 0.25 ties (a level-1 bin of ~450 equal keys)", 2, 3000, cfg(50.0f, 0, 0.25f, 0.0f), 0.0f, false, false},
      // three rows of the bench's kind at other p / T: the tp3 forms' one-warp finish where the threshold is not the
      // level-2 bin's smallest key
      {"top_p 0.7 hot", 3, 12000, cfg(1.5f, 0, 0.7f, 0.0f), 3.0f, false, false},
      {"top_k 40, the top in one CTA", 2, 5000, cfg(30.0f, 40, 1.0f, 0.0f), 3.0f, false, false, false, true},
      {"top_k 40 + top_p, the top in one CTA", 2, 5000, cfg(30.0f, 40, 0.9f, 0.0f), 3.0f, false, false, false, true},
      // session 51: the bench's combination (top-k 50, top-p 0.9, min-p 0.05 on N(0, 3^2) logits): ~50 weighed
      // elements of the gathered list over every CTA, min-p cutting some that top-p keeps (list_draw_kept's filter and
      // its order across the CTAs' parts)
      {"top_k 50 + top_p 0.9 + min_p 0.05", 3, 5000, cfg(1.0f, 50, 0.9f, 0.05f), 3.0f, false, false},
      {"top_p 0.99, two peaks (crossing in the bulk)", 2, 12000, cfg(1.0f, 0, 0.99f, 0.0f), 0.3f, false, false, false, false, 2},
      {"top_p 0.9, two peaks (crossing at a peak)", 2, 12000, cfg(1.0f, 0, 0.9f, 0.0f), 0.3f, false, false, false, false, 2},
      // slices of 18000 at 2 CTAs: chunk_draw's 282 chunks of 64 over 256 threads, 2 a thread (the list's path and the
      // slice's)
      {"temperature, long slices", 2, 36000, cfg(0.8f, 0, 1.0f, 0.0f), 3.0f, false, false},
      {"top_p 0.9, long slices", 2, 36000, cfg(0.8f, 0, 0.9f, 0.0f), 3.0f, false, false},
      {"top_p 0.9, a spike over 100 000 zeros (V = 151936)", 1, 151936, cfg(1.0f, 0, 0.9f, 0.0f), 1.0f, false, false,
       false, false, 0, false, 1},
      {"top_p 0.8, a spike over 100 000 ones, all near (V = 151936)", 1, 151936, cfg(1.0f, 0, 0.8f, 0.0f), 1.0f, false,
       false, false, false, 0, false, 2},
      {"top_p 0.997, 5 000 tens over a bin of 100 nines (list over, bin fits)", 1, 40000, cfg(1.0f, 0, 0.997f, 0.0f),
       1.0f, false, false, false, false, 0, false, 3},
      {"top_p 0.5, the crossing 15 near bins down (T = 4)", 1, 40000, cfg(4.0f, 0, 0.5f, 0.0f), 1.0f, false, false,
       false, false, 0, false, 4},
  };
  int case_no = 0;
  for (const Case& c : cases) {
    ++case_no;
    std::mt19937 gen(unsigned(c.V * 7 + c.B));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> z(size_t(c.B * c.V));
    for (auto& v : z) v = c.scale == 0.0f ? float(int(nd(gen) * 2.0f)) : nd(gen) * c.scale;  // ties: integers
    for (int64_t r = 0; r < c.B && c.crowd; ++r)
      for (int64_t i = 0; i < 1000; ++i)
        z[r * c.V + c.V - 1000 + i] = i >= 960 ? 40.5f + float(i - 960) * 0.01f : 33.0f + float(i) * 0.005f;
    for (int64_t r = 0; r < c.B && c.ulps; ++r) {
      uint32_t next = mlops::f32_bits(1.0f);
      for (int64_t v = 0; v < c.V; ++v)
        if (z[r * c.V + v] == 1.0f) z[r * c.V + v] = mlops::bits_f32(next), next += c.ulps == 2 ? 32u : 1u;
      for (int64_t v = 0, moved = 0; v < c.V && c.ulps == 2 && moved < 20; ++v)
        if (z[r * c.V + v] == 0.0f) z[r * c.V + v] = 1.1f, ++moved;
    }
    for (int64_t r = 0; r < c.B && c.flat; ++r)
      for (int64_t v = 0; v < c.V; ++v)
        z[r * c.V + v] = c.flat == 1   ? (v == 7 ? 10.5f : v < 100000 ? 0.0f : -1.0f - 1e-6f * float(v - 100000))
                         : c.flat == 2 ? (v == 7 ? 10.0284f : v < 100000 ? 1.0f : 0.5f - 1e-6f * float(v - 100000))
                         : c.flat == 3 ? (v % 8 == 3 ? 10.0f : v % 400 == 5 ? 9.0f + 0.005f * float(v / 400) : -20.0f)
                                       : (v == 7 ? 10.0f : v % 1000 == 3 ? 0.8f : -30.0f - 1e-5f * float(v));
    for (int64_t r = 0; r < c.B; ++r)
      for (int k = 0; k < c.peaks; ++k) z[r * c.V + (k * 7919 + r * 131) % c.V] = 12.0f + 0.01f * float(k);
    if (c.specials) {
      z[5] = std::nanf("");
      z[c.V + 9] = INFINITY;
      for (int64_t v = 0; v < c.V; ++v) z[2 * c.V + v] = -INFINITY;
      for (int64_t v = 0; v < c.V; ++v) z[3 * c.V + v] = std::nanf("");
    }
    std::vector<uint64_t> best(size_t(c.B), 0);
    std::vector<uint32_t> khist(size_t(c.B * 256), 0);
    for (int64_t r = 0; r < c.B && c.stats; ++r)
      for (int64_t v = 0; v < c.V; ++v) {
        const uint32_t k = key_of(z[r * c.V + v]);
        ++khist[r * 256 + (k >> 24)];
        if (!is_nan(z[r * c.V + v])) best[r] = std::max(best[r], pack_best(k, uint32_t(v)));
      }
    std::vector<mlops_sample_config> cfgs(size_t(c.B), c.cfg);
    std::vector<uint64_t> seeds(size_t(c.B));
    for (int64_t r = 0; r < c.B; ++r) seeds[r] = 1000 + uint64_t(r);
    const int64_t L = 64;
    std::vector<int32_t> hist(size_t(c.B * L)), hlen(size_t(c.B));
    for (int64_t r = 0; r < c.B; ++r) {
      hlen[r] = int32_t(r == 1 ? 0 : L - r);
      // -1, >= V, and (session 42) repeats: entries i and i + 40 name one token (counts of 2 for the penalties)
      for (int64_t i = 0; i < L; ++i) hist[r * L + i] = int32_t(((i % 40) * 37 + r * 11) % (c.V + 3)) - 1;
    }
    // t256, t1024, split, cluster 4 x 256, cluster 3 x 256, the staged (slice in shared memory)
    // clusters 4 x 256 and 3 x 256, the staged early-stop form, the lean form, the gather form and
    // the late form, the wide form, the tk form, the tp form, the tp2 form and the tp3 form (4 x 256 or 3 x 256
    // by case), the global-slice tp3 form (2 x 256, 3 x 256, 2 x 1024)
    for (int variant = 0; variant < 19; ++variant) {
      if (const char* only = std::getenv("SAMPLE_ON_HOST_VARIANT"); only && std::atoi(only) != variant) continue;
      // Every variant on every case since the runner is fiber-based (session 25; 31 s here before this, with t1024 on
      // every other case, the 3-CTA clusters on the others and one step for all but t256, when each emulated thread
      // was an OS thread)
      const bool split = variant == 2;
      const int staged = variant >= 16 ? 11 : variant == 15 ? 10 : variant == 14 ? 9 : variant == 13 ? 8 : variant == 12 ? 7 : variant == 11 ? 6 : variant == 10 ? 5 : variant == 9 ? 4 : variant == 8 ? 3 : variant == 7 ? 2 : variant >= 5 ? 1 : 0;
      const int cluster = variant == 16 || variant == 18 ? 2 : variant == 17 ? 3
                          : variant == 3 || variant == 5 ? 4
                          : variant == 4 || variant == 6 ? 3
                          : variant >= 7 ? (case_no % 2 ? 4 : 3) : 0;
      const int threads = variant == 0 ? 256 : variant >= 16 && variant < 18 ? 256 : 1024;
      for (int64_t step0 : {int64_t(41), int64_t(0)}) {  // two steps: two draws
        std::vector<float> zh = z, zk = z;
        std::vector<int64_t> sh_(size_t(c.B), step0), sk(size_t(c.B), step0);
        std::vector<int32_t> th(size_t(c.B)), tk(size_t(c.B), -7), fh(size_t(c.B)), fk(size_t(c.B), -7);
        std::vector<float> lh(size_t(c.B)), lk(size_t(c.B));
        std::vector<int32_t> counts(size_t(c.B * c.V), 0);
        SampleParams p{};
        p.rows = c.B; p.vocab = c.V; p.logits_stride = c.V; p.configs = cfgs.data(); p.seeds = seeds.data();
        if (c.stats) {
          p.stats_best = best.data();
          p.stats_key_hist = khist.data();
        }
        if (c.history) {
          p.history = hist.data(); p.history_stride = L; p.history_len = hlen.data(); p.penalty_counts = counts.data();
        }
        p.logits = zh.data(); p.steps = sh_.data(); p.tokens = th.data(); p.flags = fh.data(); p.logprobs = lh.data();
        sample_host(p);
        p.logits = zk.data(); p.steps = sk.data(); p.tokens = tk.data(); p.flags = fk.data(); p.logprobs = lk.data();
        std::vector<SplitRow> ws;
        emulate(p, threads, split, cluster, staged, ws);
        const char* names[] = {"t256",     "t1024",         "split",         "cluster4",
                               "cluster3", "cluster4_smem", "cluster3_smem", "cluster_smem_es",
                               "cluster_lean", "cluster_gather", "cluster_late", "cluster_wide", "cluster_tk",
                               "cluster_tp", "cluster_tp2", "cluster_tp3", "cluster2_tp3g", "cluster3_tp3g",
                               "cluster2_tp3g_t1024"};
        const char* vn = names[variant];
        CHECK(th == tk, "%s [%s, step %lld]: tokens %d %d %d vs host %d %d %d", c.name, vn, (long long)step0, tk[0],
              tk[c.B > 1], tk[c.B - 1], th[0], th[c.B > 1], th[c.B - 1]);
        CHECK(fh == fk, "%s [%s]: flags", c.name, vn);
        CHECK(same_bits(lh.data(), lk.data(), lh.size() * 4), "%s [%s]: log-probabilities %g vs %g", c.name, vn,
              double(lk[0]), double(lh[0]));
        CHECK(sh_ == sk, "%s [%s]: steps", c.name, vn);
        CHECK(same_bits(zh.data(), zk.data(), zh.size() * 4), "%s [%s]: penalized logits", c.name, vn);
        bool zero = true;
        for (int32_t v : counts) zero = zero && v == 0;
        CHECK(zero, "%s [%s]: penalty workspace back to zero", c.name, vn);
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
