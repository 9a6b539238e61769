// The FBLA CUDA kernels (src/fbla_kernels.cuh) compiled as host C++ and run as the GPU runs them:
// each CTA as blockDim cooperative fibers (mlops/common/testing/fibers.h; a barrier is a yield until the CTA or the
// warp has arrived: no OS thread switches, so a CTA of 256 threads runs fast), warp shuffles / ballots
// through a per-warp exchange, blockIdx / threadIdx per thread; CTAs one after another. Linked with the real
// C API (fbla_api.cpp) and host emulation (fbla_host.cpp): mlops_fbla_append / mlops_fbla_decode
// here drive the kernels (close / store / advance; coarse / refine / combine) with the launch
// shapes of src/fbla_launch.cu, and their records and outputs are compared with the _host calls
// bit for bit: both modes, head dims 64 / 128, GQA 1 / 2 / 4 / 5 / 8 / 16, lengths across group
// boundaries, mixed lengths, appends in steps, exact / skip, CTA counts, a full cache.
// The CPU suite builds and runs it (tests/test_attention_kernel_emulation.py), so the kernels'
// logic is checked in CI, which has no GPU. Prints "N passed, M failed".
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <vector>

#include "fbla_combine_staged.cuh"
#include "fbla_decode_mma4.cuh"
#include "mlops/common/testing/fibers.h"

dim3 threadIdx, blockIdx, blockDim, gridDim;  // the running fiber's (set by run_grid's resume hook)

namespace {
namespace fibers = mlops::testing::fibers;
// ---- a CTA of fibers ----
fibers::Barrier g_block_barrier;
fibers::Barrier g_warp_barrier[32];
uint32_t g_xchg[32][32];
int g_or[1024];
int g_default_ctas = 5;
int g_planner_pv4 = 0;  // decodes where the planner (pv digits) ran mma_pv4r's kernel in one round
int g_planner_many = 0;  // ... in more than one round (sm_90 only)
int g_planner_mma_pv = 0;  // ... ran mma_pv's kernel with more than one round of items (below sm_90)
int g_planner_early = 0;  // ... ran its kEarly instance (D 128, sm_90, more than one round; session 17)
int g_staged = 0;  // ... and then combine_staged_kernel (rows of kStagedMinP .. kStagedMaxP slots; session 29)
int g_planner_within = 0;  // ... ran mma_pv4r's kernel within mma_pv's one round of items (sm_90 only)
int g_planner_one = 0;  // ... ran mma_pv's kernel within its one round of items (below sm_90)
int g_emu_major = 9;  // the compute capability major that decode_t asks of the device (an H200's)
int g_fold = 0;  // decodes of mma_pv4f with the combine folded into the refine (refine_mma4_kernel<D, 8, true>)
void block_barrier() { g_block_barrier.arrive_and_wait(); }
void warp_barrier() { g_warp_barrier[threadIdx.x / 32].arrive_and_wait(); }
}  // namespace

alignas(128) static uint8_t g_dyn_smem[256 * 1024];
uint8_t* emu_dyn_smem() { return g_dyn_smem; }

void __syncthreads() { block_barrier(); }

void __syncwarp(unsigned) { warp_barrier(); }

int __syncthreads_or(int pred) {
  g_or[threadIdx.x] = pred != 0;
  __syncthreads();
  int r = 0;
  for (unsigned i = 0; i < blockDim.x; ++i) r |= g_or[i];
  __syncthreads();
  return r;
}

uint32_t emu_shfl_xor(uint32_t bits, int off) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  g_xchg[w][l] = bits;
  warp_barrier();
  const uint32_t r = g_xchg[w][l ^ off];
  warp_barrier();
  return r;
}

uint32_t emu_shfl_idx(uint32_t bits, int src) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  g_xchg[w][l] = bits;
  warp_barrier();
  const uint32_t r = g_xchg[w][src & 31];
  warp_barrier();
  return r;
}

uint32_t __ballot_sync(uint32_t, int pred) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  g_xchg[w][l] = pred != 0;
  warp_barrier();
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= g_xchg[w][i] << i;
  warp_barrier();
  return r;
}

