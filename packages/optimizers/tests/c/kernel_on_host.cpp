// The kernels' device code (optim_kernel.cuh, optim_norm_kernel.cuh: chunk walk, unit / lane
// layout, 4-wide vector loads and stores, ragged tails, unaligned rows, stochastic-rounding
// indices, 8-bit blocks, the norm's summation order) compiled by the host compiler and run with
// one fiber an emulated GPU thread, against the host emulation (optim_host.cpp), bit for
// bit. Device intrinsics are replaced by their host meaning (mlops/common/testing/cuda_on_host.h).
// Prints "N passed, M failed".
#include "mlops/common/testing/cuda_on_host.h"  // threads, barriers, shuffles, atomics on the host

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

static inline int __syncthreads_and(int) { std::abort(); }  // named by step_kernel's 8-bit prologue (not run here)

#include "optim_host.h"
#include "optim_kernel.cuh"
#include "optim_norm_kernel.cuh"

using namespace mlops::optim;

// optim_api.cpp (compiled in for the table builder) refers to the launchers; nothing here calls them.
namespace mlops::optim {
cudaError_t launch_step_fp32(const mlops_optim_args&, int, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t launch_step_bf16(const mlops_optim_args&, int, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t launch_step_fp16(const mlops_optim_args&, int, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t launch_increment_steps(const mlops_optim_args&, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t launch_norm_partials(const void*, int64_t, int64_t, float*, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t launch_norm_finalize(const float*, int64_t, float, const float*, float*, float*, cudaStream_t) {
  return cudaErrorNotSupported;
}
}  // namespace mlops::optim
// ... and names cudaGetErrorString on its error paths: defined here, so no CUDA runtime is linked.
extern "C" const char* cudaGetErrorString(cudaError_t) { return "not linked"; }

static int passed, failed;

// What the GPU does for one mlops_optim_step (both launches), run on the host.
template <class PT, int ALGO, bool AMS>
static void emulate_kernel(const mlops_optim_args& a) {
  if (a.found_inf && *a.found_inf != 0.0f) return;
  const auto* tab = static_cast<const mlops_optim_tensor*>(a.table);
  for (int64_t i = 0; i < a.num_tensors; ++i) *tab[i].step = *tab[i].step + 1.0f;
  const int32_t* chunk_map = chunk_map_of(a.table, a.num_tensors);
  for (int64_t c = 0; c < a.num_chunks; ++c) {
    const mlops_optim_tensor t = tab[chunk_map[c]];
    const double lr = a.lr_device ? double(*a.lr_device) : a.lr;
    const float step = *t.step;
    const Scalars s = make_scalars(a, lr, double(step));
    const uint32_t key = sr_key(a.seed, uint32_t(step), t.id);
    const int64_t chunk_start = (c - t.first_chunk) * int64_t(MLOPS_OPTIM_CHUNK);
    const bool aligned = (t.flags & kFlagAligned) != 0;
    for (int warp = 0; warp < kThreads / 32; ++warp)
      for (int u = warp; u < kUnitsPerChunk; u += kThreads / 32) {
        const int64_t base = chunk_start + int64_t(u) * kUnitElems;
        if (base >= t.numel) break;
        for (int lane = 0; lane < 32; ++lane)
          update_unit<PT, ALGO, false, AMS>(a, s, t, base, lane, aligned && base + kUnitElems <= t.numel, key,
                                            QView{});
      }
  }
}

// The 8-bit Adam kernel: the same walk, the 32 lanes of each unit as 32 threads of one warp;
// the maps and the table quantizer's data as step_kernel's prologue puts them in shared memory
// (the table quantizer only where both maps are the standard ones).
template <class PT>
static void emulate_kernel_q8(const mlops_optim_args& a) {
  if (a.found_inf && *a.found_inf != 0.0f) return;
  float thr1[256], thr2[256];
  std::memcpy(thr1, kQThrS, sizeof thr1);
  std::memcpy(thr2, kQThrU, sizeof thr2);
  const QView qv{a.qmap1, a.qmap2, thr1, thr2, kQBucketS, kQBucketU, qmaps_standard(a.qmap1, a.qmap2)};
  const auto* tab = static_cast<const mlops_optim_tensor*>(a.table);
  for (int64_t i = 0; i < a.num_tensors; ++i) *tab[i].step = *tab[i].step + 1.0f;
  const int32_t* chunk_map = chunk_map_of(a.table, a.num_tensors);
  run_block(uint3{0, 0, 0}, dim3(1), 32, [&] {
    const int lane = int(threadIdx.x);
    for (int64_t c = 0; c < a.num_chunks; ++c) {
      const mlops_optim_tensor t = tab[chunk_map[c]];
      const Scalars s = make_scalars(a, a.lr, double(*t.step));
      const uint32_t key = sr_key(a.seed, uint32_t(*t.step), t.id);
      const int64_t chunk_start = (c - t.first_chunk) * int64_t(MLOPS_OPTIM_CHUNK);
      const bool aligned = (t.flags & kFlagAligned) != 0;
      for (int warp = 0; warp < kThreads / 32; ++warp)
        for (int u = warp; u < kUnitsPerChunk; u += kThreads / 32) {
          const int64_t base = chunk_start + int64_t(u) * kUnitElems;
          if (base >= t.numel) break;
          update_unit<PT, MLOPS_OPTIM_ADAM, true, false>(a, s, t, base, lane, aligned && base + kUnitElems <= t.numel,
                                                        key, qv);
        }
    }
  });
}

// The norm kernels as launched: one 256-thread CTA a chunk, then one finalize CTA.
static void emulate_norm(const void* table, int64_t num_tensors, int64_t num_chunks, float max_norm, float* norm,
                         float* coef) {
  std::vector<float> partials(size_t(num_chunks) + 1);
  for (int64_t c = 0; c < num_chunks; ++c)
    run_block(uint3{unsigned(c), 0, 0}, dim3(unsigned(num_chunks)), kThreads, [&] {
      norm_partials_kernel(static_cast<const mlops_optim_tensor*>(table), num_tensors, partials.data());
    });
  run_block(uint3{0, 0, 0}, dim3(1), kFinalizeThreads,
            [&] { norm_finalize_kernel(partials.data(), num_chunks, max_norm, nullptr, norm, coef); });
}

struct Tensors {
  std::vector<std::vector<uint8_t>> bufs;  // owns every array (+16 bytes for misalignment)
  std::vector<mlops_optim_tensor> rows;
};

static void* alloc(Tensors& T, size_t bytes, size_t offset) {
  T.bufs.emplace_back(bytes + 32, 0);
  uint8_t* p = T.bufs.back().data();
  p += (16 - (reinterpret_cast<uintptr_t>(p) & 15)) & 15;  // 16-byte aligned, then offset
  return p + offset;
}

static Tensors make(const std::vector<int64_t>& sizes, int dtype, bool master, bool ams, unsigned seed,
                    bool q8 = false) {
  Tensors T;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  const int es = dtype == MLOPS_DTYPE_FP32 ? 4 : 2;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t n = sizes[k];
    const size_t off = (k % 3 == 2) ? size_t(es) : 0;  // every third row unaligned
    mlops_optim_tensor r;
    std::memset(&r, 0, sizeof r);
    r.param = alloc(T, n * es, off);
    r.grad = alloc(T, n * es, off);
    r.state1 = alloc(T, n * (q8 ? 1 : 4), 0);
    r.state2 = alloc(T, n * (q8 ? 1 : 4), 0);
    if (q8) {
      r.absmax1 = static_cast<float*>(alloc(T, 4 * ((n + 255) / 256), 0));
      r.absmax2 = static_cast<float*>(alloc(T, 4 * ((n + 255) / 256), 0));
    }
    if (ams) r.state3 = static_cast<float*>(alloc(T, n * 4, 0));
    if (master) r.master = static_cast<float*>(alloc(T, n * 4, 0));
    r.step = static_cast<float*>(alloc(T, 4, 0));
    r.numel = n;
    r.id = uint32_t(k);
    r.dtype = dtype;
    for (int64_t i = 0; i < n; ++i) {
      const float p = nd(rng), m = 0.1f * nd(rng), v = 0.01f * std::abs(nd(rng));
      if (dtype == MLOPS_DTYPE_FP32) static_cast<float*>(r.param)[i] = p;
      else if (dtype == MLOPS_DTYPE_BF16) static_cast<uint16_t*>(r.param)[i] = mlops::f32_to_bf16(p);
      else static_cast<uint16_t*>(r.param)[i] = mlops::f32_to_f16(p);
      if (r.master) r.master[i] = p;
      if (q8) {  // codes with absmax 0 decode to 0: fresh 8-bit states
        static_cast<uint8_t*>(r.state1)[i] = 0;
        static_cast<uint8_t*>(r.state2)[i] = 0;
      } else {
        static_cast<float*>(r.state1)[i] = m;
        static_cast<float*>(r.state2)[i] = v;
      }
      if (r.state3) r.state3[i] = v;
    }
    T.rows.push_back(r);
  }
  return T;
}

static void new_grads(Tensors& T, unsigned seed, bool varied_scale = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  int k = 0;
  for (auto& r : T.rows)
    for (int64_t i = 0, row = k++; i < r.numel; ++i) {
      const float g = nd(rng) * (varied_scale ? std::ldexp(1.0f, (row * 7) % 23 - 11) * 1.37f : 1.0f);
      if (r.dtype == MLOPS_DTYPE_FP32) static_cast<float*>(const_cast<void*>(r.grad))[i] = g;
      else if (r.dtype == MLOPS_DTYPE_BF16) static_cast<uint16_t*>(const_cast<void*>(r.grad))[i] = mlops::f32_to_bf16(g);
      else static_cast<uint16_t*>(const_cast<void*>(r.grad))[i] = mlops::f32_to_f16(g);
    }
}

static bool same(const Tensors& A, const Tensors& B, bool q8 = false) {
  for (size_t k = 0; k < A.rows.size(); ++k) {
    const auto &a = A.rows[k], &b = B.rows[k];
    const int es = a.dtype == MLOPS_DTYPE_FP32 ? 4 : 2;
    const int ss = q8 ? 1 : 4;
    if (std::memcmp(a.param, b.param, a.numel * es) || std::memcmp(a.state1, b.state1, a.numel * ss) ||
        std::memcmp(a.state2, b.state2, a.numel * ss) || *a.step != *b.step)
      return false;
    if (q8 && (std::memcmp(a.absmax1, b.absmax1, 4 * ((a.numel + 255) / 256)) ||
               std::memcmp(a.absmax2, b.absmax2, 4 * ((a.numel + 255) / 256))))
      return false;
    if (a.master && std::memcmp(a.master, b.master, a.numel * 4)) return false;
    if (a.state3 && std::memcmp(a.state3, b.state3, a.numel * 4)) return false;
  }
  return true;
}

// custom_map: an ascending map that is not the standard one (the kernel's quantize_nearest path)
template <class PT, int ALGO, bool AMS, bool Q8 = false>
// clip > 0: a clip coefficient (mlops_optim_grad_norm's output) multiplies the gradients
static void run_case(const char* name, int dtype, bool master, bool sr, double beta1, double beta2,
                     bool custom_map = false, float clip = 0.0f) {
  const std::vector<int64_t> sizes = Q8 ? std::vector<int64_t>{1000, 7, 16385, 256, 3}
                                        : std::vector<int64_t>{1000, 7, 16384, 16385, 40000, 256, 3, 4096};
  Tensors A = make(sizes, dtype, master, AMS, 1, Q8), B = make(sizes, dtype, master, AMS, 1, Q8);
  float map1[256], map2[256];
  mlops_optim_dynamic_map(1, map1);
  mlops_optim_dynamic_map(0, map2);
  if (Q8 && !custom_map && !qmaps_standard(map1, map2)) {  // the generated tables describe these maps
    ++failed;
    std::printf("FAIL %s: optim_qtables.h's maps are not mlops_optim_dynamic_map's\n", name);
    return;
  }
  if (custom_map) {
    for (int k = 0; k < 256; ++k) map2[k] = std::sqrt(map2[k]);  // still ascending in [0, 1]
    map1[200] = 0.5f * (map1[199] + map1[200]);
    if (qmaps_standard(map1, map2)) std::abort();
  }
  auto table_of = [](Tensors& T, std::vector<uint8_t>& buf, int64_t& chunks) {
    const int64_t bytes = mlops_optim_table_bytes(T.rows.data(), int64_t(T.rows.size()), &chunks);
    buf.assign(size_t(bytes) + 16, 0);
    mlops_optim_table_build(T.rows.data(), int64_t(T.rows.size()), buf.data(), bytes, &chunks);
  };
  std::vector<uint8_t> ta, tb;
  int64_t ca = 0, cb = 0;
  table_of(A, ta, ca);
  table_of(B, tb, cb);
  mlops_optim_args a;
  std::memset(&a, 0, sizeof a);
  a.algo = mlops_optim_algo(ALGO);
  a.dtype = mlops_dtype(dtype);
  a.decoupled = 1;
  a.amsgrad = AMS;
  a.nesterov = ALGO == MLOPS_OPTIM_SGD && beta2 == 0.0;
  a.stochastic_rounding = sr;
  a.seed = 5;
  a.lr = ALGO == MLOPS_OPTIM_LION ? 1e-3 : 1e-2;
  a.beta1 = beta1;
  a.beta2 = beta2;
  a.eps = 1e-8;
  a.weight_decay = 0.05;
  a.num_tensors = int64_t(sizes.size());
  a.state_8bit = Q8;
  a.qmap1 = map1;
  a.qmap2 = map2;
  const float clip_coef = clip;
  if (clip > 0.0f) a.clip_coef = &clip_coef;
  mlops_optim_args b = a;
  a.table = ta.data();
  a.num_chunks = ca;
  b.table = tb.data();
  b.num_chunks = cb;
  bool ok = true;
  for (int s = 0; s < 4 && ok; ++s) {
    new_grads(A, 100 + s);
    new_grads(B, 100 + s);
    if (Q8) emulate_kernel_q8<PT>(a);
    else emulate_kernel<PT, ALGO, AMS>(a);
    step_host(b);
    ok = same(A, B, Q8);
  }
  if (ok) ++passed;
  else {
    ++failed;
    std::printf("FAIL %s\n", name);
  }
}

int main() {
  run_case<float, MLOPS_OPTIM_ADAM, false>("adamw fp32", MLOPS_DTYPE_FP32, false, false, 0.9, 0.999);
  run_case<float, MLOPS_OPTIM_ADAM, true>("adamw fp32 amsgrad", MLOPS_DTYPE_FP32, false, false, 0.9, 0.999);
  run_case<bf16_t, MLOPS_OPTIM_ADAM, false>("adamw bf16 master", MLOPS_DTYPE_BF16, true, false, 0.9, 0.999);
  run_case<bf16_t, MLOPS_OPTIM_ADAM, false>("adamw bf16 sr", MLOPS_DTYPE_BF16, false, true, 0.9, 0.999);
  run_case<f16_t, MLOPS_OPTIM_ADAM, false>("adamw fp16 master", MLOPS_DTYPE_FP16, true, false, 0.9, 0.999);
  run_case<float, MLOPS_OPTIM_SGD, false>("sgd nesterov fp32", MLOPS_DTYPE_FP32, false, false, 0.9, 0.0);
  run_case<bf16_t, MLOPS_OPTIM_SGD, false>("sgd dampening bf16 sr", MLOPS_DTYPE_BF16, false, true, 0.9, 0.1);
  run_case<float, MLOPS_OPTIM_LION, false>("lion fp32", MLOPS_DTYPE_FP32, false, false, 0.9, 0.99);
  run_case<bf16_t, MLOPS_OPTIM_LION, false>("lion bf16 master", MLOPS_DTYPE_BF16, true, false, 0.9, 0.99);
  run_case<float, MLOPS_OPTIM_ADAM, false, true>("adamw fp32 8-bit", MLOPS_DTYPE_FP32, false, false, 0.9, 0.999);
  run_case<bf16_t, MLOPS_OPTIM_ADAM, false, true>("adamw bf16 master 8-bit", MLOPS_DTYPE_BF16, true, false, 0.9,
                                                  0.999);
  run_case<float, MLOPS_OPTIM_ADAM, false, true>("adamw fp32 8-bit custom maps", MLOPS_DTYPE_FP32, false, false, 0.9,
                                                 0.999, true);
  // the 8-bit kernel's AdamW loop with options as constants: with a clip coefficient; and its
  // general loop (|1 - beta1| >= 0.5)
  run_case<float, MLOPS_OPTIM_ADAM, false, true>("adamw fp32 8-bit clip", MLOPS_DTYPE_FP32, false, false, 0.9, 0.999,
                                                 false, 0.37f);
  run_case<bf16_t, MLOPS_OPTIM_ADAM, false, true>("adamw bf16 master 8-bit beta1 0.2", MLOPS_DTYPE_BF16, true, false,
                                                  0.2, 0.999);
  {  // the global norm: kernels (run on the host) vs the host emulation, every grad dtype
    // 19 chunks of very different magnitudes, so a different summation order gives different bits
    std::vector<int64_t> sizes = {1000, 7, 40000, 256, 3};
    for (int k = 0; k < 12; ++k) sizes.push_back(16384);
    bool ok = true;
    for (int dtype : {MLOPS_DTYPE_FP32, MLOPS_DTYPE_BF16}) {  // fp16 grads take bf16's scalar load path
      Tensors A = make(sizes, dtype, false, false, 3);
      new_grads(A, 7, true);
      std::vector<uint8_t> tab;
      int64_t chunks = 0;
      const int64_t bytes = mlops_optim_table_bytes(A.rows.data(), int64_t(A.rows.size()), &chunks);
      tab.assign(size_t(bytes), 0);
      mlops_optim_table_build(A.rows.data(), int64_t(A.rows.size()), tab.data(), bytes, &chunks);
      float n1 = 0, c1 = 0, n2 = 0, c2 = 0;
      emulate_norm(tab.data(), int64_t(A.rows.size()), chunks, 1.0f, &n1, &c1);
      std::vector<float> partials(static_cast<size_t>(chunks));
      mlops_optim_grad_norm_partials_host(tab.data(), int64_t(A.rows.size()), chunks, partials.data(), 0);
      mlops_optim_grad_norm_finalize_host(partials.data(), chunks, 1.0, nullptr, &n2, &c2);
      ok = ok && std::memcmp(&n1, &n2, 4) == 0 && std::memcmp(&c1, &c2, 4) == 0 && n1 > 0.0f;
    }
    if (ok) ++passed;
    else {
      ++failed;
      std::printf("FAIL global norm\n");
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
