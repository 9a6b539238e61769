// The embed kernels' device code (src/embed_kernel.cuh: tokens and units over warps for every
// variant, 16-byte and scalar paths, partial units, OOV rows, bf16(x * w), the per-unit sums by the
// warp butterfly and the fold into r) run with one fiber an emulated GPU thread
// (mlops/common/testing/cuda_on_host.h) against the host emulation (src/embed_host.cpp), bit for bit. The sm_80
// cvt.rn.bf16x2 path is the GPU suite's (here the integer rounding runs, as below sm_80).
// Prints "N passed, M failed".
#include "mlops/common/testing/cuda_on_host.h"
#define MLOPS_VOCAB_EXTERN_SHARED(type, name) static type name[8 * 512]
#include "embed_kernel.cuh"

using namespace mlops::vocab;

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

template <class T>
static bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

int main() {
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int64_t V = 11;
  for (int dt : {MLOPS_DTYPE_BF16, MLOPS_DTYPE_FP16, MLOPS_DTYPE_FP32}) {
    for (int64_t H : {int64_t(40), int64_t(256), int64_t(1000), int64_t(1032)}) {
      for (bool aligned : {true, false}) {
        const int64_t ts = aligned ? H + 8 : H + 1;  // a stride that breaks 16-byte access
        const int es = dt == MLOPS_DTYPE_FP32 ? 4 : 2;
        std::vector<uint8_t> table(size_t(V * ts * es));
        for (int64_t i = 0; i < V * ts; ++i) {
          const float f = nd(gen);
          if (dt == MLOPS_DTYPE_FP32) std::memcpy(&table[size_t(i) * 4], &f, 4);
          else {
            const uint16_t h = dt == MLOPS_DTYPE_BF16 ? mlops::f32_to_bf16_int(f) : mlops::f32_to_f16_int(f);
            std::memcpy(&table[size_t(i) * 2], &h, 2);
          }
        }
        std::vector<float> w(static_cast<size_t>(H));
        for (auto& v : w) v = 1.0f + 0.1f * nd(gen);
        const int32_t ids[] = {3, 10, 11, -1, 0, 7, 7, 2, 5};
        const int64_t T = 9, U = (H + 255) / 256;
        for (int W : {1, 2, 4, 8}) {
          EmbedParams p{};
          p.tokens = T; p.hidden = H; p.vocab = V; p.units = int(U);
          p.id_dtype = MLOPS_DTYPE_INT32; p.table_dtype = dt; p.w_dtype = MLOPS_DTYPE_FP32;
          p.ids = ids; p.table = table.data(); p.table_stride = ts;
          p.out_stride = H; p.norm_weight = w.data(); p.xw_stride = H; p.unit_sumsq_stride = U; p.eps = 1e-6f;
          p.vec_ok = aligned && H % 8 == 0;
          std::vector<float> oh(size_t(T * H)), ok(size_t(T * H)), sh_(size_t(T * U)), sk(size_t(T * U)), rh(static_cast<size_t>(T)),
              rk(static_cast<size_t>(T));
          std::vector<uint16_t> xh(size_t(T * H)), xk(size_t(T * H));
          int32_t fh = 0, fk = 0;
          p.out = oh.data(); p.xw = xh.data(); p.unit_sumsq = sh_.data(); p.rms_r = rh.data(); p.oov_flag = &fh;
          embed_host(p);
          p.out = ok.data(); p.xw = xk.data(); p.unit_sumsq = sk.data(); p.rms_r = rk.data(); p.oov_flag = &fk;
          const int tokens_per_cta = 8 / W;
          const dim3 grid{unsigned((T + tokens_per_cta - 1) / tokens_per_cta), 1, 1};
          if (W == 1) run_grid(grid, 256, [&] { embed_kernel<1>(p); });
          else if (W == 2) run_grid(grid, 256, [&] { embed_kernel<2>(p); });
          else if (W == 4) run_grid(grid, 256, [&] { embed_kernel<4>(p); });
          else run_grid(grid, 256, [&] { embed_kernel<8>(p); });
          CHECK(same(oh, ok) && same(xh, xk), "rows / xw dtype=%d H=%lld aligned=%d W=%d", dt, (long long)H, aligned, W);
          CHECK(same(sh_, sk) && same(rh, rk), "sums / r dtype=%d H=%lld aligned=%d W=%d", dt, (long long)H, aligned, W);
          CHECK(fh == 1 && fk == 1, "OOV flag dtype=%d H=%lld W=%d", dt, (long long)H, W);
        }
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