// Runs body() as a grid of `grid` CTAs of `block` fibers (block a multiple of 32), one CTA at a time.
static void run_grid(int grid, int block, const std::function<void()>& body) {
  if (std::getenv("FBLA_EMU_TRACE")) std::fprintf(stderr, "grid %d x %d\n", grid, block);
  blockDim.x = unsigned(block);
  gridDim.x = unsigned(grid);
  std::memset(g_dyn_smem, 0xa7, 64 * 1024);  // no kernel may read dynamic shared memory it did not write
  for (int x = 0; x < grid; ++x) {
    g_block_barrier = fibers::Barrier(unsigned(block));
    for (int w = 0; w < block / 32; ++w) g_warp_barrier[w] = fibers::Barrier(32);
    blockIdx.x = unsigned(x);
    fibers::run(block, [&](int) { body(); }, [](int t) { threadIdx.x = unsigned(t); });
  }
}

namespace mlops::fbla {

template <int D>
static void append_e(const AppendParams& p) {  // src/fbla_launch.cu append_t
  const int B = p.c.batch, H = p.c.kv_heads;
  if (p.closes > 0 && p.c.slots > 0) run_grid(B * H * p.closes, kCloseThreads, [&] { close_kernel<D>(p); });
  run_grid(B * H, kThreads, [&] { store_kernel<D>(p); });
  run_grid(1, kThreads, [&] { advance_kernel(p); });
}

template <int D>
static void decode_e(const DecodeParams& p0, int ctas) {  // src/fbla_launch.cu decode_t
  const int per = p0.c.batch * p0.c.kv_heads;
  const int coarse_items = per * p0.s.nch, refine_items = per * p0.s.P;
  const int res = ctas > 0 ? ctas : g_default_ctas;
  // mma_pv4f: the combine folded into the refine where a row's e / l fit (decode_t: p.fold)
  DecodeParams p = p0;
  p.fold = p.variant == kMmaPv4f && 4 * fold_smem_floats(p.s.P) <= kChunkGroups * stage_group_bytes(D);
  bool early = false;  // the kEarly refine ran (mma4_launch's combine choice)
  if (!p.exact && coarse_items > 0 && imma_coarse(p.variant))
    run_grid(std::min(coarse_items, res), kWarpThreads, [&] { coarse_warps_kernel<D, true>(p, coarse_items); });
  else if (!p.exact && coarse_items > 0 && warps_coarse(p.variant))
    run_grid(std::min(coarse_items, res), kWarpThreads, [&] { coarse_warps_kernel<D>(p, coarse_items); });
  else if (!p.exact && coarse_items > 0)
    run_grid(std::min(coarse_items, res), kThreads, [&] { coarse_kernel<D>(p, coarse_items); });
  // the planner's pick for pv digits (fbla_launch.cu): mma_pv4r's kernel where mma_pv's would take more than one round
  // of items and mma_pv4r's one, or (sm_90 only) more, or (sm_90 only) within mma_pv's one round; here "resident" is
  // res CTAs for mma_pv and res * 4 / 3 for mma_pv4r (3 and 4 an SM on an H200)
  if (p.fold) {
    ++g_fold;
    if (p.exact || coarse_items == 0) run_grid(1, 128, [&] { fold_zero_kernel(p); });
    run_grid(std::min(refine_items, res), 256, [&] { refine_mma4_kernel<D, 8, true>(p, refine_items); });
    return;  // no combine kernel
  } else if (p.variant == kMmaPv && p.planned == 2 && ctas == 0 &&
             (g_emu_major == 9 || (refine_items > res && refine_items <= res * 4 / 3))) {
    ++(refine_items <= res ? g_planner_within : refine_items <= res * 4 / 3 ? g_planner_pv4 : g_planner_many);
    if (D == 128 && g_emu_major == 9 && refine_items > res * 4 / 3) {  // the kEarly instance (session 17)
      ++g_planner_early;
      early = true;
      if (p.exact || coarse_items == 0) run_grid(1, 128, [&] { fold_zero_kernel(p); });  // kDyn's counter (session 22)
      run_grid(std::min(refine_items, res * 4 / 3), 256,
               [&] { refine_mma4_kernel<D, 8, false, true, true>(p, refine_items); });
    } else {
      run_grid(std::min(refine_items, res * 4 / 3), 256, [&] { refine_mma4_kernel<D, 8, false, true>(p, refine_items); });
    }
  } else if (p.variant == kMmaPv) {
    if (p.planned == 2 && ctas == 0) ++(refine_items > res ? g_planner_mma_pv : g_planner_one);
    run_grid(std::min(refine_items, res), kMmaThreads, [&] { refine_mma_kernel<D>(p, refine_items); });
  }
  else if (p.variant == kMmaPv4 || p.variant == kMmaPv4f)  // kMmaPv4f where a row's e / l do not fit: mma_pv4's kernels
    run_grid(std::min(refine_items, res), 256, [&] { refine_mma4_kernel<D, 8>(p, refine_items); });
  else if (p.variant == kMmaPv4w)
    run_grid(std::min(refine_items, res), 128, [&] { refine_mma4_kernel<D, 4>(p, refine_items); });
  else if (p.variant == kMmaPv4r)  // mma_pv4r: the thread index read again a phase
    run_grid(std::min(refine_items, res), 256, [&] { refine_mma4_kernel<D, 8, false, true>(p, refine_items); });
  else if (p.variant == kStageImma)
    run_grid(std::min(refine_items, res), kWarpThreads, [&] { refine_stage_kernel<D, 1>(p, refine_items); });
  else if (p.variant == kStagePipe)
    run_grid(std::min(refine_items, res), kWarpThreads, [&] { refine_stage_kernel<D, 4>(p, refine_items); });
  else if (p.variant == kStageBf)
    run_grid(std::min(refine_items, res), kWarpThreads, [&] { refine_stage_kernel<D, 1, 2>(p, refine_items); });
  else if (p.variant == kImmaOcc)
    run_grid(std::min(refine_items, res), kWarpThreads,
             [&] { refine_warps_kernel<D, true, kImmaOccCtas>(p, refine_items); });
  else if (imma_refine(p.variant))
    run_grid(std::min(refine_items, res), kWarpThreads, [&] { refine_warps_kernel<D, true>(p, refine_items); });
  else if (warps_refine(p.variant))
    run_grid(std::min(refine_items, res), kWarpThreads, [&] { refine_warps_kernel<D>(p, refine_items); });
  else
    run_grid(std::min(refine_items, res), kThreads, [&] { refine_kernel<D>(p, refine_items); });
  if (p.variant == kItems)
    run_grid(p.c.batch * p.Hq, D, [&] { combine_kernel<D>(p); });
  else if (early && staged_rows(p.s.P)) {
    ++g_staged;
    run_grid(p.c.batch * p.Hq, D, [&] { combine_staged_kernel<D>(p); });
  } else if (stage_refine(p.variant) || mma_refine(p.variant))
    run_grid(p.c.batch * p.Hq * (D / 32), 32, [&] { combine_warps_kernel<D, true>(p); });
  else
    run_grid(p.c.batch * p.Hq * (D / 32), 32, [&] { combine_warps_kernel<D>(p); });
}

cudaError_t append_device(const AppendParams& p, cudaStream_t) {
  p.c.head_dim == 64 ? append_e<64>(p) : append_e<128>(p);
  return cudaSuccess;
}

cudaError_t decode_device(const DecodeParams& p, int ctas, cudaStream_t) {
  p.c.head_dim == 64 ? decode_e<64>(p, ctas) : decode_e<128>(p, ctas);
  return cudaSuccess;
}

}  // namespace mlops::fbla

