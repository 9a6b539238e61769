// Launches of the sampler's kernels (sample_kernel.cuh). They stay in this file, the one that
// instantiates the templates (nvcc >= 12.8: template launch stubs are local to their object).
#include <mutex>

#include "sample_cluster_kernel.cuh"

namespace mlops::vocab {
namespace {

constexpr size_t kGatherBytes = size_t(kGather) * sizeof(float);  // the gather forms' list

template <int NT>
cudaError_t launch_nt(const SampleParams& p, cudaStream_t s) {
  sample_kernel<NT><<<unsigned(p.rows), NT, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_penalties(const SampleParams& p, cudaStream_t s) {
  if (!p.history || p.history_stride <= 0) return cudaSuccess;
  const dim3 grid(unsigned((p.history_stride + 255) / 256), unsigned(p.rows));
  penalty_count_kernel<<<grid, 256, 0, s>>>(p);
  penalty_apply_kernel<<<grid, 256, 0, s>>>(p);
  return cudaGetLastError();
}

// The launch configuration of a cluster of C CTAs a row over `rows` rows.
template <int C, int NT = kClusterThreads>
struct ClusterLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  ClusterLaunch(int64_t rows, cudaStream_t s, size_t dyn = 0) {
    cfg.gridDim = dim3(unsigned(C), unsigned(rows), 1);
    cfg.blockDim = dim3(unsigned(NT), 1, 1);
    cfg.dynamicSmemBytes = dyn;
    cfg.stream = s;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(C);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
};

// Whether this device schedules clusters of 16 (a non-portable size: the attribute is set, and the
// occupancy asked, once a device, outside any capture since the first call of a variant is eager).
bool cluster16_ok() {
  static std::mutex mu;
  static uint64_t known = 0, ok = 0;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev >= 64) {
    cudaGetLastError();
    return false;
  }
  std::lock_guard<std::mutex> g(mu);
  if (!(known >> dev & 1u)) {
    auto kernel = sample_cluster_kernel<16, kClusterThreads>;
    int n = 0;
    bool yes = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
    if (yes) {
      ClusterLaunch<16> l(1, nullptr);
      yes = cudaOccupancyMaxActiveClusters(&n, kernel, &l.cfg) == cudaSuccess && n > 0;
    }
    cudaGetLastError();
    known |= uint64_t(1) << dev;
    if (yes) ok |= uint64_t(1) << dev;
  }
  return (ok >> dev & 1u) != 0;
}

template <int C>
cudaError_t launch_cluster(const SampleParams& p, cudaStream_t s) {
  ClusterLaunch<C> l(p.rows, s);
  cudaError_t e = cudaLaunchKernelEx(&l.cfg, sample_cluster_kernel<C, kClusterThreads>, p);
  return e != cudaSuccess ? e : cudaGetLastError();
}

// Whether the staged form of a cluster of C runs with `bytes` of dynamic shared memory on this
// device: the opt-in attribute raised to what the device allows next to the static shared memory
// (once a device), and for C = 16 (non-portable) an occupancy of at least one cluster at that size.
// The answer for the last size asked is kept a device (a Sampler asks one size); the first call of
// a variant is eager (never inside a capture), so the queries never run during one.
template <int C, int NT, class F = StagedForm>
bool staged_ok(size_t bytes) {
  static std::mutex mu;
  static int max_dyn[64] = {};                 // 0: not asked yet; -1: no staged form here
  static size_t asked[64] = {}, ok_bytes[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev >= 64) {
    cudaGetLastError();
    return false;
  }
  auto kernel = sample_cluster_kernel<C, NT, F>;
  std::lock_guard<std::mutex> g(mu);
  if (max_dyn[dev] == 0) {
    int optin = 0;
    cudaFuncAttributes a;
    max_dyn[dev] = -1;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
        cudaFuncGetAttributes(&a, kernel) == cudaSuccess && optin > int(a.sharedSizeBytes)) {
      const int m = optin - int(a.sharedSizeBytes);
      if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, m) == cudaSuccess &&
          (C <= 8 || cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess))
        max_dyn[dev] = m;
    }
    cudaGetLastError();
  }
  if (max_dyn[dev] < 0 || bytes > size_t(max_dyn[dev])) return false;
  if (C <= 8) return true;
  if (asked[dev] != bytes) {
    ClusterLaunch<C, NT> l(1, nullptr, bytes);
    int n = 0;
    const bool yes = cudaOccupancyMaxActiveClusters(&n, kernel, &l.cfg) == cudaSuccess && n > 0;
    cudaGetLastError();
    asked[dev] = bytes;
    ok_bytes[dev] = yes ? bytes : 0;
  }
  return ok_bytes[dev] == bytes;
}

template <int C, int NT, class F = StagedForm>
cudaError_t launch_cluster_staged(const SampleParams& p, cudaStream_t s, size_t bytes) {
  ClusterLaunch<C, NT> l(p.rows, s, bytes);
  cudaError_t e = cudaLaunchKernelEx(&l.cfg, sample_cluster_kernel<C, NT, F>, p);
  return e != cudaSuccess ? e : cudaGetLastError();
}

