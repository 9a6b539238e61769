// Launches of the FBLA kernels (the templates are instantiated and launched in this object:
// nvcc 12.8+ keeps template launch stubs local to the object that instantiates them).
#include "fbla_combine_staged.cuh"
#include "fbla_decode_mma4.cuh"
#include "mlops/common/pdl_launch.h"

namespace mlops::fbla {
namespace {

template <int D>
cudaError_t append_t(const AppendParams& p, cudaStream_t s) {
  const int B = p.c.batch, H = p.c.kv_heads;
  if (p.closes > 0 && p.c.slots > 0) close_kernel<D><<<B * H * p.closes, kCloseThreads, 0, s>>>(p);
  store_kernel<D><<<B * H, kThreads, 0, s>>>(p);
  advance_kernel<<<1, kThreads, 0, s>>>(p);
  return cudaGetLastError();
}

// The device's resident CTAs of a kernel (SMs x CTAs an SM), cached per device: host-side queries only.
template <typename K>
int resident(K kernel, int slot, int threads = kThreads, size_t dyn_smem = 0) {
  static int cache[64][26];  // slot: one a kernel instance (0 .. 25)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (dev < 64 && cache[dev][slot] > 0) return cache[dev][slot];
  int sms = 0, per = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, threads, dyn_smem) != cudaSuccess)
    return 0;
  const int n = sms * (per > 0 ? per : 1);
  if (dev < 64) cache[dev][slot] = n;
  return n;
}

// set() (a kernel's attributes) once a device: `done`: the caller's own flags (a function-local static, one set a
// template instance); set() runs again on later calls until it succeeds on that device (devices 64 on: every call).
template <typename F>
cudaError_t once_per_device(bool (&done)[64], F set) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess || (dev < 64 && done[dev])) return e;
  e = set();
  if (e == cudaSuccess && dev < 64) done[dev] = true;
  return e;
}

// refine_stage_kernel's dynamic shared memory (past the 48 KB default) for one instance.
template <int D, int kVParts, int kBf>
cudaError_t stage_attribute() {
  cudaError_t e = cudaFuncSetAttribute(refine_stage_kernel<D, kVParts, kBf>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       stage_smem_bytes(D));
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(refine_stage_kernel<D, kVParts, kBf>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  return e;
}

// ... for every instance at once, once a device: the resident-CTA count is asked of refine_stage_kernel<D, 1>
// whichever stage variant runs first (an instance without the attribute would read 0 CTAs an SM).
template <int D>
cudaError_t stage_attributes() {
  static bool done[64];
  return once_per_device(done, [] {
    cudaError_t e = stage_attribute<D, 1, 1>();
    if (e == cudaSuccess) e = stage_attribute<D, 4, 1>();
    if (e == cudaSuccess) e = stage_attribute<D, 1, 2>();
    return e;
  });
}

// kernel(args...) as a programmatic dependent of the launch before it in s (its launch overlaps that kernel's
// tail), where the code that runs was compiled for sm_90+ (its griddepcontrol.wait exists): a compute_61 / 80 PTX
// build JIT-compiled for an H200 has no wait, so it gets an ordinary launch (ptxVersion tells them apart).
// mode: the caller's cache a device (a function-local static, one a kernel instance): 0 unknown, 1 PDL, 2 ordinary.
template <typename... P, typename... A>
cudaError_t launch_dependent(int (&mode)[64], void (*kernel)(P...), unsigned grid, unsigned block, size_t smem,
                             cudaStream_t s, A... args) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  int m = dev < 64 ? mode[dev] : 0;
  if (m == 0) {
    cudaFuncAttributes fa{};
    e = cudaFuncGetAttributes(&fa, kernel);
    if (e != cudaSuccess) return e;
    m = fa.ptxVersion >= 90 ? 1 : 2;
    if (dev < 64) mode[dev] = m;
  }
  if (m == 2) {
    kernel<<<grid, block, smem, s>>>(args...);
    return cudaGetLastError();
  }
  return launch_pdl(true, kernel, dim3(grid), dim3(block), smem, s, args...);
}

// The slots a row (p.s.P) from which the kEarly refine's combine is an ordinary launch (mma4_launch; session 28): since
// session 29 combine_staged_kernel's up to kStagedMaxP (the same threshold, kStagedMinP), past it combine_warps_kernel.
constexpr int kCombineOrdinaryP = kStagedMinP;