// ---------------------------------------------------------------------------------------------
#include "mlops/common/testing/check.h"  // CHECK, passed, failed

static uint16_t bf16(float f) { return mlops::f32_to_bf16(f); }

struct Cache {  // host memory, the layout of mlops_fbla_cache
  std::vector<uint8_t> rec_store;
  std::vector<uint16_t> sk, sv, tk, tv;
  std::vector<int32_t> lengths, flags;
  mlops_fbla_cache c{};
  Cache(int B, int H, int cap, int D, mlops_fbla_mode mode) {
    c.batch = B; c.kv_heads = H; c.capacity = cap; c.head_dim = D; c.mode = mode;
    c.slots = cap / 128 > 1 ? cap / 128 - 1 : 0;
    c.record_bytes = mlops_fbla_record_bytes(D);
    rec_store.assign(size_t(B) * H * c.slots * c.record_bytes + 256, 0xab);  // garbage, not zeros
    uint8_t* r = rec_store.data();
    r += (256 - (reinterpret_cast<uintptr_t>(r) & 255)) & 255;
    c.records = r;
    const size_t tile = size_t(B) * H * 128 * D;
    sk.assign(tile, 0x7fc1); sv.assign(tile, 0x7fc1); tk.assign(tile, 0x7fc1); tv.assign(tile, 0x7fc1);
    lengths.assign(B, 0);
    flags.assign(1, 0);
    c.sink_k = sk.data(); c.sink_v = sv.data(); c.tail_k = tk.data(); c.tail_v = tv.data();
    c.lengths = lengths.data(); c.flags = flags.data();
  }
  size_t rec_bytes() const { return size_t(c.batch) * c.kv_heads * c.slots * c.record_bytes; }
};

