// The one-stream-per-SM LM head's device code (src/lm_head_stream_kernel.cuh: contiguous rows per CTA,
// chunks of 8 / 16 / 32 rows, the per-warp chunk stream across sub-tiles and tiles, the stage
// rotation and wait counts, the swizzled shared layout, x held in registers, the zero fill past the
// CTA's rows, the segment and H, the half-empty MMA of 8-row chunks, the segment fold, the epilogue
// and its statistics) compiled by the host compiler and run with one fiber an emulated GPU
// thread (mlops/common/testing/cuda_on_host.h, and the primitives of lm_head_pipe_kernel.cuh: cp.async copies deferred to
// the wait that needs them, the MMA gathered over the warp and summed in double). The stage memory
// is poisoned (0xff bytes: bf16 NaNs) before every launch, so a read of a stage no copy filled shows.
// Checked bit for bit against a mirror of the order (that of the pipe kernel: per segment, for each
// 32-k step the two k16 MMAs over k0 + 8t + {0..3} and k0 + 8t + {4..7}, each rounded to float once;
// segments added in order), against float64 within the fp32 bound, the statistics against the
// logits written, and nothing written past the logits' columns; M = 1, 3, 8, stages 2 and 3 (the
// 4 KB chunks of the _deep forms: 2 and 6), grids
// that split V unevenly (1 row a CTA included), row blocks in turn (rr: several a CTA, or none),
// H with partial chunks and empty segments.
// Prints "N passed, M failed".
#include "mlops/common/testing/cuda_on_host.h"
#ifndef MLOPS_CUDA_ON_HOST
#define MLOPS_CUDA_ON_HOST 1
#endif
#include "lm_head_stream_kernel.cuh"

#include <algorithm>

#include "lm_head_pipe_order.h"

template <int ROWS, int CHUNK = kStreamChunkBytes>
static void launch(const LmHeadParams& p, int64_t grid, int stages, bool tlb, bool rr) {
  std::memset(pipe_stage_mem(), 0xff, sizeof g_pipe_stage_mem);
  run_grid(dim3(unsigned(grid)), kThreads, [&] { lm_head_stream_kernel<ROWS, CHUNK>(p, stages, tlb, rr); });
}

int main() {
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Shape { int64_t V, H; };
  // H = 8: one 16-byte column, seven empty segments; 264: four segments of nothing, one of a unit
  // and 8 columns; 520: three units over 8 segments; 2056: 9 units (a segment of 264 columns);
  // 4096: every segment a full 512 (one 8-row chunk, two 16-row, four 32-row chunks of it);
  // V: CTAs of 1 .. 100 rows, partial 8-, 16- and 32-row chunks
  const Shape shapes[] = {{37, 8}, {45, 264}, {300, 520}, {29, 2056}, {70, 4096}};
  for (const Shape sh : shapes) {
    for (int M : {1, 3, 8}) {
      const Problem pr(sh.V, sh.H, M, gen, nd);
      LmHeadParams p = pr.p;  // the launch's outputs set below
      std::vector<double> ref(size_t(M * sh.V)), mag(size_t(M * sh.V));
      for (int m = 0; m < M; ++m)
        for (int64_t v = 0; v < sh.V; ++v)
          for (int64_t k = 0; k < sh.H; ++k) {
            const double prod = bf(pr.x[size_t(m * pr.xs + k)]) * bf(pr.w[size_t(v * pr.ws + k)]);
            ref[size_t(m * sh.V + v)] += prod;
            mag[size_t(m * sh.V + v)] += std::fabs(prod);
          }
      // rows 0: the _deep form (16 rows x 128 k, 4 KB chunks), with 2 or 6 stages
      for (int rows : {8, 16, 32, 0}) {
        for (int stages3 : {2, 3}) {
          const int stages = rows == 0 && stages3 == 3 ? 6 : stages3;
          for (int64_t grid : {int64_t(1), int64_t(3), int64_t(7), sh.V})
          for (bool rr : {false, true}) {
            // time: the 1-row CTAs (grid = V) only for the smallest V at M = 1, 2 stages on one grid
            if (grid == sh.V && (sh.V > 40 || M != 1)) continue;
            if (stages3 == 2 && (grid != 3 || M == 3)) continue;
            if (sh.H == 4096 && (M == 3 || grid == 7)) continue;  // the costliest shape: fewer runs
            // row blocks in turn: 3 CTAs (several blocks each, a partial last one) and grid = V
            // (CTAs past the last block take none)
            if (rr && grid != 3 && grid != sh.V) continue;
            const bool tlb = grid == 7;
            std::vector<float> got(size_t(M * pr.ls), -1.0f);
            std::vector<uint64_t> best(static_cast<size_t>(M), 0);
            std::vector<uint32_t> hist(size_t(M * 256), 0);
            p.logits = got.data(); p.best = best.data(); p.key_hist = hist.data();
            if (rows == 8) launch<8>(p, grid, stages, tlb, rr);
            if (rows == 16) launch<16>(p, grid, stages, tlb, rr);
            if (rows == 32) launch<32>(p, grid, stages, tlb, rr);
            if (rows == 0) launch<16, 4096>(p, grid, stages, tlb, rr);
            const long long V = sh.V, H = sh.H, G = rr ? -grid : grid;  // a negative grid: rr
            CHECK(std::memcmp(pr.want.data(), got.data(), pr.want.size() * 4) == 0,
                  "logits (mirror order, padding) M=%d V=%lld H=%lld rows=%d stages=%d grid=%lld", M, V, H, rows,
                  stages, G);
            double worst = 0.0;
            std::vector<uint64_t> best_want(static_cast<size_t>(M), 0);
            std::vector<uint32_t> hist_want(size_t(M * 256), 0);
            for (int m = 0; m < M; ++m)
              for (int64_t v = 0; v < sh.V; ++v) {
                const double scale = double(pr.rs[size_t(m)]) * 0.75;
                const float g = got[size_t(m * pr.ls + v)];
                const double bound = 2.0 * (double(sh.H) / 8 + 8) * std::ldexp(1.0, -24) * mag[size_t(m * sh.V + v)] * scale + 1e-30;
                worst = std::max(worst, std::fabs(double(g) - ref[size_t(m * sh.V + v)] * scale) / bound);
                const uint32_t key = key_of(g);
                const uint64_t b = pack_best(key, uint32_t(v));
                if (b > best_want[size_t(m)]) best_want[size_t(m)] = b;
                ++hist_want[size_t(m * 256 + (key >> 24))];
              }
            CHECK(worst <= 1.0, "float64 bound: worst %.3g, M=%d V=%lld H=%lld rows=%d stages=%d grid=%lld", worst, M,
                  V, H, rows, stages, G);
            CHECK(best == best_want, "best M=%d V=%lld H=%lld rows=%d stages=%d grid=%lld", M, V, H, rows, stages, G);
            CHECK(hist == hist_want, "key counts M=%d V=%lld H=%lld rows=%d stages=%d grid=%lld", M, V, H, rows,
                  stages, G);
          }
        }
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
