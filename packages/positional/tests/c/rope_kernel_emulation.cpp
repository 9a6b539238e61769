// The RoPE CUDA kernel (src/rope_kernel.cuh) compiled as host C++ and run as the GPU would run
// it: each CTA as 256 fibers (mlops/common/testing/fibers.h), __syncthreads as a barrier, shared memory a buffer the
// CTA's threads share, blockIdx / threadIdx per thread. Linked with the real C API (rope_api.cpp) and
// host emulation (rope_host.cpp), so mlops_rope() here drives the kernel's index, vectorization
// and CTA-split logic, and its bits are compared with mlops_rope_host() over dtypes, layouts,
// shapes, alignments (of the data and of the cache), in place / out of place, cache / on the fly, mrope, out-of-range
// positions and CTA splits. The CPU suite builds and runs it (tests/test_positional_kernel_emulation.py):
// the kernel logic is checked in CI although CI has no GPU. Prints "N passed, M failed".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "mlops/common/testing/fibers.h"
#include "mlops/rope.h"
#include "rope_kernel.cuh"

namespace fibers = mlops::testing::fibers;
dim3 threadIdx;  // the running fiber's (set by run_grid's resume hook)
dim3 blockIdx;
namespace mlops::rope {
alignas(16) float smem[24576];  // 96 KB: more than any case below needs (checked; stage8: 64 KB of slots)
}
static fibers::Barrier g_sync;
void __syncthreads() { g_sync.arrive_and_wait(); }
// A warp's barrier: the dec kernels call it with all 32 threads of a warp or none (a warp past the
// tokens returns as a whole), so a barrier of 32 a warp stands for it (and orders its shared memory).
static fibers::Barrier g_warp_sync[mlops::rope::kCtaThreads / 32];
void __syncwarp(unsigned) { g_warp_sync[threadIdx.x / 32].arrive_and_wait(); }
static int g_sms = 4;
int emulated_sms() { return g_sms; }
static int g_vec_runs, g_scalar_runs;
static int g_variant_runs[mlops::rope::kNumVariants + 1];

namespace mlops::rope {

template <class T>
void run_grid(const Params& p, bool vec, int layout, int variant) {
  const unsigned gx = unsigned(p.grid_x), gy = unsigned((p.heads + p.hpc - 1) / p.hpc);  // the launch's grid
  if (smem_for<T>(p, vec, layout, variant) > sizeof(smem)) {
    std::printf("shared memory %zu > %zu\n", smem_for<T>(p, vec, layout, variant), sizeof(smem));
    std::abort();
  }
  const KernelFn kernel = kernel_for<T>(vec, layout, kernel_variant(p, vec, variant));  // the launch's own mapping
  g_sync = fibers::Barrier(kCtaThreads);
  for (int w = 0; w < kCtaThreads / 32; ++w) g_warp_sync[w] = fibers::Barrier(32);
  for (unsigned y = 0; y < gy; ++y)
    for (unsigned x = 0; x < gx; ++x) {  // a CTA at a time: it is done before the next one reuses shared memory
      blockIdx.x = x;
      blockIdx.y = y;
      fibers::run(kCtaThreads, [&](int) { kernel(p); }, [](int t) { threadIdx.x = unsigned(t); });
    }
  (vec ? g_vec_runs : g_scalar_runs)++;
  g_variant_runs[variant]++;
}

cudaError_t launch_bf16(const Params& p, bool vec, int layout, int variant, cudaStream_t) {
  run_grid<bf16>(p, vec, layout, variant);
  return cudaSuccess;
}
cudaError_t launch_fp16(const Params& p, bool vec, int layout, int variant, cudaStream_t) {
  run_grid<f16>(p, vec, layout, variant);
  return cudaSuccess;
}
cudaError_t launch_fp32(const Params& p, bool vec, int layout, int variant, cudaStream_t) {
  run_grid<float>(p, vec, layout, variant);
  return cudaSuccess;
}
cudaError_t launch_cache(const float* f, long long half, float s, long long n, float* c, cudaStream_t) {
  cache_host(f, half, s, n, c);
  return cudaSuccess;
}

}  // namespace mlops::rope