static bool same_cache(const Cache& a, const Cache& b) {
  if (a.lengths != b.lengths || a.flags != b.flags) return false;
  if (std::memcmp(a.c.records, b.c.records, a.rec_bytes())) return false;
  const int D = a.c.head_dim;
  for (int bb = 0; bb < a.c.batch; ++bb) {
    const int L = a.lengths[bb];
    const int ns = L < 128 ? L : 128, nt = L >= 128 ? L % 128 : 0;
    for (int h = 0; h < a.c.kv_heads; ++h) {
      const size_t base = (size_t(bb) * a.c.kv_heads + h) * 128 * D;
      if (std::memcmp(&a.sk[base], &b.sk[base], size_t(ns) * D * 2) || std::memcmp(&a.sv[base], &b.sv[base], size_t(ns) * D * 2))
        return false;
      if (std::memcmp(&a.tk[base], &b.tk[base], size_t(nt) * D * 2) || std::memcmp(&a.tv[base], &b.tv[base], size_t(nt) * D * 2))
        return false;
    }
  }
  return true;
}

struct Data {
  std::vector<uint16_t> k, v;  // [B][H][T][D]
  int B, H, T, D;
};

static Data make_data(int B, int H, int T, int D, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Data d{{}, {}, B, H, T, D};
  d.k.resize(size_t(B) * H * T * D);
  d.v.resize(d.k.size());
  for (size_t i = 0; i < d.k.size(); ++i) {
    float x = n(rng);
    if (i % D == 7) x = x * 8.0f + 3.0f;
    d.k[i] = bf16(x);
    d.v[i] = bf16(n(rng));
  }
  return d;
}

static mlops_fbla_kv kv_of(const Data& d, int t0, const int32_t* counts, int count, int max_count) {
  mlops_fbla_kv kv{};
  kv.k = d.k.data() + size_t(t0) * d.D;
  kv.v = d.v.data() + size_t(t0) * d.D;
  kv.batch_stride = int64_t(d.H) * d.T * d.D; kv.head_stride = int64_t(d.T) * d.D; kv.token_stride = d.D;
  kv.v_batch_stride = kv.batch_stride; kv.v_head_stride = kv.head_stride; kv.v_token_stride = d.D;
  kv.counts = counts; kv.count = count; kv.max_count = max_count;
  return kv;
}

