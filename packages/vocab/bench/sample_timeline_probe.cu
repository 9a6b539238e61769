// Where a B = 1 sampler call's kernel time goes: the planned cluster kernels compiled with
// MLOPS_SAMPLE_TIMELINE (sample_cluster_kernel.cuh's MLOPS_SAMPLE_MARK points: %clock64 at thread 0 of each
// CTA of row 0), launched on the bench's rows (V = 151936 fp32 N(0, 3^2), T = 0.8), 30 launches a case after
// a warm-up; prints, a point, the median over launches of the slowest CTA's cycles since its start (and the
// fastest CTA's), of row 0's CTAs (at B = 64: a first-wave row, sharing its SMs); at B = 64 also every row's span in
// the last launch, by rounds (row_spans). Not part of the package; built and run by hand on an sm_90 GPU:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false -Ipackages/vocab/src -Ipackages/vocab/include \
//        -Ipackages/common/include -o /tmp/stp packages/vocab/bench/sample_timeline_probe.cu && /tmp/stp [B ...]
//
// (-I<dir> first, holding another sample_cluster_kernel.cuh with the same marks: the code before a change, timed in
// the same call. Since session 38 the kernel is split over sample_cluster_*.cuh, which it includes by quotes, so
// <dir> holds all of them, found beside the kernel file before the -I paths; a file from before the split stands alone.
// Headers from before the forms (sample_cluster_forms.cuh, session 38) take this probe's source of their own commit.)
#define MLOPS_SAMPLE_TIMELINE 1
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "sample_cluster_kernel.cuh"

using namespace mlops::vocab;

#include "probe_device.cuh"  // launch_clusters, CK

constexpr int kMarks = 16;
static const char* kMarkNames[kMarks] = {"start",          "penalties",      "staged",        "max",
                                         "top-k round 1",  "top-k gathered", "top-k done",    "wide top-p",
                                         "top-p done",     "drawn",          "end",           "wide: own bins",
                                         "wide: portions", "wide: crossing", "wide: listed",  "top-k: listed"};

// The last launch's rows (session 36: at B = 64 the rows run in rounds of the clusters in flight, 30 on the H200):
// rows grouped by start (a row starting > 2 us after the round's first opens the next round), a round's row count,
// start, and its rows' durations (min / median / max, us); then the launch's span from the first start to the last end.
// (MLOPS_SAMPLE_ROW_SPAN: a header from session 36 on; built against an older one, -I<dir>, the spans are left out.)
// reset_row_spans before each launch: starts at ~0 (atomicMin), ends at 0 (atomicMax); session 55's words (a header
// with MLOPS_SAMPLE_ROW_SPAN_WORDS): the latest start at 0, the earliest end at ~0.
#if defined(MLOPS_SAMPLE_ROW_SPAN_WORDS)
constexpr int kSpanWords = MLOPS_SAMPLE_ROW_SPAN_WORDS;
#else
constexpr int kSpanWords = 2;
#endif
static int reset_row_spans() {
#if defined(MLOPS_SAMPLE_ROW_SPAN)
  unsigned long long rows[64][kSpanWords];
  for (auto& r : rows)
    for (int w = 0; w < kSpanWords; ++w) r[w] = w == 0 || w == 3 ? ~0ull : 0ull;
  CK(cudaMemcpyToSymbol(g_sample_rows, rows, sizeof(rows)));
#endif
  return 0;
}

// Row 0's span in this launch (%globaltimer, ns): [0] first start to last end, [1] first to last start, [2] first to
// last end; false without the words.
static bool row0_span(double out[3]) {
#if defined(MLOPS_SAMPLE_ROW_SPAN) && defined(MLOPS_SAMPLE_ROW_SPAN_WORDS)
  unsigned long long r[kSpanWords];
  CK(cudaMemcpyFromSymbol(r, g_sample_rows, sizeof(r)));
  out[0] = double(r[1] - r[0]), out[1] = double(r[2] - r[0]), out[2] = double(r[1] - r[3]);
  return true;
#else
  (void)out;
  return false;
#endif
}

