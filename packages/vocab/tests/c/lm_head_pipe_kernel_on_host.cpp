// The cp.async-pipelined LM head's device code (src/lm_head_pipe_kernel.cuh: the per-warp chunk
// streams across tiles, the stage rotation and wait counts, the swizzled shared layout, the k
// permutation of the fragments, the zero fill past V and H, the segment fold and the epilogue with
// its statistics) compiled by the host compiler and run with one fiber an emulated GPU thread
// (mlops/common/testing/cuda_on_host.h; the header's host primitives: cp.async copies deferred to the wait that needs
// them, the MMA gathered over the warp and summed in double). Checked bit for bit against a mirror
// of the order the kernel must follow (per segment: for each 32-k step the two k16 MMAs over
// k0 + 8t + {0..3} and k0 + 8t + {4..7}, t = 0..3, each rounded to float once; segments added in
// order; the epilogue), against float64 within the fp32 bound, statistics against the logits
// written, and nothing written past the logits' columns; for M = 1, 3, 8, stages 2, 3, 4, 6, grids of 1,
// 2 and every tile, H with partial chunks and empty segments, V not a multiple of 32.
// Prints "N passed, M failed".
#include "mlops/common/testing/cuda_on_host.h"
#ifndef MLOPS_CUDA_ON_HOST
#define MLOPS_CUDA_ON_HOST 1
#endif
#include "lm_head_pipe_kernel.cuh"

#include <algorithm>

#include "lm_head_pipe_order.h"

int main() {
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Shape { int64_t V, H; };
  // H = 8: one 16-byte column of one chunk, seven empty segments; 264: a warp with four chunks, one
  // with a partial chunk; 520: three units over 8 segments; 2056: 9 units (one segment of two, its
  // chunks spanning several stage rotations); V: 1 .. 31 rows in the last tile, several tiles a CTA
  const Shape shapes[] = {{37, 8}, {45, 264}, {300, 520}, {29, 2056}, {161, 1024}};
  for (const Shape sh : shapes) {
    for (int M : {1, 3, 8}) {
      const Problem pr(sh.V, sh.H, M, gen, nd);
      LmHeadParams p = pr.p;  // the launch's outputs set below
      const int64_t tiles = (sh.V + kTileRows - 1) / kTileRows;
      for (int stages : {2, 3, 4, 6}) {
        for (int64_t grid : {int64_t(1), int64_t(2), tiles}) {
          if ((stages == 3 || stages == 6) && grid != 2) continue;  // time: 3 and 6 stages on one grid
          std::vector<float> got(size_t(M * pr.ls), -1.0f);
          std::vector<uint64_t> best(static_cast<size_t>(M), 0);
          std::vector<uint32_t> hist(size_t(M * 256), 0);
          p.logits = got.data(); p.best = best.data(); p.key_hist = hist.data();
          // the warp-aggregated counts (the _agg variant) with 2 and 4 stages, per-row atomics with 3 and 6
          const bool agg = stages == 2 || stages == 4;
          run_grid(dim3(unsigned(grid)), kThreads, [&] { lm_head_pipe_kernel(p, stages, agg); });
          const char* f = "M=%d V=%lld H=%lld stages=%d grid=%lld";
          const long long V = sh.V, H = sh.H, G = grid;
          CHECK(std::memcmp(pr.want.data(), got.data(), pr.want.size() * 4) == 0, "logits (mirror order, padding) " "M=%d V=%lld H=%lld stages=%d grid=%lld", M, V, H, stages, G);
          double worst = 0.0;
          std::vector<uint64_t> best_want(static_cast<size_t>(M), 0);
          std::vector<uint32_t> hist_want(size_t(M * 256), 0);
          for (int m = 0; m < M; ++m)
            for (int64_t v = 0; v < sh.V; ++v) {
              double ref = 0.0, mag = 0.0;
              for (int64_t k = 0; k < sh.H; ++k) {
                ref += bf(pr.x[size_t(m * pr.xs + k)]) * bf(pr.w[size_t(v * pr.ws + k)]);
                mag += std::fabs(bf(pr.x[size_t(m * pr.xs + k)]) * bf(pr.w[size_t(v * pr.ws + k)]));
              }
              const double scale = double(pr.rs[size_t(m)]) * 0.75;
              const float g = got[size_t(m * pr.ls + v)];
              const double bound = 2.0 * (double(sh.H) / 8 + 8) * std::ldexp(1.0, -24) * mag * scale + 1e-30;
              worst = std::max(worst, std::fabs(double(g) - ref * scale) / bound);
              const uint32_t key = key_of(g);
              const uint64_t b = pack_best(key, uint32_t(v));
              if (b > best_want[size_t(m)]) best_want[size_t(m)] = b;
              ++hist_want[size_t(m * 256 + (key >> 24))];
            }
          CHECK(worst <= 1.0, "float64 bound: worst %.3g, M=%d V=%lld H=%lld stages=%d grid=%lld", worst, M, V, H, stages, G);
          CHECK(best == best_want, "best M=%d V=%lld H=%lld stages=%d grid=%lld", M, V, H, stages, G);
          CHECK(hist == hist_want, "key counts M=%d V=%lld H=%lld stages=%d grid=%lld", M, V, H, stages, G);
          (void)f;
        }
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