// quick: the planner's two picks only, exact 0, gap 20, fp32 out (a long cache: the emulation is slow)
static void decode_case(const char* what, Cache& gc, Cache& hc, int Hq, unsigned seed, bool peaked, const Data& d,
                        bool quick = false) {
  const int B = gc.c.batch, D = gc.c.head_dim, G = Hq / gc.c.kv_heads;
  std::vector<uint16_t> q(size_t(B) * Hq * D);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int dd = 0; dd < D; ++dd) {
        const int t = int(rng() % unsigned(hc.lengths[b] > 0 ? hc.lengths[b] : 1));
        const float kx = mlops::bf16_to_f32(d.k[((size_t(b) * d.H + h / G) * d.T + t) * D + dd]);
        q[(size_t(b) * Hq + h) * D + dd] = bf16(peaked ? 1.5f * kx : n(rng));
      }
  const size_t sb = mlops_fbla_decode_scratch_bytes(&gc.c, Hq);
  std::vector<uint8_t> s1(sb + 256, 0xcd), s2(sb + 256, 0x5a);  // different garbage: no initial contents needed
  auto al = [](std::vector<uint8_t>& v) { uint8_t* p = v.data(); return p + ((256 - (reinterpret_cast<uintptr_t>(p) & 255)) & 255); };
  const int nvar = mlops_fbla_decode_variants(nullptr, 0);
  std::vector<mlops_fbla_decode_variant> vars(static_cast<size_t>(nvar));
  mlops_fbla_decode_variants(vars.data(), nvar);
  for (int vp = 0; vp <= nvar + 1; ++vp)  // 0 / 1: the planner's pick for pv digits / chains, then every variant
  for (int exact = 0; exact < 2; ++exact)
    for (float gap : {20.0f, 3.0f, INFINITY})
      for (int odt = 0; odt < 2; ++odt) {
        if (exact && gap != 20.0f) continue;
        if (quick && (vp > 1 || exact || gap != 20.0f || odt)) continue;
        std::vector<float> o1(size_t(B) * Hq * D, -7.0f), o2(o1.size(), 9.0f);
        mlops_fbla_decode_args a{};
        a.q = q.data(); a.q_batch_stride = int64_t(Hq) * D; a.q_head_stride = D; a.q_heads = Hq;
        a.out_dtype = odt ? MLOPS_DTYPE_BF16 : MLOPS_DTYPE_FP32;
        a.scale = 1.0f / std::sqrt(float(D)); a.exact = exact; a.gap = gap;
        a.ctas = int((seed + vp) % 4);  // 0 (default 5), 1, 2, 3
        const int var = vp < 2 ? 0 : vp - 1;
        a.variant = var;
        a.pv = vp < 2 ? vp : vars[size_t(var - 1)].pv;
        a.out = o1.data();
        mlops_status st1 = mlops_fbla_decode(&gc.c, &a, al(s1), sb, nullptr);
        a.out = o2.data();
        mlops_status st2 = mlops_fbla_decode_host(&hc.c, &a, al(s2), sb);
        const size_t nbytes = o1.size() * (odt ? 2 : 4);
        CHECK(st1 == MLOPS_OK && st2 == MLOPS_OK && std::memcmp(o1.data(), o2.data(), nbytes) == 0,
              "%s: decode variant=%d pv=%d exact=%d gap=%g out=%s ctas=%d differs (%s)", what, var, a.pv, exact, double(gap),
              odt ? "bf16" : "fp32", a.ctas, mlops_fbla_last_error());
      }
}

// a long row of 297 slots (B1, ~76 K tokens): combine_warps_kernel's tiles of 32 slots past its held ones (the first
// 4 tiles) and the rounds of the 4-warp form tried in session 12 (128 slots a round; GPU run 72, reverted); with D 128
// the planner's kEarly refine and then combine_staged_kernel (session 29: 9 whole stages of 32 slots and a part one)
static void long_case(int D) {
  namespace f = mlops::fbla;
  const int B = 1, H = 1, G = 2, slots = 297;
  const int T = (slots - 1) * f::kChunkGroups * f::kGroup + 100;
  const Data d = make_data(B, H, T, D, 500);
  Cache gc(B, H, T, D, MLOPS_FBLA_3_3), hc(B, H, T, D, MLOPS_FBLA_3_3);
  mlops_fbla_kv kv = kv_of(d, 0, nullptr, T, T);
  CHECK(mlops_fbla_append(&gc.c, &kv, nullptr) == MLOPS_OK && mlops_fbla_append_host(&hc.c, &kv) == MLOPS_OK,
        "long case: append");
  CHECK(1 + f::chunks_of(f::closed_groups(T)) == slots, "long case: %d slots", 1 + f::chunks_of(f::closed_groups(T)));
  const int staged = g_staged;
  decode_case(D == 64 ? "long row" : "long row D 128", gc, hc, H * G, 500, false, d, true);  // seed % 4 == 0: ctas 0
  if (D == 128) CHECK(g_staged > staged, "long row D 128: combine_staged_kernel ran %d times", g_staged - staged);
}

