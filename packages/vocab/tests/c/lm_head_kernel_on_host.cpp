// The CUDA-core LM head's device code (src/lm_head_kernel.cuh: the segment split, the 16-byte
// loads, the reduce-scatter whose tree must be fixed_sum.h's butterfly, the segment fold, the
// epilogue and its statistics, the persistent grid's tile stride) compiled by the host compiler and
// run with one fiber an emulated GPU thread (mlops/common/testing/cuda_on_host.h), against the host emulation
// (src/lm_head_host.cpp), bit for bit: logits, best and key-byte counts, for M = 1 .. 8, hidden
// sizes with partial units and empty segments, and grids of 1, 2 and every tile.
// Prints "N passed, M failed".
#include "mlops/common/testing/cuda_on_host.h"
#include "lm_head_kernel.cuh"

using namespace mlops::vocab;

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

static uint16_t bf16_of(float f) { return mlops::f32_to_bf16_int(f); }

// What lm_head_launch_cuda_core does (clear the statistics, launch MT's instance), on the host.
static void emulate(const LmHeadParams& p, int64_t grid) {
  if (p.best) std::memset(p.best, 0, sizeof(uint64_t) * p.tokens);
  if (p.key_hist) std::memset(p.key_hist, 0, sizeof(uint32_t) * 256 * p.tokens);
  const dim3 g{unsigned(grid), 1, 1};
  if (p.tokens <= 1) run_grid(g, 256, [&] { lm_head_cc_kernel<1>(p); });
  else if (p.tokens <= 2) run_grid(g, 256, [&] { lm_head_cc_kernel<2>(p); });
  else if (p.tokens <= 4) run_grid(g, 256, [&] { lm_head_cc_kernel<4>(p); });
  else run_grid(g, 256, [&] { lm_head_cc_kernel<8>(p); });
}

int main() {
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Shape { int64_t V, H; };
  // H = 8: one lane of one unit, seven empty segments; 264: a partial second unit; 2056: 9 units
  // over 8 segments (one segment of two)
  const Shape shapes[] = {{37, 8}, {45, 264}, {29, 2056}};
  for (const Shape sh : shapes) {
    for (int M : {1, 2, 3, 5, 8}) {
      const int64_t xs = sh.H + 8, ws = sh.H + 16, ls = sh.V + 3;  // padded strides
      std::vector<uint16_t> x(size_t(M * xs)), w(size_t(sh.V * ws));
      for (auto& v : x) v = bf16_of(nd(gen));
      for (auto& v : w) v = bf16_of(nd(gen) * 0.1f);
      std::vector<float> rs(static_cast<size_t>(M));
      for (auto& v : rs) v = 0.5f + std::fabs(nd(gen));
      LmHeadParams p{};
      p.tokens = M; p.hidden = sh.H; p.vocab = sh.V; p.units = int((sh.H + 255) / 256);
      p.x = x.data(); p.x_stride = xs; p.weight = w.data(); p.weight_stride = ws;
      p.logits_stride = ls; p.row_scale = rs.data(); p.logit_scale = 0.75f;
      std::vector<float> lh(size_t(M * ls), -1.0f), lk(size_t(M * ls), -1.0f);
      std::vector<uint64_t> bh(static_cast<size_t>(M)), bk(static_cast<size_t>(M));
      std::vector<uint32_t> hh(size_t(M * 256)), hk(size_t(M * 256));
      p.logits = lh.data(); p.best = bh.data(); p.key_hist = hh.data();
      lm_head_host(p);
      const int64_t tiles = (sh.V + lm_head_tile_rows(M) - 1) / lm_head_tile_rows(M);
      for (int64_t grid : {int64_t(1), int64_t(2), tiles}) {
        std::fill(lk.begin(), lk.end(), -1.0f);
        p.logits = lk.data(); p.best = bk.data(); p.key_hist = hk.data();
        emulate(p, grid);
        CHECK(std::memcmp(lh.data(), lk.data(), lh.size() * 4) == 0, "logits M=%d V=%lld H=%lld grid=%lld", M,
              (long long)sh.V, (long long)sh.H, (long long)grid);
        CHECK(bh == bk, "best M=%d H=%lld grid=%lld", M, (long long)sh.H, (long long)grid);
        CHECK(hh == hk, "key counts M=%d H=%lld grid=%lld", M, (long long)sh.H, (long long)grid);
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