// combine_warps_kernel after the refine launched just before it in s: a warp a (row, 32 channels). pdl: as a
// programmatic dependent of the refine (its CTAs may start during the refine's tail; launch_dependent falls back to an
// ordinary launch for code without griddepcontrol.wait), else an ordinary launch. One place for the grid.
template <int D>
cudaError_t combine_launch(const DecodeParams& p, cudaStream_t s, bool pdl) {
  const unsigned grid = static_cast<unsigned>(p.c.batch * p.Hq * (D / 32));
  if (pdl) {
    static int mode[64];
    return launch_dependent(mode, combine_warps_kernel<D, true>, grid, 32, 0, s, p);
  }
  combine_warps_kernel<D><<<grid, 32, 0, s>>>(p);
  return cudaGetLastError();
}

// A kernel's dynamic shared memory (past the 48 KB default: the refines', the staged combine's) and the largest
// carveout, once a device (done: the caller's flags, one set a kernel instance).
template <typename K>
cudaError_t smem_attributes(bool (&done)[64], K kernel, int bytes) {
  return once_per_device(done, [&] {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    return e;
  });
}

// combine_staged_kernel<D> on the rows of p (staged_rows(p.s.P)) as an ordinary launch.
template <int D>
cudaError_t combine_staged_launch(const DecodeParams& p, cudaStream_t s) {
  static bool done[64];
  const cudaError_t e = smem_attributes(done, combine_staged_kernel<D>, staged_smem_bytes<D>(kStagedMaxP));
  if (e != cudaSuccess) return e;
  combine_staged_kernel<D><<<p.c.batch * p.Hq, D, staged_smem_bytes<D>(p.s.P), s>>>(p);
  return cudaGetLastError();
}

// refine_mma_kernel's, once a device.
template <int D>
cudaError_t mma_attributes() {
  static bool done[64];
  return smem_attributes(done, refine_mma_kernel<D>, mma_smem_bytes(D));
}

// refine_mma4_kernel<D, kNW, kFold, kReread>'s, once a device and instance (kFold: the folded combine; kReread:
// mma_pv4r; the same shared memory).
template <int D, int kNW, bool kFold = false, bool kReread = false, bool kEarly = false>
cudaError_t mma4_attributes() {
  static bool done[64];
  return smem_attributes(done, refine_mma4_kernel<D, kNW, kFold, kReread, kEarly>, mma4_smem_bytes(D));
}

// resident()'s cache slots (0 .. 25, one a kernel instance) of refine_mma4_kernel<D, 8> (mma_pv4 / mma_pv4f unfolded;
// the planner's one-round pick for mma_pv until session 14): 18 for D 64, 19 for D 128; and of mma_pv4r's
// refine_mma4_kernel<D, 8, false, true> (the planner's refine past mma_pv's one round, and on sm_90 within it): 24 / 25.
template <int D>
constexpr int kMma4Slot = D == 64 ? 18 : 19;
template <int D>
constexpr int kMma4rSlot = D == 64 ? 24 : 25;