// The cases, each self-contained (its own data, cache and seeds), so that they can run in any order and in parallel
// worker processes (main's -j: CI's machine has 2 cores and this runner took ~15 min serially).
static void grid_case(int i) {  // encode (per-sequence counts) and decode: modes, head dims, GQA, lengths across boundaries
  static const int kG[] = {1, 2, 4, 5, 8, 16};
  const int mode = i / 12, D = (i / 6) % 2 ? 128 : 64, G = kG[i % 6];
  const unsigned seed = unsigned(i + 1);
  const int B = 3, H = 2, T = 4 * 128 + 70;
  const Data d = make_data(B, H, T, D, seed);
  const int32_t counts[B] = {T, 129, 256 + (G % 3)};
  Cache gc(B, H, T + 50, D, mlops_fbla_mode(mode)), hc(B, H, T + 50, D, mlops_fbla_mode(mode));
  mlops_fbla_kv kv = kv_of(d, 0, counts, 0, T);
  CHECK(mlops_fbla_append(&gc.c, &kv, nullptr) == MLOPS_OK, "append: %s", mlops_fbla_last_error());
  CHECK(mlops_fbla_append_host(&hc.c, &kv) == MLOPS_OK, "append_host: %s", mlops_fbla_last_error());
  char what[96];
  std::snprintf(what, sizeof what, "mode %d D %d G %d", mode, D, G);
  CHECK(same_cache(gc, hc), "%s: encode records / sink / tail / lengths differ", what);
  decode_case(what, gc, hc, H * G, seed, G % 2 == 0, d);
}

// the planner's pick for pv digits with 6 refine items (B 1, 2 kv heads, 3 slots a row) on the default 5 CTAs:
// one round of mma_pv4r's kernel (res * 4 / 3 = 6 CTAs) instead of two of mma_pv's (decode_case's vp 0 at ctas 0);
// then on 2 default CTAs (three rounds of mma_pv4r's 2, the quick picks only): on sm_90 mma_pv4r's kernel, on sm_80
// mma_pv's (session 14); then on 6 default CTAs (one round of mma_pv's, the quick picks only): on sm_90 mma_pv4r's
// kernel, on sm_80 mma_pv's (GPU run 80)
static void planner_case() {
  const int B = 1, H = 2, D = 128, T = 4 * 128 + 70;
  const Data d = make_data(B, H, T, D, 400);
  Cache gc(B, H, T + 50, D, MLOPS_FBLA_3_3), hc(B, H, T + 50, D, MLOPS_FBLA_3_3);
  mlops_fbla_kv kv = kv_of(d, 0, nullptr, T, T);
  CHECK(mlops_fbla_append(&gc.c, &kv, nullptr) == MLOPS_OK && mlops_fbla_append_host(&hc.c, &kv) == MLOPS_OK,
        "planner case: append");
  const int before = g_planner_pv4;
  decode_case("planner one round", gc, hc, H * 4, 400, false, d);
  CHECK(g_planner_pv4 > before, "the planner case ran mma_pv4r's kernel %d times", g_planner_pv4 - before);
  g_default_ctas = 2;
  const int many = g_planner_many, mma_pv = g_planner_mma_pv, early = g_planner_early;
  decode_case("planner rounds sm_90", gc, hc, H * 4, 400, false, d, true);
  CHECK(g_planner_many > many && g_planner_mma_pv == mma_pv,
        "sm_90, more rounds: mma_pv4r's kernel %d times, mma_pv's %d", g_planner_many - many,
        g_planner_mma_pv - mma_pv);
  CHECK(g_planner_early - early == g_planner_many - many, "sm_90, more rounds, D 128: the kEarly instance %d times of %d",
        g_planner_early - early, g_planner_many - many);
  g_emu_major = 8;
  decode_case("planner rounds sm_80", gc, hc, H * 4, 400, false, d, true);
  CHECK(g_planner_mma_pv > mma_pv && g_planner_many == many + 1, "sm_80, more rounds: mma_pv's kernel %d times, "
        "mma_pv4r's %d", g_planner_mma_pv - mma_pv, g_planner_many - many - 1);
  g_emu_major = 9;
  g_default_ctas = 6;
  const int within = g_planner_within, one = g_planner_one;
  decode_case("planner within one round sm_90", gc, hc, H * 4, 400, false, d, true);
  CHECK(g_planner_within > within && g_planner_one == one,
        "sm_90, within mma_pv's one round: mma_pv4r's kernel %d times, mma_pv's %d", g_planner_within - within,
        g_planner_one - one);
  g_emu_major = 8;
  decode_case("planner within one round sm_80", gc, hc, H * 4, 400, false, d, true);
  CHECK(g_planner_one > one && g_planner_within == within + 1, "sm_80, within mma_pv's one round: mma_pv's kernel %d "
        "times, mma_pv4r's %d", g_planner_one - one, g_planner_within - within - 1);
  g_emu_major = 9;
  g_default_ctas = 5;
}