static int row_spans(int n) {
#if defined(MLOPS_SAMPLE_ROW_SPAN)
  unsigned long long rows[64][kSpanWords];
  CK(cudaMemcpyFromSymbol(rows, g_sample_rows, sizeof(rows)));
  std::vector<std::pair<double, double>> se;  // start, end (us from the earliest start)
  unsigned long long t0 = ~0ull, t1 = 0;
  for (int r = 0; r < n; ++r)
    if (rows[r][1]) t0 = std::min(t0, rows[r][0]), t1 = std::max(t1, rows[r][1]);
  for (int r = 0; r < n; ++r)
    if (rows[r][1]) se.push_back({(rows[r][0] - t0) / 1e3, (rows[r][1] - t0) / 1e3});
  std::sort(se.begin(), se.end());
  std::printf("  rows (%zu of %d timed): round  rows  start us  duration min / median / max us\n", se.size(), n);
  for (size_t i = 0, k = 0; i < se.size(); ++k) {
    size_t j = i;
    std::vector<double> d;
    while (j < se.size() && se[j].first - se[i].first <= 2.0) d.push_back(se[j].second - se[j].first), ++j;
    std::sort(d.begin(), d.end());
    std::printf("                          %5zu  %4zu  %8.2f  %6.2f / %6.2f / %6.2f\n", k, j - i, se[i].first, d.front(),
                d[d.size() / 2], d.back());
    i = j;
  }
  std::printf("  span of the launch's rows: %.2f us\n", (t1 - t0) / 1e3);
#else
  (void)n;
#endif
  return 0;
}