// The mma_pv4 variants' refine (kNW warps an item; kReread: mma_pv4r's) and the PDL combine; slot: resident()'s cache
// slot. kEarly: the kEarly instance (mma_pv4r's kernel with session 16 a2's front, D 128), on mma_pv4r's slot (the
// same launch bounds, 64 registers at most, and shared memory: the same resident CTAs); its items past the first round
// come from a counter (kDyn, session 22) that the coarse pass zeroes (coarse: it ran), else fold_zero_kernel, with the
// refine its programmatic dependent (an ordinary launch where the code that runs has no griddepcontrol.wait).
template <int D, int kNW, bool kReread = false, bool kEarly = false>
cudaError_t mma4_launch(const DecodeParams& p, int ctas, int refine_items, int slot, cudaStream_t s,
                        bool coarse = true) {
  cudaError_t e = mma4_attributes<D, kNW, false, kReread, kEarly>();
  if (e != cudaSuccess) return e;
  auto* const kernel = refine_mma4_kernel<D, kNW, false, kReread, kEarly>;
  const int res = ctas > 0 ? ctas : resident(kernel, slot, 32 * kNW, mma4_smem_bytes(D));
  if (res <= 0) return cudaErrorInvalidDevice;
  const int grid = refine_items < res ? refine_items : res;
  if (kEarly && !coarse) {
    static int mode[64];
    fold_zero_kernel<<<1, 128, 0, s>>>(p);
    e = cudaGetLastError();
    if (e == cudaSuccess)
      e = launch_dependent(mode, kernel, static_cast<unsigned>(grid), 32 * kNW, mma4_smem_bytes(D), s, p, refine_items);
  } else {
    kernel<<<grid, 32 * kNW, mma4_smem_bytes(D), s>>>(p, refine_items);
    e = cudaGetLastError();  // the refine's launch
  }
  // The kEarly refine with long rows (kCombineOrdinaryP slots or more, ~64 K tokens): the combine as an ordinary
  // launch.
  // GPU runs 141 / 142 (session 28, torch.profiler timelines): as a programmatic dependent its one-warp CTAs were
  // placed as the refine's CTAs left, onto the SMs that emptied first, and B8 L128K's combine (513 slots a row) ended
  // 31 - 36 us after the refine, against 25 - 26 us for an ordinary launch (the CTAs spread over the SMs, 1.5 us of
  // launch gap): B8 L128K 3+3 exact 498.6 -> 489.9 us, B1 L128K 84.1 -> 82.2. With short rows the early launch pays
  // (B8 L4K 4+2 exact 29.8 against 31.5; B8 L16K, 65 slots, even), so below the threshold it stays. Session 29: those
  // long rows' combine is combine_staged_kernel (its partials by bulk copies; run 147: B8 L128K 3+3 exact 486.4 ->
  // 480.3 us, in situ 24.7 -> 18.9 us after the refine), rows past its shared memory combine_warps_kernel's.
  if (e != cudaSuccess) return e;
  if (kEarly && staged_rows(p.s.P)) return combine_staged_launch<D>(p, s);  // session 29: fbla_combine_staged.cuh
  return combine_launch<D>(p, s, !(kEarly && p.s.P >= kCombineOrdinaryP));
}

// mma_pv4f: refine_mma4_kernel<D, 8, true> (the combine folded into the refine: no combine kernel) on `grid` CTAs.
// Where no coarse pass ran (coarse: false), fold_zero_kernel zeroes the counters and the refine is its programmatic
// dependent (griddepcontrol.wait before its first count), or an ordinary launch where the code that runs has no wait
// (a compute_61 / 80 PTX build: ptxVersion < 90); after the coarse pass (it zeroed them), an ordinary launch.
template <int D>
cudaError_t fold_launch(const DecodeParams& p, int refine_items, int grid, bool coarse, cudaStream_t s) {
  static int mode[64];
  if (coarse) {
    refine_mma4_kernel<D, 8, true><<<grid, 256, mma4_smem_bytes(D), s>>>(p, refine_items);
    return cudaGetLastError();
  }
  fold_zero_kernel<<<1, 128, 0, s>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return launch_dependent(mode, refine_mma4_kernel<D, 8, true>, static_cast<unsigned>(grid), 256, mma4_smem_bytes(D), s,
                          p, refine_items);
}

// The device's compute capability major, cached a device (host-side query only).
int device_major() {
  static int cache[64];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (dev < 64 && cache[dev] > 0) return cache[dev];
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
  if (dev < 64) cache[dev] = major;
  return major;
}