// mma_pv4f (the combine folded into the refine, session 13; decode_case runs it on 1 .. 5 CTAs like every variant)
// in two more shapes: D 64 with 8 q heads a kv head (two batches of 4 heads in the refine and in the combine) and a
// capacity past the length (items of slots past nch counted by nobody: B 1, 1 kv head, 6 slots a row, 3 used); 2
// sequences of different lengths (129 tokens: only the BF16 item, no closed group) with 5 q heads a kv head
static void fold_case(int k) {
  const int B = k == 0 ? 1 : 2, H = 1, D = k == 0 ? 64 : 128, G = k == 0 ? 8 : 5, T = k == 0 ? 4 * 128 + 70 : 700;
  const int cap = k == 0 ? 11 * 128 : T + 60;
  const Data d = make_data(B, H, T, D, 404 + 4 * k);
  const int32_t counts[2] = {T, 129};
  Cache gc(B, H, cap, D, MLOPS_FBLA_3_3), hc(B, H, cap, D, MLOPS_FBLA_3_3);
  mlops_fbla_kv kv = kv_of(d, 0, k == 0 ? nullptr : counts, k == 0 ? T : 0, T);
  CHECK(mlops_fbla_append(&gc.c, &kv, nullptr) == MLOPS_OK && mlops_fbla_append_host(&hc.c, &kv) == MLOPS_OK,
        "fold case %d: append", k);
  const int fb = g_fold;
  decode_case(k == 0 ? "fold D 64 G 8" : "fold B 2 G 5", gc, hc, H * G, 404 + 4 * k, false, d);
  CHECK(g_fold > fb, "fold case %d folded the combine %d times", k, g_fold - fb);
}

// appends in steps (uniform counts), crossing boundaries, one token at a time
static void steps_case(int mode) {
  const int B = 2, H = 2, D = 128;
  const int steps[] = {1, 126, 1, 1, 127, 128, 129, 3, 255, 1};
  int T = 0;
  for (int s : steps) T += s;
  const Data d = make_data(B, H, T, D, 77 + mode);
  Cache gc(B, H, T, D, mlops_fbla_mode(mode)), hc(B, H, T, D, mlops_fbla_mode(mode));
  int t0 = 0;
  for (int s : steps) {
    mlops_fbla_kv kv = kv_of(d, t0, nullptr, s, s);
    CHECK(mlops_fbla_append(&gc.c, &kv, nullptr) == MLOPS_OK, "append step");
    CHECK(mlops_fbla_append_host(&hc.c, &kv) == MLOPS_OK, "append_host step");
    t0 += s;
    CHECK(same_cache(gc, hc), "mode %d: append step to %d differs", mode, t0);
  }
  decode_case("after steps", gc, hc, 8, 91 + mode, true, d);
  // a full cache: the kernels write nothing and flag it
  Cache before = gc;
  before.c.records = nullptr;
  std::vector<uint8_t> rec(gc.c.records, gc.c.records + gc.rec_bytes());
  mlops_fbla_kv kv = kv_of(d, 0, nullptr, 1, 1);
  CHECK(mlops_fbla_append(&gc.c, &kv, nullptr) == MLOPS_OK, "append to a full cache launches");
  CHECK(gc.flags[0] == MLOPS_FBLA_FLAG_FULL, "full cache flag %d", gc.flags[0]);
  CHECK(gc.lengths == before.lengths && gc.sk == before.sk && gc.tk == before.tk && gc.tv == before.tv &&
            std::memcmp(rec.data(), gc.c.records, rec.size()) == 0,
        "full cache: nothing written");
}