static int passed, failed;

struct Shape {
  int hq, hk, d, rd;
};

int main() {
  using namespace mlops::rope;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  const Shape shapes[] = {{8, 2, 128, 128}, {4, 2, 80, 32}, {3, 1, 96, 66}, {2, 2, 256, 192}, {5, 1, 64, 64}};
  const mlops_dtype dtypes[] = {MLOPS_DTYPE_BF16, MLOPS_DTYPE_FP16, MLOPS_DTYPE_FP32};
  const long long B = 2, S = 9, T = B * S, MAXPOS = 300;
  int case_id = 0;
  // every kernel variant over every case, and first variant 0: the planner's kernel (dec from the cache at
  // tokens_per_cta 0, a split kernel where the case sets its own split)
  for (int kv = 0; kv <= kNumVariants; ++kv)
  for (mlops_dtype dt : dtypes)
    for (int layout = 0; layout < 2; ++layout)
      for (const Shape& sh : shapes)
        for (int kind = 0; kind < 5; ++kind, ++case_id) {
          const int es = mlops_dtype_size(dt);
          const bool misaligned = kind == 2;
          const bool inplace = kind == 0 || kind == 3;
          const bool on_the_fly = kind == 1 || kind == 3;
          const bool mrope = kind == 4 && (sh.rd / 2) >= 3;
          const int tpc[] = {0, 1, 3, 2, 16}, hpc[] = {0, 3, 0, 1, 0};
          const long long tok_stride = (long long)(sh.hq + 2 * sh.hk) * sh.d + (misaligned ? 1 : 0);
          const long long out_stride = (long long)(sh.hq + sh.hk) * sh.d + 8;
          const size_t in_elems = size_t(T * tok_stride + 8), out_elems = size_t(T * out_stride + 8);
          std::vector<unsigned char> in(in_elems * es), out_dev(out_elems * es), out_host(out_elems * es);
          for (size_t i = 0; i < in_elems; ++i) {
            const float v = uni(rng);
            if (dt == MLOPS_DTYPE_BF16) { u16 h = f32_to_bf16_int(v); std::memcpy(&in[i * es], &h, 2); }
            else if (dt == MLOPS_DTYPE_FP16) { u16 h = f32_to_f16_int(v); std::memcpy(&in[i * es], &h, 2); }
            else std::memcpy(&in[i * es], &v, 4);
          }
          for (size_t i = 0; i < out_elems * es; ++i) out_dev[i] = out_host[i] = (unsigned char)(i * 7);
          std::vector<unsigned char> in_dev = in, in_host = in;
          std::vector<long long> pos(3 * T);
          std::vector<int> pos32(3 * T);
          for (long long i = 0; i < 3 * T; ++i) pos[i] = pos32[i] = int(rng() % MAXPOS);
          if (kind != 1) { pos[5] = pos32[5] = -1; pos[T + 7] = pos32[T + 7] = MAXPOS; }
          // every third case the cache sits 4 bytes off 16-byte alignment (a caller's sliced tensor): the
          // flat and dec kernels then read it by scalar loads / through shared memory
          std::vector<float> inv_freq(sh.rd / 2), cache_buf(size_t(MAXPOS) * sh.rd + 4);
          float* cache = cache_buf.data() + (case_id % 3 == 2 ? 1 : 0);
          for (int i = 0; i < sh.rd / 2; ++i) inv_freq[i] = 1.0f / std::pow(10000.0f, 2.0f * i / sh.rd);
          mlops_rope_cache_host(inv_freq.data(), sh.rd / 2, 1.0f, MAXPOS, cache);
          int flag_dev = 0, flag_host = 0;
          auto make = [&](unsigned char* inb, unsigned char* outb, int* flag) {
            mlops_rope_args a;
            std::memset(&a, 0, sizeof a);
            a.batch = B; a.seq = S; a.head_dim = sh.d; a.rotary_dim = sh.rd;
            a.layout = mlops_rope_layout(layout); a.dtype = dt;
            unsigned char* base = inb + (misaligned ? es : 0);
            unsigned char* ob = inplace ? base : outb;
            const long long os = inplace ? tok_stride : out_stride;
            a.q = mlops_rope_tensor{base, ob, sh.hq, S * tok_stride, tok_stride, sh.d, S * os, os, sh.d};
            unsigned char* kb = base + size_t(sh.hq) * sh.d * es;
            a.k = mlops_rope_tensor{kb, inplace ? kb : ob + size_t(sh.hq) * sh.d * es, sh.hk, S * tok_stride,
                                    tok_stride, sh.d, S * os, os, sh.d};
            a.pos_dtype = (case_id & 1) ? MLOPS_DTYPE_INT32 : MLOPS_DTYPE_INT64;
            a.positions = (case_id & 1) ? (const void*)pos32.data() : (const void*)pos.data();
            if (mrope) {
              a.pos_row_stride = T;
              a.mrope_section[0] = sh.rd / 6; a.mrope_section[1] = sh.rd / 6;
              a.mrope_section[2] = sh.rd / 2 - 2 * (sh.rd / 6);
            }
            a.max_positions = MAXPOS;
            if (on_the_fly) a.inv_freq = inv_freq.data(); else a.cos_sin_cache = cache;
            a.attention_scaling = on_the_fly ? 1.0625f : 1.0f;
            a.out_of_range = flag;
            a.tokens_per_cta = tpc[kind];
            a.heads_per_cta = hpc[kind];
            a.variant = kv;
            return a;
          };
          mlops_rope_args ad = make(in_dev.data(), out_dev.data(), &flag_dev);
          mlops_rope_args ah = make(in_host.data(), out_host.data(), &flag_host);
          g_sms = 1 + case_id % 7;  // the planner's choices vary with the SM count
          const mlops_status sd = mlops_rope(&ad, nullptr), shst = mlops_rope_host(&ah);
          const bool ok = sd == MLOPS_OK && shst == MLOPS_OK && in_dev == in_host && out_dev == out_host &&
                          flag_dev == flag_host && flag_dev == (kind != 1);
          if (ok) {
            ++passed;
          } else {
            ++failed;
            size_t first = 0;
            while (first < in_elems * es && in_dev[first] == in_host[first]) ++first;
            size_t ofirst = 0;
            while (ofirst < out_elems * es && out_dev[ofirst] == out_host[ofirst]) ++ofirst;
            std::printf("FAIL case %d (kernel variant %d): dtype %s layout %d shape (%d,%d,%d,%d) kind %d: status %d/%d flags %d/%d "
                        "first differing input byte %zu/%zu, output byte %zu/%zu (%s)\n",
                        case_id, kv, mlops_dtype_name(dt), layout, sh.hq, sh.hk, sh.d, sh.rd, kind, int(sd), int(shst),
                        flag_dev, flag_host, first, in_elems * es, ofirst, out_elems * es, mlops_rope_last_error());
          }
        }
  // both kernel paths and every variant ran (the test is not vacuous)
  if (g_vec_runs > 0 && g_scalar_runs > 0) ++passed;
  else { ++failed; std::printf("FAIL: vector runs %d, scalar runs %d\n", g_vec_runs, g_scalar_runs); }
  bool all_ran = true;
  int total = 0;
  for (int kv = 1; kv <= kNumVariants; ++kv) {
    all_ran = all_ran && g_variant_runs[kv] >= 150;
    total += g_variant_runs[kv];
  }
  // the planner's 150 cases ran too, dec among them (kind 0: tokens_per_cta 0, from the cache)
  all_ran = all_ran && total == 150 * (kNumVariants + 1) && g_variant_runs[kDec] > 150;
  if (all_ran) ++passed;
  else { ++failed; std::printf("FAIL: a kernel variant did not run its 150 cases\n"); }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