// The global-slice tp3 forms (kSampleStaged 11, vocab_api.cpp): NT-thread CTAs (1024, or 512 for cluster2_tp3g_t512),
// C a row, the gathered list alone in dynamic shared memory (8 KB: no opt-in), or with the near codes
// (MLOPS_SAMPLE_GSL_NIBBLES, gsl_dyn_bytes: 48 KB at V = 151936 and C = 2, over the 48 KB without opt-in with the
// static part: staged_ok raises the attribute). False (nothing launched) where the slices would not start 16-byte
// aligned (the logits' address or row stride), a slice is over kGslMaxSlice, or the shared memory does not fit.
template <int C, int NT = 1024>
bool launch_global(const SampleParams& p, cudaStream_t s, cudaError_t* e) {
  if ((reinterpret_cast<uintptr_t>(p.logits) & 15u) != 0 || (p.logits_stride & 3) != 0 ||
      gsl_slice(p.vocab, C) > kGslMaxSlice)
    return false;
  const size_t bytes = size_t(gsl_dyn_bytes(p.vocab, C, NT));
  if (bytes > kGatherBytes && !staged_ok<C, NT, Tp3gForm>(bytes)) return false;
  ClusterLaunch<C, NT> l(p.rows, s, bytes);
  *e = cudaLaunchKernelEx(&l.cfg, sample_cluster_kernel<C, NT, Tp3gForm>, p);
  if (*e == cudaSuccess) *e = cudaGetLastError();
  return true;
}

template <int C>
int cluster_code_arch() {
  cudaFuncAttributes attr;
  if (cudaFuncGetAttributes(&attr, sample_cluster_kernel<C, kClusterThreads>) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return attr.ptxVersion;  // major * 10 + minor
}

}  // namespace

// The arch the cluster kernel's code was generated for: a compute_80 build JIT-compiled on an sm_90
// GPU has an empty body there, so the API must not launch it.
int sample_cluster_code_arch(int cluster) { return cluster > 8 ? cluster_code_arch<16>() : cluster_code_arch<8>(); }

bool sample_cluster16_ok() { return cluster16_ok(); }

// The 512-thread staged forms (kSampleStaged 2 .. 10, vocab_api.cpp; F: sample_cluster_forms.cuh; the gather-based
// forms keep the gathered list after the slice) at a cluster of 16, or of 8 where that is asked or where 16 cannot
// schedule: the cluster size whose staged form runs, 0 where neither fits (the unstaged form runs: the same tokens).
template <class F>
int staged512_cluster(int cluster, int64_t vocab, size_t* bytes) {
  const size_t extra = F::gather ? kGatherBytes : 0;
  const size_t b8 = size_t(cluster_stage_bytes(vocab, 8)) + extra, b16 = size_t(cluster_stage_bytes(vocab, 16)) + extra;
  if (cluster == 16 && staged_ok<16, kClusterThreads, F>(b16)) {
    *bytes = b16;
    return 16;
  }
  if ((cluster == 8 || !cluster16_ok()) && staged_ok<8, kClusterThreads, F>(b8)) {
    *bytes = b8;
    return 8;
  }
  return 0;
}

// staged512_cluster's form launched, if one fits: true and its launch status in *e; false where none fits.
template <class F>
bool launch_staged512(const SampleParams& p, int cluster, cudaStream_t s, cudaError_t* e) {
  size_t bytes = 0;
  switch (staged512_cluster<F>(cluster, p.vocab, &bytes)) {
    case 16: *e = launch_cluster_staged<16, kClusterThreads, F>(p, s, bytes); return true;
    case 8: *e = launch_cluster_staged<8, kClusterThreads, F>(p, s, bytes); return true;
  }
  return false;
}

// What sample_launch_cluster does with a staged variant: whether its staged form runs (cluster 16
// at `threads`, or the cluster-8 form where 16 cannot schedule).
bool sample_cluster_staged_ok(int cluster, int threads, int64_t vocab, int staged) {
  size_t bytes = 0;
  switch (staged) {
    case 2: return staged512_cluster<EsForm>(cluster, vocab, &bytes) != 0;                  // the early-stop forms
    case 3: return staged512_cluster<LeanForm>(cluster, vocab, &bytes) != 0;           // the lean forms
    case 4: return staged512_cluster<GatherForm>(cluster, vocab, &bytes) != 0;     // the gather forms
    case 5: return staged512_cluster<LateForm>(cluster, vocab, &bytes) != 0;        // the late forms
    case 6: return staged512_cluster<WideForm>(cluster, vocab, &bytes) != 0;  // the wide forms
    case 7: return staged512_cluster<TkForm>(cluster, vocab, &bytes) != 0;  // tk
    case 8: return staged512_cluster<TpForm>(cluster, vocab, &bytes) != 0;  // tp
    case 9: return staged512_cluster<Tp2Form>(cluster, vocab, &bytes) != 0;  // tp2
    case 10: return staged512_cluster<Tp3Form>(cluster, vocab, &bytes) != 0;  // tp3
    // the global-slice tp3 forms: where a contiguous row's slices start 16-byte aligned (the launch checks the address
    // and stride: else cluster8_tp3 runs, the same tokens)
    case 11: return vocab % 4 == 0 && gsl_slice(vocab, cluster) <= kGslMaxSlice;
  }
  const size_t b8 = size_t(cluster_stage_bytes(vocab, 8)), b16 = size_t(cluster_stage_bytes(vocab, 16));
  if (cluster == 16 && threads == 1024 && staged_ok<16, 1024>(b16)) return true;
  if (cluster == 16 && threads != 1024 && staged_ok<16, kClusterThreads>(b16)) return true;
  return (cluster == 8 || !cluster16_ok()) && staged_ok<8, kClusterThreads>(b8);
}