struct Case {
  const char* name;
  double cost;  // seconds, one core of the 2-core development machine (-O1; session 24): the order of the work queue
  std::function<void()> run;
};

// The longest first, so that the workers finish close together (900 s of cases in all).
static std::vector<Case> all_cases() {
  static const double kGridCost[24] = {9, 10, 12, 21, 23, 50, 18, 20, 23, 42, 50, 102,
                                       12, 12, 15, 25, 27, 52, 19, 21, 23, 43, 49, 94};
  std::vector<Case> cs;
  cs.push_back({"long row", 21, [] { long_case(64); }});
  cs.push_back({"long row D 128", 40, [] { long_case(128); }});
  cs.push_back({"planner", 15, planner_case});
  for (int k = 0; k < 2; ++k)
    cs.push_back({k ? "fold B 2 G 5" : "fold D 64 G 8", k ? 16.0 : 8.0, [k] { fold_case(k); }});
  for (int m = 0; m < 2; ++m) cs.push_back({m ? "steps mode 1" : "steps mode 0", 45, [m] { steps_case(m); }});
  static char names[24][32];
  for (int i = 0; i < 24; ++i) {
    std::snprintf(names[i], sizeof names[i], "grid %d", i);
    cs.push_back({names[i], kGridCost[i], [i] { grid_case(i); }});
  }
  std::stable_sort(cs.begin(), cs.end(), [](const Case& a, const Case& b) { return a.cost > b.cost; });
  return cs;
}

// -j N: N worker processes take the cases from a shared counter (fork: each has its own globals, as the planner
// counters and g_emu_major need); their pass / fail counts add up in shared memory. A worker that dies (a crash in
// the kernels) counts as a failure. Each case's time goes to stderr.
int main(int argc, char** argv) {
  if (std::getenv("MLOPS_EMU_LONG_ONLY")) {  // the long case alone (a quick check of the combine's rounds)
    long_case(64);
    long_case(128);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
  }
  int jobs = 1;
  for (int a = 1; a + 1 < argc; ++a)
    if (!std::strcmp(argv[a], "-j")) jobs = std::atoi(argv[a + 1]);
  if (jobs < 1) jobs = 1;
  const std::vector<Case> cs = all_cases();
  struct Shared {
    std::atomic<int> next, passed, failed;
  };
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 2;
  Shared* sh = new (mem) Shared{{0}, {0}, {0}};
  std::fflush(stdout);
  std::vector<pid_t> kids;
  for (int j = 0; j < jobs; ++j) {
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid > 0) {
      kids.push_back(pid);
      continue;
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);  // FAIL lines whole, not cut by another worker's buffer
    for (int i; (i = sh->next.fetch_add(1)) < int(cs.size());) {
      const auto t0 = std::chrono::steady_clock::now();
      cs[size_t(i)].run();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "case %-14s %7.1f s (worker %d)\n", cs[size_t(i)].name, s, j);
    }
    sh->passed += passed;
    sh->failed += failed;
    std::fflush(stdout);
    _exit(0);
  }
  int dead = 0;
  for (pid_t pid : kids) {
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::printf("FAIL: worker %d ended abnormally (status %d)\n", int(pid), st);
      ++dead;
    }
  }
  std::printf("%d passed, %d failed\n", sh->passed.load(), sh->failed.load() + dead);
  return sh->failed.load() + dead ? 1 : 0;
}