template <int D>
cudaError_t decode_t(const DecodeParams& p0, int ctas, cudaStream_t s) {
  const int per = p0.c.batch * p0.c.kv_heads;
  const int coarse_items = per * p0.s.nch, refine_items = per * p0.s.P;
  auto grid = [&](int items, int res) { return items < res ? items : res; };
  // mma_pv4f: the combine folded into the refine where a row's e / l (fold_combine) fit the staged groups' shared
  // memory (D 128: up to ~1600 slots, D 64 ~800); past that mma_pv4's kernels (the same bits). Not the planner's pick:
  // not measured on a GPU yet (session 13).
  DecodeParams p = p0;
  p.fold = p.variant == kMmaPv4f && 4 * fold_smem_floats(p.s.P) <= kChunkGroups * stage_group_bytes(D) ? 1 : 0;
  if (!p.exact && coarse_items > 0 && imma_coarse(p.variant)) {
    const int res = ctas > 0 ? ctas : resident(coarse_warps_kernel<D, true>, D == 64 ? 10 : 11, kWarpThreads);
    if (res <= 0) return cudaErrorInvalidDevice;
    coarse_warps_kernel<D, true><<<grid(coarse_items, res), kWarpThreads, 0, s>>>(p, coarse_items);
  } else if (!p.exact && coarse_items > 0 && warps_coarse(p.variant)) {
    const int res = ctas > 0 ? ctas : resident(coarse_warps_kernel<D>, D == 64 ? 6 : 7, kWarpThreads);
    if (res <= 0) return cudaErrorInvalidDevice;
    coarse_warps_kernel<D><<<grid(coarse_items, res), kWarpThreads, 0, s>>>(p, coarse_items);
  } else if (!p.exact && coarse_items > 0) {
    const int res = ctas > 0 ? ctas : resident(coarse_kernel<D>, D == 64 ? 0 : 2);
    if (res <= 0) return cudaErrorInvalidDevice;
    coarse_kernel<D><<<grid(coarse_items, res), kThreads, 0, s>>>(p, coarse_items);
  }
  if (p.variant == kMmaPv) {
    cudaError_t e = mma_attributes<D>();
    if (e != cudaSuccess) return e;
    const int res = ctas > 0 ? ctas : resident(refine_mma_kernel<D>, D == 64 ? 16 : 17, kMmaThreads, mma_smem_bytes(D));
    if (res <= 0) return cudaErrorInvalidDevice;
    // The planner (pv digits, the device's resident CTAs), where mma_pv's CTAs would take the refine items in more
    // than one round: mma_pv4r's kernel (refine_mma4_kernel<D, 8, false, true>, the same bits) where its 4 CTAs an SM
    // make it one round (every device, as mma_pv4's kernel since session 12: the same kernel with the thread index read
    // again a phase; H200 run 79: B1 L16K 3+3 exact 32.1 us against mma_pv4's 34.6); with more rounds too, but on
    // sm_90 only, where it was measured (run 79: B8 L128K 1050 us against mma_pv's 1140; elsewhere mma_pv's, as before:
    // other shared-memory sizes give other rounds, and no GPU but the H200 ran either there). Items within mma_pv's
    // one round: on sm_90 mma_pv4r's too (run 80: B1 L4K 3+3 exact 23.97 us against mma_pv's 25.79, the planner's
    // 26.14), elsewhere mma_pv's (not measured).
    if (p.planned == 2 && ctas == 0 && (refine_items > res || device_major() == 9)) {
      e = mma4_attributes<D, 8, false, true>();
      if (e != cudaSuccess) return e;
      const int res4 = resident(refine_mma4_kernel<D, 8, false, true>, kMma4rSlot<D>, 256, mma4_smem_bytes(D));
      // D 128 on sm_90 with more than one round of items (session 17): the kEarly instance (session 16 a2's front,
      // 3bf71d2; GPU run 95: B8 L128K 3+3 exact 1015 -> 990 us, B8 L16K 146.5 -> 143.6, B1 L128K 164 -> 160; slower at
      // B1 L16K, one round: 28.9 - 30.5 -> 30.5 - 30.6, which keeps mma_pv4r's kernel). The same bits.
      if constexpr (D == 128)
        if (device_major() == 9 && refine_items > res4)
          return mma4_launch<D, 8, true, true>(p, ctas, refine_items, kMma4rSlot<D>, s, !p.exact && coarse_items > 0);
      if (device_major() == 9 || refine_items <= res4)
        return mma4_launch<D, 8, true>(p, ctas, refine_items, kMma4rSlot<D>, s);
    }
    refine_mma_kernel<D><<<grid(refine_items, res), kMmaThreads, mma_smem_bytes(D), s>>>(p, refine_items);
    e = cudaGetLastError();  // the refine's launch
    return e != cudaSuccess ? e : combine_launch<D>(p, s, true);
  }
  if (p.variant == kMmaPv4) return mma4_launch<D, 8>(p, ctas, refine_items, kMma4Slot<D>, s);
  if (p.variant == kMmaPv4w) return mma4_launch<D, 4>(p, ctas, refine_items, D == 64 ? 20 : 21, s);
  // mma_pv4r (session 14): mma_pv4's kernel with the thread index read again a phase (the same bits, no spilled index
  // values); the planner's refine beyond mma_pv's one round (above, since GPU run 79).
  if (p.variant == kMmaPv4r) return mma4_launch<D, 8, true>(p, ctas, refine_items, kMma4rSlot<D>, s);
  if (p.variant == kMmaPv4f && !p.fold) return mma4_launch<D, 8>(p, ctas, refine_items, kMma4Slot<D>, s);
  if (p.variant == kMmaPv4f) {
    cudaError_t e = mma4_attributes<D, 8, true>();
    if (e != cudaSuccess) return e;
    const int res = ctas > 0 ? ctas
                             : resident(refine_mma4_kernel<D, 8, true>, D == 64 ? 22 : 23, 256, mma4_smem_bytes(D));
    if (res <= 0) return cudaErrorInvalidDevice;
    return fold_launch<D>(p, refine_items, grid(refine_items, res), !p.exact && coarse_items > 0, s);
  }
  if (stage_refine(p.variant)) {
    const cudaError_t e = stage_attributes<D>();
    if (e != cudaSuccess) return e;
    const int res = ctas > 0 ? ctas
                             : resident(refine_stage_kernel<D, 1>, D == 64 ? 14 : 15, kWarpThreads, stage_smem_bytes(D));
    if (res <= 0) return cudaErrorInvalidDevice;
    if (p.variant == kStagePipe)
      refine_stage_kernel<D, 4><<<grid(refine_items, res), kWarpThreads, stage_smem_bytes(D), s>>>(p, refine_items);
    else if (p.variant == kStageBf)
      refine_stage_kernel<D, 1, 2><<<grid(refine_items, res), kWarpThreads, stage_smem_bytes(D), s>>>(p, refine_items);
    else
      refine_stage_kernel<D, 1><<<grid(refine_items, res), kWarpThreads, stage_smem_bytes(D), s>>>(p, refine_items);
  } else if (p.variant == kImmaOcc) {
    const int res =
        ctas > 0 ? ctas : resident(refine_warps_kernel<D, true, kImmaOccCtas>, D == 64 ? 12 : 13, kWarpThreads);
    if (res <= 0) return cudaErrorInvalidDevice;
    refine_warps_kernel<D, true, kImmaOccCtas><<<grid(refine_items, res), kWarpThreads, 0, s>>>(p, refine_items);
  } else if (imma_refine(p.variant)) {
    const int res = ctas > 0 ? ctas : resident(refine_warps_kernel<D, true>, D == 64 ? 8 : 9, kWarpThreads);
    if (res <= 0) return cudaErrorInvalidDevice;
    refine_warps_kernel<D, true><<<grid(refine_items, res), kWarpThreads, 0, s>>>(p, refine_items);
  } else if (warps_refine(p.variant)) {
    const int res = ctas > 0 ? ctas : resident(refine_warps_kernel<D>, D == 64 ? 4 : 5, kWarpThreads);
    if (res <= 0) return cudaErrorInvalidDevice;
    refine_warps_kernel<D><<<grid(refine_items, res), kWarpThreads, 0, s>>>(p, refine_items);
  } else {
    const int res = ctas > 0 ? ctas : resident(refine_kernel<D>, D == 64 ? 1 : 3);
    if (res <= 0) return cudaErrorInvalidDevice;
    refine_kernel<D><<<grid(refine_items, res), kThreads, 0, s>>>(p, refine_items);
  }
  const cudaError_t e = cudaGetLastError();  // the refine's launch
  if (e != cudaSuccess) return e;
  if (p.variant == kItems) {  // the block-a-row combine (kItems' own)
    combine_kernel<D><<<p.c.batch * p.Hq, D, 0, s>>>(p);
    return cudaGetLastError();
  }
  return combine_launch<D>(p, s, stage_refine(p.variant));
}

}  // namespace

cudaError_t append_device(const AppendParams& p, cudaStream_t s) {
  return p.c.head_dim == 64 ? append_t<64>(p, s) : append_t<128>(p, s);
}

cudaError_t decode_device(const DecodeParams& p, int ctas, cudaStream_t s) {
  if (p.planned == 1 && device_major() < 8) {  // the planner's pick needs the tensor core (fbla_internal.h)
    DecodeParams q = p;
    q.variant = kPlannerBelowSm80;
    return q.c.head_dim == 64 ? decode_t<64>(q, ctas, s) : decode_t<128>(q, ctas, s);
  }
  return p.c.head_dim == 64 ? decode_t<64>(p, ctas, s) : decode_t<128>(p, ctas, s);
}

}  // namespace mlops::fbla
