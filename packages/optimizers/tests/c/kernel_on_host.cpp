// The update kernel's device code (optim_kernel.cuh: chunk walk, unit / lane layout, 4-wide
// vector loads and stores, ragged tails, unaligned rows, stochastic-rounding indices) compiled
// by the host compiler and run lane by lane, against the host emulation (optim_host.cpp), bit
// for bit. Lanes of the fp32-state paths are independent, so running them one after another
// is what the GPU computes; the 8-bit path (a warp max) is left to the GPU suite. Device
// intrinsics are replaced by their host meaning. The 8-bit path, whose absmax is a warp max,
// runs its 32 lanes as 32 threads meeting at a barrier for each shuffle.
// Prints "N passed, M failed".
#include <cuda_runtime.h>
#include <device_launch_parameters.h>  // threadIdx / blockIdx: declared (step_kernel is not instantiated)

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#define __launch_bounds__(...)
template <class T>
static inline T __ldg(const T* p) {
  return *p;
}
static inline void __syncthreads() {}
// A warp of 32 threads: each shuffle writes its lane's value, meets the others, reads lane ^ off.
static thread_local int tl_lane = -1;
static float g_slots[32];
static std::barrier<>* g_warp_barrier = nullptr;
static inline float __shfl_xor_sync(unsigned, float v, int off) {
  if (tl_lane < 0) std::abort();
  g_slots[tl_lane] = v;
  g_warp_barrier->arrive_and_wait();
  const float r = g_slots[tl_lane ^ off];
  g_warp_barrier->arrive_and_wait();
  return r;
}

#include "optim_host.h"
#include "optim_kernel.cuh"

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
                                            nullptr, nullptr);
      }
  }
}

// The 8-bit Adam kernel: the same walk, the 32 lanes of each unit as 32 threads.
template <class PT>
static void emulate_kernel_q8(const mlops_optim_args& a) {
  if (a.found_inf && *a.found_inf != 0.0f) return;
  const auto* tab = static_cast<const mlops_optim_tensor*>(a.table);
  for (int64_t i = 0; i < a.num_tensors; ++i) *tab[i].step = *tab[i].step + 1.0f;
  const int32_t* chunk_map = chunk_map_of(a.table, a.num_tensors);
  std::barrier<> bar(32);
  g_warp_barrier = &bar;
  std::vector<std::thread> lanes;
  for (int lane = 0; lane < 32; ++lane)
    lanes.emplace_back([&, lane] {
      tl_lane = lane;
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
            update_unit<PT, MLOPS_OPTIM_ADAM, true, false>(a, s, t, base, lane,
                                                          aligned && base + kUnitElems <= t.numel, key, a.qmap1,
                                                          a.qmap2);
          }
      }
    });
  for (auto& th : lanes) th.join();
  g_warp_barrier = nullptr;
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

static void new_grads(Tensors& T, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  for (auto& r : T.rows)
    for (int64_t i = 0; i < r.numel; ++i) {
      const float g = nd(rng);
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

template <class PT, int ALGO, bool AMS, bool Q8 = false>
static void run_case(const char* name, int dtype, bool master, bool sr, double beta1, double beta2) {
  const std::vector<int64_t> sizes = Q8 ? std::vector<int64_t>{1000, 7, 16385, 256, 3}
                                        : std::vector<int64_t>{1000, 7, 16384, 16385, 40000, 256, 3, 4096};
  Tensors A = make(sizes, dtype, master, AMS, 1, Q8), B = make(sizes, dtype, master, AMS, 1, Q8);
  float map1[256], map2[256];
  mlops_optim_dynamic_map(1, map1);
  mlops_optim_dynamic_map(0, map2);
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
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