cudaError_t sample_launch_cluster(const SampleParams& p, int cluster, int staged, int threads, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);  // the kernel applies the penalties itself
  cudaError_t e = cudaSuccess;
  bool ran = false;  // a staged form launched; where its slice does not fit, the unstaged form (the same tokens)
  switch (staged) {
    case 2: ran = launch_staged512<EsForm>(p, cluster, s, &e); break;
    case 3: ran = launch_staged512<LeanForm>(p, cluster, s, &e); break;
    case 4: ran = launch_staged512<GatherForm>(p, cluster, s, &e); break;
    case 5: ran = launch_staged512<LateForm>(p, cluster, s, &e); break;
    case 6: ran = launch_staged512<WideForm>(p, cluster, s, &e); break;
    case 7: ran = launch_staged512<TkForm>(p, cluster, s, &e); break;
    case 8: ran = launch_staged512<TpForm>(p, cluster, s, &e); break;
    case 9: ran = launch_staged512<Tp2Form>(p, cluster, s, &e); break;
    case 10: ran = launch_staged512<Tp3Form>(p, cluster, s, &e); break;
    case 11:  // the global-slice tp3 forms, else cluster8_tp3 (the same tokens)
      ran = cluster == 4 ? launch_global<4>(p, s, &e) : threads == 512 ? launch_global<2, 512>(p, s, &e)
                                                                        : launch_global<2>(p, s, &e);
      if (!ran) ran = launch_staged512<Tp3Form>(p, 8, s, &e);
      break;
    case 0: break;
    default: {  // the first staged forms (512 or 1024 threads)
      const size_t b8 = size_t(cluster_stage_bytes(p.vocab, 8)), b16 = size_t(cluster_stage_bytes(p.vocab, 16));
      if (threads == 1024 && cluster == 16 && staged_ok<16, 1024>(b16)) return launch_cluster_staged<16, 1024>(p, s, b16);
      if (cluster == 16 && staged_ok<16, kClusterThreads>(b16)) return launch_cluster_staged<16, kClusterThreads>(p, s, b16);
      if (cluster == 16 && !cluster16_ok() && staged_ok<8, kClusterThreads>(b8))
        return launch_cluster_staged<8, kClusterThreads>(p, s, b8);
      if (cluster == 8 && staged_ok<8, kClusterThreads>(b8)) return launch_cluster_staged<8, kClusterThreads>(p, s, b8);
    }
  }
  if (ran) return e;
  switch (cluster) {
    case 8: return launch_cluster<8>(p, s);
    case 16: return cluster16_ok() ? launch_cluster<16>(p, s) : launch_cluster<8>(p, s);  // same tokens
    case 2:
    case 4: return launch_cluster<8>(p, s);  // a global-slice form where nothing staged runs: the same tokens
  }
  return cudaErrorInvalidValue;
}

cudaError_t sample_launch_split(const SampleParams& p, int threads, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = launch_penalties(p, s);
  if (e != cudaSuccess) return e;
  e = cudaMemsetAsync(p.split, 0, sizeof(SplitRow) * size_t(p.rows), s);
  if (e != cudaSuccess) return e;
  const dim3 chunks(unsigned(p.chunks), unsigned(p.rows));
  split_stats_kernel<<<chunks, kSplitThreads, 0, s>>>(p);
  split_mass_kernel<<<chunks, kSplitThreads, 0, s>>>(p);
  if (threads != 1024) return cudaErrorInvalidValue;
  sample_kernel<1024><<<unsigned(p.rows), 1024, 0, s>>>(p);
  split_sum_kernel<<<chunks, kSplitThreads, 0, s>>>(p);
  split_draw_kernel<<<unsigned(p.rows), kSplitThreads, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t sample_launch(const SampleParams& p, int threads, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t e = launch_penalties(p, s);
  if (e != cudaSuccess) return e;
  switch (threads) {
    case 256: return launch_nt<256>(p, s);
    case 512: return launch_nt<512>(p, s);
    case 1024: return launch_nt<1024>(p, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlops::vocab