// F: the kernel's form (sample_cluster_forms.cuh); NT threads; the global-slice forms (F::gsl) keep the gathered list
// and the near codes (gsl_dyn_bytes) in dynamic shared memory.
template <int C, class F, int NT = kClusterThreads>
static int run_case(const char* name, SampleParams p, int launches) {
  auto kernel = sample_cluster_kernel<C, NT, F>;
  const size_t bytes = F::gsl ? size_t(gsl_dyn_bytes(p.vocab, C, NT))  // the gathered list and the near codes
                               : size_t(cluster_stage_bytes(p.vocab, C)) + (F::gather ? size_t(kGather) * 4 : 0);
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  std::vector<std::vector<double>> slow(kMarks), fast(kMarks), span(3);
  unsigned long long tl[16][16];
#if defined(MLOPS_SAMPLE_HAS_ROW_MARKS)
  const int nr = p.rows > 1 ? (int(p.rows) < 64 ? int(p.rows) : 64) : 0;  // rows whose points are kept (B > 1)
  static unsigned long long rm[64][16][16];
  std::vector<std::vector<double>> rows_slow(nr * kMarks);  // row r's point m at r * kMarks + m
#endif
  for (int it = 0; it < launches + 5; ++it) {
    const unsigned long long zero[16][16] = {};
    CK(cudaMemcpyToSymbol(g_sample_timeline, zero, sizeof(zero)));
#if defined(MLOPS_SAMPLE_HAS_ROW_MARKS)
    std::memset(rm, 0, sizeof(rm));
    CK(cudaMemcpyToSymbol(g_sample_row_marks, rm, sizeof(rm)));
#endif
    if (reset_row_spans()) return 1;
    if (launch_clusters(kernel, C, int(p.rows), NT, bytes, p)) return 1;
    CK(cudaDeviceSynchronize());
    if (it < 5) continue;
    double sp[3];
    if (row0_span(sp))
      for (int k = 0; k < 3; ++k) span[k].push_back(sp[k]);
    CK(cudaMemcpyFromSymbol(tl, g_sample_timeline, sizeof(tl)));
#if defined(MLOPS_SAMPLE_HAS_ROW_MARKS)
    if (nr) {
      CK(cudaMemcpyFromSymbol(rm, g_sample_row_marks, sizeof(rm)));
      for (int row = 0; row < nr; ++row)
        for (int m = 0; m < kMarks; ++m) {
          double hi = -1;
          for (int r = 0; r < C; ++r)
            if (rm[row][r][m]) hi = std::max(hi, double(rm[row][r][m] - rm[row][r][0]));
          if (hi >= 0) rows_slow[row * kMarks + m].push_back(hi);
        }
    }
#endif
    for (int m = 0; m < kMarks; ++m) {
      double hi = -1, lo = 1e30;
      for (int r = 0; r < C; ++r) {
        if (!tl[r][m]) continue;
        const double d = double(tl[r][m] - tl[r][0]);
        hi = std::max(hi, d);
        lo = std::min(lo, d);
      }
      if (hi >= 0) {
        slow[m].push_back(hi);
        fast[m].push_back(lo);
      }
    }
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  int32_t tok[2] = {0, 0};  // row 0's and the last row's tokens of the last launch: old and new code compared
  CK(cudaMemcpy(&tok[0], p.tokens, 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&tok[1], p.tokens + (p.rows - 1), 4, cudaMemcpyDeviceToHost));
  std::printf("%s (cluster %d, B = %lld; tokens %d %d)\n  point            slowest CTA cycles  fastest  (us at 1.98 GHz, slowest)\n",
              name, C, (long long)p.rows, tok[0], tok[1]);
#if !defined(MLOPS_SAMPLE_NEAR_MARKS) && !defined(MLOPS_SAMPLE_TP3_MARKS) && !defined(MLOPS_SAMPLE_DRAW_MARKS)
  static const int order[kMarks] = {0, 1, 2, 3, 4, 15, 5, 6, 11, 12, 13, 14, 7, 8, 9, 10};  // in time order
#else  // session 47 (53, 54): marks 4 / 15 / 5 / 6 inside the top-p near pass (tp3_rounds; mask_draw); by their time
  int order[kMarks];
  for (int m = 0; m < kMarks; ++m) order[m] = m;
  std::stable_sort(order, order + kMarks, [&](int a, int b) {
    return (slow[a].empty() ? 1e30 : med(slow[a])) < (slow[b].empty() ? 1e30 : med(slow[b]));
  });
#if defined(MLOPS_SAMPLE_NEAR_MARKS)
  kMarkNames[4] = "near: w0 pass", kMarkNames[15] = "near: block sum", kMarkNames[5] = "draw: sums";
  kMarkNames[6] = "draw: located";
#elif defined(MLOPS_SAMPLE_DRAW_MARKS)
  kMarkNames[5] = "draw: entered", kMarkNames[4] = "draw: zeroed", kMarkNames[15] = "draw: t0 added";
  kMarkNames[6] = "draw: sums";
#else
  kMarkNames[4] = "tp3: weighed", kMarkNames[15] = "tp3: chosen", kMarkNames[5] = "tp3: collected";
  kMarkNames[6] = "draw: sums";
#endif
#endif
  for (int m : order)
    if (!slow[m].empty())
      std::printf("  %-16s %10.0f %10.0f  %7.2f\n", kMarkNames[m], med(slow[m]), med(fast[m]), med(slow[m]) / 1980.0);
#if defined(MLOPS_SAMPLE_HAS_ROW_MARKS)
  // every row's points (session 41): the medians over launches of its slowest CTA's us at 1.98 GHz, rows by their end;
  // "end range": the row's end over the launches, min - max (a row slow in every launch: its data; else where it ran)
  if (nr) {
    std::vector<int> marks, idx(nr);
    for (int m : order)
      if (m != 0 && !rows_slow[m].empty()) marks.push_back(m);
    auto end_of = [&](int row) { return med(rows_slow[row * kMarks + 10]); };
    for (int r = 0; r < nr; ++r) idx[r] = r;
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return end_of(a) < end_of(b); });
    std::printf("  every row (us; by end):  row");
    for (int m : marks) std::printf(" | %s", kMarkNames[m]);
    std::printf(" | end range\n");
    for (int row : idx) {
      std::printf("  %28d", row);
      for (int m : marks) {
        const auto& v = rows_slow[row * kMarks + m];
        if (v.empty()) std::printf(" | %6s", "-");
        else std::printf(" | %6.2f", med(v) / 1980.0);
      }
      const auto& e = rows_slow[row * kMarks + 10];
      std::printf(" | %.2f - %.2f\n", *std::min_element(e.begin(), e.end()) / 1980.0,
                  *std::max_element(e.begin(), e.end()) / 1980.0);
    }
  }
#endif
  if (!span[0].empty())
    std::printf("  row 0 by %%globaltimer (median of launches): first start to last end %.2f us, starts spread %.2f, "
                "ends spread %.2f\n", med(span[0]) / 1e3, med(span[1]) / 1e3, med(span[2]) / 1e3);
  if (p.rows > 1) return row_spans(int(p.rows) < 64 ? int(p.rows) : 64);
  return 0;
}

#if defined(MLOPS_SAMPLE_HAS_GSL)
// The global-slice tp3 forms (cluster2_tp3g / cluster4_tp3g, session 38): 1024 threads, the gathered list alone in
// dynamic shared memory. Compiled out against a header from before them (-I<dir>).
template <int C, int NT = 1024>
static int run_gsl(const char* name, SampleParams p, int launches) {
  return run_case<C, Tp3gForm, NT>(name, p, launches);
}
#endif

// Arguments: the batch sizes to run (1 .. 64; default 1 64): B = 1 the planned cluster16 kernels, B > 1 B = 64's
// cluster8 ones (session 36: B = 16 / 30 put one / two rows' CTAs on an SM, for the row spans).
int main(int argc, char** argv) {
  std::vector<int> batches;
  for (int a = 1; a < argc; ++a) batches.push_back(std::max(1, std::min(64, std::atoi(argv[a]))));
  if (batches.empty()) batches = {1, 64};
  const int64_t V = 151936;
  const int B = 64;  // rows allocated; p.rows is each case's B
  std::mt19937 rng(1234);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> hz(size_t(B) * V);
  for (auto& x : hz) x = nd(rng);
  // Session 55: MLOPS_PROBE_ROWS=<file> (raw fp32, a whole number of rows of V, e.g. the bench's torch.randn rows
  // saved by tensor.numpy().tofile) replaces the rows, repeated to B: the marks on the very rows the bench times (its
  // rows and these N(0, 3^2) ones are drawn alike but are not the same numbers, and top-p's and the draws' work
  // depends on where the threshold falls).
  if (const char* path = std::getenv("MLOPS_PROBE_ROWS")) {
    FILE* f = std::fopen(path, "rb");
    if (!f) return std::fprintf(stderr, "MLOPS_PROBE_ROWS: cannot open %s\n", path), 1;
    const size_t got = std::fread(hz.data(), sizeof(float), hz.size(), f);
    std::fclose(f);
    if (got == 0 || got % size_t(V))
      return std::fprintf(stderr, "MLOPS_PROBE_ROWS: %zu floats, not rows of %lld\n", got, (long long)V), 1;
    for (size_t i = got; i < hz.size(); ++i) hz[i] = hz[i % got];
    std::printf("rows: %zu from %s\n", got / size_t(V), path);
  }
  float* z;
  mlops_sample_config* cf;
  uint64_t* seeds;
  int64_t* steps;
  int32_t *tokens, *flags, *counts, *hist, *hlen;
  CK(cudaMalloc(&z, hz.size() * 4));
  CK(cudaMalloc(&cf, sizeof(mlops_sample_config) * B));
  CK(cudaMalloc(&seeds, 8 * B));
  CK(cudaMalloc(&steps, 8 * B));
  CK(cudaMalloc(&tokens, 4 * B));
  CK(cudaMalloc(&flags, 4 * B));
  CK(cudaMalloc(&counts, 4 * size_t(B) * V));
  CK(cudaMalloc(&hist, 4 * 64 * B));
  CK(cudaMalloc(&hlen, 4 * B));
  CK(cudaMemset(counts, 0, 4 * size_t(B) * V));
  CK(cudaMemset(seeds, 7, 8 * B));
  CK(cudaMemset(steps, 0, 8 * B));
  std::vector<int32_t> hh(64 * B), hl(B, 64);
  for (auto& t : hh) t = int32_t(rng() % V);
  CK(cudaMemcpy(hist, hh.data(), 4 * hh.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(hlen, hl.data(), 4 * hl.size(), cudaMemcpyHostToDevice));
  SampleParams p = {};
  p.rows = 1;
  p.vocab = V;
  p.logits = z;
  p.logits_stride = V;
  p.configs = cf;
  p.seeds = seeds;
  p.steps = steps;
  p.tokens = tokens;
  p.flags = flags;
  auto set = [&](float t, int k, float tp, float mp, float rep) -> int {
    std::vector<mlops_sample_config> c(B);
    for (auto& x : c) x = mlops_sample_config{t, k, tp, mp, rep, rep != 1.0f ? 0.1f : 0.0f, 0.0f, 0};
    CK(cudaMemcpy(z, hz.data(), hz.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(cf, c.data(), sizeof(mlops_sample_config) * B, cudaMemcpyHostToDevice));
    return 0;
  };
  const int n = 30;
  // the plan at B = 1 (mlops_sample_plan_configs): lean for temperature, tk where every row has top-k,
  // wide for top-p alone (penalties too); at B = 64: cluster8 lean / tk, tp3 for top-p alone
  for (int b : batches) {
    p.rows = b;
    p.history = nullptr;
    p.history_stride = 0;
    p.history_len = nullptr;
    p.penalty_counts = nullptr;
    if (b == 1) {
      if (set(0.0f, 0, 1.0f, 0.0f, 1.0f) ||
          run_case<16, LeanForm>("greedy, cluster16_lean", p, n))
        return 1;
      if (set(0.8f, 0, 1.0f, 0.0f, 1.0f) ||
          run_case<16, LeanForm>("temperature, cluster16_lean", p, n))
        return 1;
      if (set(0.8f, 50, 1.0f, 0.0f, 1.0f) ||
          run_case<16, TkForm>("top-k 50, cluster16_tk", p, n))
        return 1;
      if (set(0.8f, 50, 0.9f, 0.05f, 1.0f) ||
          run_case<16, TkForm>("top-k + top-p + min-p, cluster16_tk", p, n))
        return 1;
      if (set(0.8f, 0, 0.9f, 0.0f, 1.0f) ||
          run_case<16, WideForm>("top-p 0.9, cluster16_wide", p, n))
        return 1;
      if (set(0.8f, 0, 0.9f, 0.0f, 1.0f) ||
          run_case<16, Tp3Form>("top-p 0.9, cluster16_tp3", p, n))
        return 1;
#if defined(MLOPS_PROBE_T1024)  // session 47: the B = 1 forms at 1024 threads a CTA (twice the warps an SM)
      if (set(0.8f, 50, 1.0f, 0.0f, 1.0f) || run_case<16, TkForm, 1024>("top-k 50, cluster16_tk_t1024", p, n)) return 1;
      if (set(0.8f, 0, 0.9f, 0.0f, 1.0f) || run_case<16, WideForm, 1024>("top-p 0.9, cluster16_wide_t1024", p, n))
        return 1;
#endif
    } else {
      if (set(0.8f, 0, 1.0f, 0.0f, 1.0f) ||
          run_case<8, LeanForm>("temperature, cluster8_lean", p, n))
        return 1;
      if (set(0.8f, 50, 1.0f, 0.0f, 1.0f) ||
          run_case<8, TkForm>("top-k 50, cluster8_tk", p, n))
        return 1;
      if (set(0.8f, 50, 0.9f, 0.05f, 1.0f) ||
          run_case<8, TkForm>("top-k + top-p + min-p, cluster8_tk", p, n))
        return 1;
      if (set(0.8f, 0, 0.9f, 0.0f, 1.0f) ||
          run_case<8, Tp3Form>("top-p 0.9, cluster8_tp3", p, n))
        return 1;
#if defined(MLOPS_SAMPLE_HAS_GSL)  // every mode on the global-slice form: 2 CTAs a row above B = 32, else 4
      const struct { const char* name; float t; int k; float tp, mp; } g[] = {
          {"temperature, %s", 0.8f, 0, 1.0f, 0.0f}, {"top-k 50, %s", 0.8f, 50, 1.0f, 0.0f},
          {"top-k + top-p + min-p, %s", 0.8f, 50, 0.9f, 0.05f}, {"top-p 0.9, %s", 0.8f, 0, 0.9f, 0.0f}};
      for (const auto& c : g) {
        char nm[96];
        std::snprintf(nm, sizeof nm, c.name, b > 32 ? "cluster2_tp3g" : "cluster4_tp3g");
        if (set(c.t, c.k, c.tp, c.mp, 1.0f) || (b > 32 ? run_gsl<2>(nm, p, n) : run_gsl<4>(nm, p, n))) return 1;
      }
      if (b > 32 && (set(0.8f, 0, 0.9f, 0.0f, 1.0f) || run_gsl<2, 512>("top-p 0.9, cluster2_tp3g_t512", p, n))) return 1;
#endif
    }
    p.history = hist;
    p.history_stride = 64;
    p.history_len = hlen;
    p.penalty_counts = counts;
    if (b == 1 && (set(0.8f, 0, 0.9f, 0.0f, 1.2f) ||
                   run_case<16, WideForm>("penalties + top-p, cluster16_wide", p, n)))
      return 1;
    if (b > 1 && (set(0.8f, 0, 0.9f, 0.0f, 1.2f) ||
                   run_case<8, Tp3Form>("penalties + top-p, cluster8_tp3", p, n)))
      return 1;
#if defined(MLOPS_SAMPLE_HAS_GSL)
    if (b > 1 && (set(0.8f, 0, 0.9f, 0.0f, 1.2f) || (b > 32 ? run_gsl<2>("penalties + top-p, cluster2_tp3g", p, n)
                                                             : run_gsl<4>("penalties + top-p, cluster4_tp3g", p, n))))
      return 1;
#endif
  }
  return 0;
}
