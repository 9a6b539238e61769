// The sampler on a thread-block cluster (sm_90): C CTAs a row, each owning a contiguous slice of
// it, exchanging histograms and sums through distributed shared memory, one launch a call. Per row:
//   penalty  the history's counts into the zeroed workspace, a cluster barrier, each distinct
//            token's count taken back to zero by one thread, which applies the penalty, a barrier;
//   max      each CTA's max / lowest argmax / flags over its slice, merged over the cluster
//            (or the LM head's statistics); greedy rows stop here;
//   top-k    radix select of the k-th largest key, one byte a round: each CTA counts its slice's
//            keys (matching the prefix so far) per digit in shared memory, the cluster barrier,
//            every CTA adds the C histograms (integers: the same values in every CTA) and picks the
//            same bin with a parallel suffix scan; a round stops early when the bin holds exactly
//            the remaining count;
//   top-p    the same rounds on 64-bit fixed-point mass histograms among the top-k;
//   draw     each warp's kept sum over its sub-chunk of the slice, the cluster's totals, and the one
//            CTA whose slice holds floor(R * S / 2^64) walks it: the warp whose sub-chunk holds it,
//            then the lane whose piece of that sub-chunk holds it, and the warp walks that piece
//            32 elements at a time in index order.
// After the first round, each CTA keeps the elements of its slice that can still matter (keys at or
// above the chosen first-level bin, unordered) in shared memory when they fit, and later rounds read
// only them. Every quantity is an integer or a value-defined threshold, the same ones the one-CTA
// kernel (sample_kernel.cuh) and the host emulation use, so the token is the same as theirs.
// Rows whose kernel was not built for sm_90 never come here (the API falls back to t1024);
// tests/c/sample_kernel_on_host.cpp runs this code on the host with its clusters emulated.
//
// The phases' code, in the order the kernel includes it: sample_cluster_shared.cuh, _slice, _lean, _gather,
// _wide, _wide_top_p, _list_rounds, _draw (each file includes the one before it); the variants' forms (which
// phases a kernel takes) in sample_cluster_forms.cuh.
#pragma once
#include "sample_cluster_draw.cuh"
#include "sample_cluster_forms.cuh"

namespace mlops::vocab {
namespace {

// Bytes of dynamic shared memory the staged form takes for a row of `vocab` over C CTAs.
MLOPS_HD constexpr int64_t cluster_stage_bytes(int64_t vocab, int C) { return ((vocab + C - 1) / C * 4 + 15) / 16 * 16; }
// The global-slice forms' slice length: V / C rounded up to whole 16-byte groups, so that every CTA's slice starts
// 16-byte aligned where the row does (their float4 reads of it: build_candidates_tk / _staged, chunk_draw).
MLOPS_HD constexpr int64_t gsl_slice(int64_t vocab, int C) { return ((vocab + C - 1) / C + 3) / 4 * 4; }
// Their dynamic shared memory: the gathered list (kGather floats), then the near codes' words (MLOPS_SAMPLE_GSL_NIBBLES;
// 40 KB at V = 151936, C = 2, 1024 threads; at most 64 KB, at kGslMaxSlice).
MLOPS_HD constexpr int64_t gsl_dyn_bytes(int64_t vocab, int C, int NT) {
  return int64_t(kGather) * 4 + (MLOPS_SAMPLE_GSL_NIBBLES ? 8 * int64_t(NT) * gsl_nib_words(gsl_slice(vocab, C), NT) : 0);
}
#define MLOPS_SAMPLE_HAS_GSL 1  // the GSL forms exist (bench/sample_timeline_probe.cu times them where they do)

// 2 CTAs an SM at 512 threads, 1 at 1024: 64 registers a thread either way. F: the variant's form, which steps it
// takes (sample_cluster_forms.cuh); the unstaged form by default.
template <int C, int NT, class F = ClusterForm>
__global__ void __launch_bounds__(NT, NT <= 512 ? 2 : 1) sample_cluster_kernel(SampleParams p) {
#if defined(MLOPS_SAMPLE_CLUSTER_BODY)
  constexpr bool STAGE = F::stage, ES = F::es, LEAN = F::lean, GATHER = F::gather, LATE = F::late, WIDE = F::wide,
                 TK = F::tk, TP = F::tp, TP2 = F::tp2, TP3 = F::tp3, GSL = F::gsl;
  static_assert(NT >= 256 && NT % 32 == 0 && NT / 32 <= 32, "the bin scans take 256 threads; one warp scans the warps");
  static_assert(!LEAN || (STAGE && !ES && C <= 32), "the lean draw rewrites the staged slice; one warp reads the cluster");
  static_assert(!GATHER || LEAN, "the gathered rounds are a lean form's");
  static_assert(!LATE || GATHER, "the second gather is a gather form's");
  static_assert(!WIDE || LATE, "the wide rounds are a late form's");
  static_assert(!TK || (GATHER && !LATE), "the tk forms are gather forms (the late / wide lists hold values)");
  // MLOPS_SAMPLE_TK_COUNT_WINDOW: a fused top-k row's level 3 from 32 bins by warp 0 in the max phase (the lean exchange)
  constexpr bool kCountWindow = TK && LEAN && MLOPS_SAMPLE_TK_COUNT_WINDOW != 0 && !MLOPS_SAMPLE_COUNT_QUADS;
  // MLOPS_SAMPLE_TK_PUSH: the windowed rows' gather pushed by the listing CTAs (push_candidates)
  constexpr bool kPush = kCountWindow && MLOPS_SAMPLE_TK_PUSH > 0 && C >= MLOPS_SAMPLE_TK_PUSH;
  constexpr bool kWindowGuess = kCountWindow && MLOPS_SAMPLE_TK_WINDOW_GUESS;
  // MLOPS_SAMPLE_TP3_WARPS: tp3_rounds' level 2 chosen by every warp (not the global-slice forms: B = 64's stacks)
  constexpr bool kTp3Warps = MLOPS_SAMPLE_TP3_WARPS && NT < 1024 && !GSL && !MLOPS_SAMPLE_TP3_LEVEL1;
  // MLOPS_SAMPLE_TK_FINISH2: the staged tk forms' level 2 on the gathered list and tk_finish in one (tk_level2_finish)
  constexpr bool kFinish2 =
      TK && !GSL && NT < 1024 && MLOPS_SAMPLE_TK_FINISH2 > 0 && C >= MLOPS_SAMPLE_TK_FINISH2;
  static_assert(!TP || (TK && !WIDE), "the tp forms are tk forms");
  static_assert(!TP2 || TP, "the tp2 forms are tp forms");
  static_assert(!TP3 || TP, "the tp3 forms are tp forms");
  static_assert(!GSL || (TK && STAGE), "the global-slice forms are tk forms");
  static_assert(kWideBins == 256 * kRep, "a wide histogram takes the hlo / hhi words");
  static_assert(!MLOPS_SAMPLE_PENALTY_TABLE || (kPenaltySlots <= kClusterCand && kPenaltySlots <= 256 * kRep),
                "the penalty table's keys in cand, its counts in hlo");
#if defined(MLOPS_CUDA_ON_HOST)
  ClusterShared<NT>& sh = host_block_shared<ClusterShared<NT>>();
#else
  __shared__ ClusterShared<NT> sh;
#endif
  constexpr int NW = NT / 32;
  const unsigned rank = cluster_rank();
  const int64_t row = blockIdx.y;
  const int tid = threadIdx.x;
  const unsigned lane = unsigned(tid) & 31u;
  const int warp = tid >> 5;
  const int64_t V = p.vocab;
  const float* z = p.logits + row * p.logits_stride;
  const mlops_sample_config cfg = sanitize(p.configs[row]);
  const int64_t step = p.steps[row];  // read before any barrier: rank 0 advances it after the last
#if !defined(MLOPS_CUDA_ON_HOST)
  // MLOPS_SAMPLE_EARLY_DRAW: the seed's line on its way to L2 (no register, no wait) for the max phase's draw64
  if (MLOPS_SAMPLE_EARLY_DRAW && LEAN && tid == 0) asm volatile("prefetch.global.L2 [%0];" ::"l"(p.seeds + row));
#endif
  MLOPS_SAMPLE_MARK(0);
  MLOPS_SAMPLE_ROW_SPAN(0);
  const int64_t ch = GSL ? gsl_slice(V, C) : (V + C - 1) / C;
  const int64_t v0 = int64_t(rank) * ch < V ? int64_t(rank) * ch : V;
  const int64_t v1 = v0 + ch < V ? v0 + ch : V;
  float* zs = nullptr;  // the staged slice (STAGE): element v at zs[v - v0]
  if constexpr (STAGE) {
#if defined(MLOPS_CUDA_ON_HOST)
    zs = host_dynamic_shared<float>();
#else
    extern __shared__ float4 sample_slice_smem[];
    zs = reinterpret_cast<float*>(sample_slice_smem);
#endif
  }
  // the gather forms: the cluster's candidates, after the slice in dynamic shared memory
  float* all = GATHER ? zs + cluster_stage_bytes(V, C) / 4 : nullptr;
  if constexpr (GSL) {  // the slice stays in the (penalized) row; the dynamic shared memory holds the gathered list
    all = zs;
    zs = p.logits + row * p.logits_stride + v0;
#if !defined(MLOPS_CUDA_ON_HOST)
    // MLOPS_SAMPLE_GSL_PREFETCH (sample_cluster_shared.cuh): the slice's 128-byte lines asked into L1 now, one a thread
    if (MLOPS_SAMPLE_GSL_PREFETCH)
      for (int64_t a = int64_t(tid) * 32; a < v1 - v0; a += int64_t(NT) * 32)
        asm volatile("prefetch.global.L1 [%0];" ::"l"(zs + a));
#endif
  }
  // MLOPS_SAMPLE_EARLY_STAGE (sample_cluster_slice.cuh): the slice's copy issued before the penalties' reads; pre4: its
  // 16-byte groups in flight into zs (0: stage_slice loads the slice itself)
  int64_t pre4 = 0;
  if constexpr (STAGE && !GSL) {
    if (MLOPS_SAMPLE_EARLY_STAGE) pre4 = stage_issue<NT>(z + v0, v1 - v0, zs);
  }
  int all_n = -1;  // >= 0 once gathered: every later round reads all[0 .. all_n) in this CTA alone
  bool gather_tried = false;
  bool topp_by_warp = false;  // tk_top_p found top-p by one warp (its entries stay for list_draw_kept)
  // element v of this CTA's slice, from shared memory (STAGE) or the row
  auto zr = [&](int64_t v) -> float {
    if constexpr (STAGE) return zs[v - v0];
    else return z[v];
  };

  // ---- penalties (what penalty_count_kernel and penalty_apply_kernel do, in this launch): count
  // each history token into the zeroed workspace, the cluster barrier (global writes of the
  // cluster's CTAs are visible after it), the one thread that takes a token's count back to zero
  // applies the penalty once, the barrier again
  // MLOPS_SAMPLE_PENALTY_TABLE (session 42, on since GPU run 213: sample_cluster_shared.cuh): a history of at most
  // kPenaltyTableMax tokens is counted in shared memory instead, each CTA the tokens of its own slice (a hash table of
  // kPenaltySlots keys in cand and counts in hlo, neither used before the staging), and each counted token penalized
  // once by its CTA: no global atomics, no workspace, no cluster barrier (every read of a CTA's slice before the next
  // cluster barrier is its own, which a block barrier orders). The B = 64 probe put ~2.6 us of a penalties + top-p row
  // here (GPU run 212, cluster2_tp3g: 3.0 against 0.4 without penalties: an atomic round trip, a logit's read and two
  // cluster barriers); the same counts, the same penalized logits.
  const int64_t hn = history_length(p, row);
  if (MLOPS_SAMPLE_PENALTY_TABLE && hn > 0 && hn <= kPenaltyTableMax && p.penalty_counts && config_has_penalty(cfg)) {
    const int32_t* h = p.history + row * p.history_stride;
    uint32_t* keys = reinterpret_cast<uint32_t*>(sh.cand);
    uint32_t* cnt = sh.hlo;
    uint32_t* val = sh.hhi;  // PENALTY_PREFETCH: the key's logit, stored by the thread that inserted the key
    for (int i = tid; i < kPenaltySlots; i += NT) {
      keys[i] = ~0u;
      cnt[i] = 0;
    }
    __syncthreads();
    for (int64_t i = tid; i < hn; i += NT) {
      const int32_t t = h[i];
      if (t < v0 || t >= v1) continue;  // another CTA's token, or none (v0 >= 0, v1 <= V)
      // PENALTY_PREFETCH: the logit's load issued before the probing, its latency under the shared atomics' (the
      // apply pass then reads shared memory alone: no dependent global load after the barrier)
      const float zv = MLOPS_SAMPLE_PENALTY_PREFETCH ? z[t] : 0.0f;  // the logit (zt below: its address)
      // linear probing from a mixed hash (a multiplicative one alone spreads the runner's evenly spaced tokens
      // without a collision, so its probing would go unchecked)
      uint32_t at = uint32_t(t) * 0x9e3779b1u;
      at ^= at >> 15;
      at = (at * 0x85ebca6bu) >> (32 - kPenaltySlotBits);
      for (;;) {
        const uint32_t k = atomicCAS(&keys[at], ~0u, uint32_t(t));
        if (k == ~0u || k == uint32_t(t)) {
          if (MLOPS_SAMPLE_PENALTY_PREFETCH && k == ~0u) val[at] = f32_bits(zv);
          break;
        }
        at = (at + 1u) & uint32_t(kPenaltySlots - 1);
      }
      atomicAdd(&cnt[at], 1u);
    }
    if (pre4 > 0) stage_wait();  // EARLY_STAGE: every copy into zs landed (the barrier below) before its patches
    __syncthreads();
    for (int i = tid; i < kPenaltySlots; i += NT) {
      const uint32_t t = keys[i];
      if (t != ~0u) {
        float* zt = p.logits + row * p.logits_stride + t;
        const float pz = penalize(MLOPS_SAMPLE_PENALTY_PREFETCH ? bits_f32(val[i]) : *zt, int32_t(cnt[i]), cfg);
        *zt = pz;
        if (int64_t(t) - v0 < 4 * pre4) zs[int64_t(t) - v0] = pz;  // EARLY_STAGE: the copy too (t in this slice)
      }
    }
    __syncthreads();  // the penalized logits before this CTA's reads of its slice; cand / hlo free again
  } else if (hn > 0 && p.penalty_counts && config_has_penalty(cfg)) {
    const int32_t* h = p.history + row * p.history_stride;
    int32_t* counts = p.penalty_counts + row * V;
    for (int64_t i = int64_t(rank) * NT + tid; i < hn; i += int64_t(C) * NT) {
      const int32_t t = h[i];
      if (t >= 0 && t < V) atomicAdd(counts + t, 1);
    }
    cluster_sync();
    for (int64_t i = int64_t(rank) * NT + tid; i < hn; i += int64_t(C) * NT) {
      const int32_t t = h[i];
      if (t < 0 || t >= V) continue;
      const int32_t c = atomicExch(counts + t, 0);
      if (c > 0) p.logits[row * p.logits_stride + t] = penalize(p.logits[row * p.logits_stride + t], c, cfg);
    }
    cluster_sync();
    if (pre4 > 0) {  // EARLY_STAGE: any CTA may have changed this slice; stage_slice loads it again (after the copies)
      stage_wait();
      pre4 = 0;
    }
  }
  MLOPS_SAMPLE_MARK(1);

  // ---- max, lowest argmax, flags: this CTA's slice, then the cluster's (or the head's statistics)
  const bool stats = row_uses_stats(p, row, cfg);
  uint64_t best = 0;
  int flags = 0;
  int fl = 0;
  // TK: a top-k row measured here counts its first round (the key's top byte) in the staging pass and
  // publishes it with its max: one pass over the slice and one cluster barrier fewer
  const bool fused = TK && !stats && cfg.top_k > 0 && int64_t(cfg.top_k) < V && !config_greedy(cfg);
  // MLOPS_SAMPLE_PUSH_X (sample_cluster_shared.cuh): the pushed exchanges' mbarriers, armed where the max's exchange (or
  // kPushMax's early arrive below) orders the init before any push; r_stats tells draw_locate whether they were
  constexpr bool kPushMax = (MLOPS_SAMPLE_PUSH_X & 2) != 0 && LEAN && !TK && C <= 16;
  constexpr bool kPushNear = (MLOPS_SAMPLE_PUSH_X & 4) != 0 && WIDE && !TK && C <= NT / 32;  // wide_near_pass's
  if constexpr (MLOPS_SAMPLE_PUSH_X != 0) {
    if (tid == 0) {
      if constexpr (!TK) sh.r_stats = stats;  // the tk forms' thread 0 writes it below
      if (!stats) {
        if constexpr ((MLOPS_SAMPLE_PUSH_X & 1) != 0 && LEAN) push_bar_init(&sh.pub_kept);  // draw_locate's forms
        if constexpr (kPushMax) push_bar_init(&sh.pub_best);
        if constexpr (kPushNear) push_bar_init(&sh.pub_wide);
        // bit 8's counts: pub_lp, which a greedy row's log-probability alone publishes
        if constexpr (kPushNear && (MLOPS_SAMPLE_PUSH_X & 8) != 0) {
          if (!config_greedy(cfg)) push_bar_init(&sh.pub_lp);
        }
      }
    }
    if (kPushMax && !stats) cluster_arrive_smem();  // waited for before the max's push: every CTA's init before it
  }
  if constexpr (TK) {  // read from shared memory after the staging's barrier (ClusterShared::r_cfg)
    if (tid == 0) {
      sh.r_cfg = cfg;
      sh.r_stats = stats;
      sh.r_fused = fused;
      // MLOPS_SAMPLE_TK_PUSH: a row that may push arms its mbarrier before the max's exchange, after which others push
      if (kPush && fused) push_bar_init(push_bar_of(sh));
    }
  }
  // the two tests (TK: from shared memory, read at the use; valid after the staging's barrier)
  auto row_stats = [&]() -> bool {
    if constexpr (TK) return sh.r_stats != 0;
    else return stats;
  };
  auto row_fused = [&]() -> bool {
    if constexpr (TK) return sh.r_fused != 0;
    else return fused;
  };
  if constexpr (STAGE) {
    if (fused) {
      for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
      __syncthreads();
    }
    if (!GSL || !stats)  // GSL: nothing to store, and with the head's statistics nothing to measure
      stage_slice<NT, LEAN, !GSL>(z, v0, v1, zs, !stats, best, fl, fused ? sh.hlo : nullptr, pre4);
    __syncthreads();  // other threads of the CTA read the slice from here on
  }
  MLOPS_SAMPLE_MARK(2);
  // TK: the configuration and the two tests at each use from here on (not live in registers across the kernel)
  const mlops_sample_config& rcfg = TK ? sh.r_cfg : cfg;
  if (row_stats()) {
    best = p.stats_best[row];
    flags = flags_from_best(best);
    // MLOPS_SAMPLE_EARLY_DRAW: read by the draw after a block barrier (draw_locate's, list_draw's)
    if (MLOPS_SAMPLE_EARLY_DRAW && LEAN && tid == NT - 1) store_row_draw<NT>(p.seeds, row, step, sh);
  } else {
#pragma unroll 4
    for (int64_t v = v0 + tid; !STAGE && v < v1; v += NT) {
      const float x = z[v];
      if (is_nan(x)) {
        fl |= MLOPS_SAMPLE_FLAG_NAN;
        continue;
      }
      const uint32_t k = key_of(x);
      if (k == kKeyPosInf) fl |= MLOPS_SAMPLE_FLAG_POSINF;
      const uint64_t b = pack_best(k, uint32_t(v));
      best = b > best ? b : best;
    }
    const int any_nan = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_NAN);
    const int any_inf = __syncthreads_or(fl & MLOPS_SAMPLE_FLAG_POSINF);
    best = block_max_u64<NT>(best, sh);
    if (row_fused() && tid < 256) {  // round 0's buffer (cnt[0]), read after the barrier below
      uint32_t t = 0;
      for (int r = 0; r < kRep; ++r) t += sh.hlo[tid * kRep + r];
      sh.cnt[0][tid] = t;
    }
    if constexpr (kPushMax) {  // MLOPS_SAMPLE_PUSH_X bit 2: (max, flags) into every CTA's mass[1][2 rank ..]
      cluster_wait();            // the early arrive's: every CTA's mbarrier armed
      if (warp == 0) {
        const int f0 = (any_nan ? MLOPS_SAMPLE_FLAG_NAN : 0) | (any_inf ? MLOPS_SAMPLE_FLAG_POSINF : 0);
        if (lane < unsigned(C)) push_store_pair(&sh.mass[1][2 * rank], lane, best, uint64_t(f0), &sh.pub_best);
        if (lane == 0) push_expect(&sh.pub_best, 16u * unsigned(C));
        push_wait(&sh.pub_best);
        uint64_t b = lane < unsigned(C) ? sh.mass[1][2 * lane] : uint64_t(0);
        int f = lane < unsigned(C) ? int(sh.mass[1][2 * lane + 1]) : 0;
        cluster_max_flags(b, f, sh);
      } else if (MLOPS_SAMPLE_EARLY_DRAW && warp == NW - 1 && lane == 0) {
        store_row_draw<NT>(p.seeds, row, step, sh);  // while warp 0 waits for the pushes
      }
      __syncthreads();
      best = sh.b_best;
      flags = sh.b_flags;
      if (best == 0 || best_key(best) <= kKeyNegInf) flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
    } else {
      if (tid == 0) {
        sh.pub_best = best;
        sh.pub_flags = (any_nan ? MLOPS_SAMPLE_FLAG_NAN : 0) | (any_inf ? MLOPS_SAMPLE_FLAG_POSINF : 0);
      }
      exchange_sync<LEAN>();
      const uint32_t guess = best_key(best) >> 24;  // this CTA's max's bin (MLOPS_SAMPLE_TK_WINDOW_GUESS)
      best = 0;
      if constexpr (LEAN) {  // lane r of warp 0 reads CTA r: C remote loads a CTA instead of C a thread
        if (warp == 0) {
          uint64_t b = 0;
          int f = 0;
          if (lane < unsigned(C)) {
            b = remote_load(&sh.pub_best, lane);
            f = remote_load(&sh.pub_flags, lane);
          }
          // MLOPS_SAMPLE_TK_WINDOW_GUESS: the window's counts for this CTA's max's bin, in flight with the maxima
          WindowCounts<C, NT, kPush> pre;
          if constexpr (kWindowGuess) {
            if (row_fused()) pre = window_counts<C, NT, kPush>(guess, sh);
          }
          // cluster_max_flags' steps, inline here: through the call ptxas 13.0 scheduled the tk forms' max phase
          // differently (the same instructions; session 56 keeps the default build's SASS)
#pragma unroll
          for (int off = 16; off >= 1; off >>= 1) {
            const uint64_t ob = __shfl_xor_sync(kFull, b, off);
            b = ob > b ? ob : b;
            f |= __shfl_xor_sync(kFull, f, off);
          }
          if (lane == 0) {
            sh.b_best = b;
            sh.b_flags = f;
          }
          if constexpr (kCountWindow) {
            if (row_fused()) {  // level 3 of a fused top-k row (the macro's comment)
              if constexpr (kWindowGuess) tk_count_window<C, NT, kPush>(b, sh, guess, &pre);
              else tk_count_window<C, NT, kPush>(b, sh);
            }
          }
        } else if (MLOPS_SAMPLE_EARLY_DRAW && warp == NW - 1 && lane == 0) {
          store_row_draw<NT>(p.seeds, row, step, sh);  // while warp 0 waits for its remote loads
        }
        __syncthreads();
        best = sh.b_best;
        flags = sh.b_flags;
      } else {
        for (int r = 0; r < C; ++r) {
          const ClusterShared<NT>* o = cluster_map(&sh, unsigned(r));
          best = o->pub_best > best ? o->pub_best : best;
          flags |= o->pub_flags;
        }
      }
      if (best == 0 || best_key(best) <= kKeyNegInf) flags |= MLOPS_SAMPLE_FLAG_NO_FINITE;
    }
  }
  MLOPS_SAMPLE_MARK(3);
  const uint32_t max_key = best_key(best);
  const float m = float_of_key(max_key);
  int32_t token = int32_t(best == 0 ? 0u : best_index(best));
  float logprob = __int_as_float(0x7fc00000);
  bool writer = rank == 0;  // the CTA that writes the token (the walking one, for sampled rows)

  if (flags || config_greedy(rcfg)) {
    if (p.logprobs && !flags) {  // log-softmax of the argmax at temperature 1, no filter
      uint64_t s = 0;
      for (int64_t v = v0 + tid; v < v1; v += NT) s += sample_weight(zr(v), m, temperature_of(1.0f));
      s = block_sum_u64<NT>(s, sh);
      if (tid == 0) sh.pub_lp = s;
      exchange_sync<LEAN>();
      s = 0;
      if constexpr (LEAN) {
        if (warp == 0) {
          s = warp_sum(lane < unsigned(C) ? remote_load(&sh.pub_lp, lane) : uint64_t(0));
          if (lane == 0) sh.b_total = s;
        }
        __syncthreads();
        s = sh.b_total;
      } else {
        for (int r = 0; r < C; ++r) s += cluster_map(&sh, unsigned(r))->pub_lp;
      }
      logprob = float(log(double(kWeightScale) / double(s)));
    }
    if constexpr (LEAN) cluster_arrive_smem();  // no more reads of the other CTAs' shared memory
  } else {
    const Temperature T = temperature_of(rcfg.temperature);
    int rnd = 0;            // histogram rounds so far (the buffer of round r is r % 2)
    bool use_cand = false;  // later rounds read sh.cand instead of the slice
    uint32_t cand_lo = 0xffffffffu;  // TK: the bound the candidate list was built under
    // MLOPS_SAMPLE_WIDE_MASK_DRAW: the wide top-p round's near mask, and whether it holds every element at or above tau
    constexpr bool kMaskDraw = WIDE && !TP && !GSL && MLOPS_SAMPLE_WIDE_MASK_DRAW;
    uint64_t wnear = 0;
    bool wnear_ok = false;
    bool wzeroed = false;  // MLOPS_SAMPLE_MASK_DRAW_PREZERO: mask_draw's words zeroed by wide_top_p, untouched since
    // element i of the candidate list (TK: a slice index into zs)
    auto cv = [&](int i) -> float {
      if constexpr (TK) return zs[f32_bits(sh.cand[i])];
      else return sh.cand[i];
    };
    uint32_t tau = 0;
    // ---- top-k: the k-th largest key (ties at it are kept), one byte a round
    const bool has_top_k = rcfg.top_k > 0 && int64_t(rcfg.top_k) < V;
    if (has_top_k) {
      uint32_t prefix = 0, mask = 0, k_rem = uint32_t(rcfg.top_k);
      uint32_t bound = 0;  // WIDE: a bin of the gathered list is the row's at or above it
      if constexpr (WIDE) {
        if (!(row_stats() && p.stats_key_hist)) {
          wide_topk_gather<C, NT>(zr, v0, v1, k_rem, sh, all, use_cand, all_n, bound);
          gather_tried = true;
        }
      }
#pragma unroll 1
      for (int level = 3; level >= 0; --level) {
        const int sh_bits = 8 * level;
        if constexpr (kFinish2) {  // MLOPS_SAMPLE_TK_FINISH2: a gathered list's level 2 and its finish in one
          if (level == 2 && all_n >= 0) {
            const Level2 l2 = tk_level2_finish<NT>(all, all_n, prefix, mask, k_rem, sh);
            prefix = l2.prefix;
            mask = l2.mask;
            k_rem = l2.k_rem;
            if (l2.done) break;
            continue;  // its bin holds more than 32 keys: the generic rounds from level 1
          }
        }
        const bool from_stats = level == 3 && row_stats() && p.stats_key_hist;  // the head counted these
        uint32_t c = 0;
        bool windowed = false;  // level 3 from tk_count_window, in sh.b_* since the max phase
        if (from_stats) {
          if (tid < 256) c = p.stats_key_hist[row * 256 + (255 - tid)];
        } else if (level == 3 && row_fused()) {  // counted in the staging, published with the max (round 0)
          if (MLOPS_SAMPLE_COUNT_QUADS && LEAN) {  // hlo: its copies summed into cnt before the max's barrier
            c = cluster_counts256<C, NT>(sh.cnt[0], sh.hlo);
          } else {
            windowed = kCountWindow && sh.b_mask != 0u;  // tk_count_window's level 3 (the same in every CTA)
            if constexpr (kCountWindow) {
              // CTA-uniform: every thread's read of b_mask above before thread 0 writes it below (racecheck, GPU run 239)
              if (!windowed) __syncthreads();
            }
            if (!windowed && tid < 256)
              for (int r = 0; r < C; ++r) c += remote_load(&sh.cnt[0][255 - tid], unsigned(r));
          }
          ++rnd;
        } else if (GATHER && all_n >= 0) {  // the gathered candidates: this CTA's count is the cluster's
          for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
          __syncthreads();
          const uint32_t copy = lane & uint32_t(kRep - 1);
          for (int i = tid; i < all_n; i += NT) {
            const uint32_t k = key_of(all[i]);
            if ((k & mask) == prefix) atomicAdd(&sh.hlo[((k >> sh_bits) & 255u) * kRep + copy], 1u);
          }
          __syncthreads();
          if (tid < 256)
            for (int r = 0; r < kRep; ++r) c += sh.hlo[(255 - tid) * kRep + r];
        } else {
          const int buf = rnd & 1;
          for (int i = tid; i < 256 * kRep; i += NT) sh.hlo[i] = 0;
          __syncthreads();
          const uint32_t copy = lane & uint32_t(kRep - 1);
          if (use_cand) {
            for (int i = tid; i < int(sh.cand_n); i += NT) {
              const uint32_t k = key_of(cv(i));
              if ((k & mask) == prefix) atomicAdd(&sh.hlo[((k >> sh_bits) & 255u) * kRep + copy], 1u);
            }
          } else {
#pragma unroll 4
            for (int64_t v = v0 + tid; v < v1; v += NT) {
              const uint32_t k = key_of(zr(v));
              if ((k & mask) == prefix) atomicAdd(&sh.hlo[((k >> sh_bits) & 255u) * kRep + copy], 1u);
            }
          }
          __syncthreads();
          if (tid < 256) {
            uint32_t t = 0;
            for (int r = 0; r < kRep; ++r) t += sh.hlo[tid * kRep + r];
            sh.cnt[buf][tid] = t;
          }
          exchange_sync<LEAN>();
          if (tid < 256) {
            if constexpr (LEAN) {
              for (int r = 0; r < C; ++r) c += remote_load(&sh.cnt[buf][255 - tid], unsigned(r));
            } else {
              for (int r = 0; r < C; ++r) c += cluster_map(&sh, unsigned(r))->cnt[buf][255 - tid];
            }
          }
          ++rnd;
        }
        if (!windowed) {
          if (tid == 0) {
            // no bin reaches the remaining count (cannot happen: k < V, no NaN here): keep everything
            sh.b_prefix = 0;
            sh.b_mask = 0;
            sh.b_done = 1;
            sh.b_krem = k_rem;
          }
          const uint64_t incl = suffix_scan256<NT>(c, sh);  // syncs before and after
          if (tid < 256 && incl - c < uint64_t(k_rem) && uint64_t(k_rem) <= incl) {
            const uint32_t bin = uint32_t(255 - tid), cum = uint32_t(incl - c);
            sh.b_prefix = prefix | (bin << sh_bits);
            sh.b_mask = mask | (255u << sh_bits);
            // every key of the bin is kept (WIDE: and the list holds all of the bin)
            sh.b_done = c == k_rem - cum && (prefix | (bin << sh_bits)) >= bound;
            sh.b_krem = k_rem - cum;
            if constexpr (TK) sh.b_warp = int(c);  // the crossing bin's count (the row's), for tk_finish
          }
          __syncthreads();
        }
        prefix = sh.b_prefix;
        mask = sh.b_mask;
        k_rem = sh.b_krem;
        const int done = sh.b_done;
        const int c_bin = TK ? sh.b_warp : 0;
        __syncthreads();
        if (level == 3) MLOPS_SAMPLE_MARK(4);
        if (done) break;
        if (level == 3 && mask && all_n < 0) {  // the keys in the chosen bin and above, when they fit
          if constexpr (TK) tk_list<NT, C>(zs, int(v1 - v0), prefix, sh);
          else build_candidates<NT, decltype(zr), TK>(zr, v0, v1, prefix, sh);
          cand_lo = prefix;
          use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
          MLOPS_SAMPLE_MARK(15);
          if constexpr (GATHER) {
            gather_tried = true;
            // MLOPS_SAMPLE_TK_WARPS_GATHER: the staged tk forms of clusters of at least that many CTAs copy by warps
            constexpr bool kWarps = TK && !GSL && MLOPS_SAMPLE_TK_WARPS_GATHER > 0 && C >= MLOPS_SAMPLE_TK_WARPS_GATHER;
            if (kPush && windowed && sh.g_n >= 0)  // the window laid the list out (the same in every CTA)
              all_n = push_candidates<C, NT>(sh, all, zs);
            else
              all_n = gather_candidates<C, NT, false, TK, kWarps, GSL>(sh, all, zs, 0xffffffffu, ch);
          }
          MLOPS_SAMPLE_MARK(5);
        } else if (LATE && level == 2 && all_n < 0) {  // all_n: the same in every CTA
          late_gather<C, NT>(zr, v0, v1, prefix, sh, all, use_cand, all_n);
        }
        if constexpr (TK) {  // a gathered list whose crossing bin holds few keys: its k_rem-th, no more rounds
          if (level > 0 && all_n >= 0 && c_bin <= 32) {
            prefix = tk_finish<NT>(all, all_n, prefix, mask, k_rem, sh);
            break;
          }
        }
      }
      tau = prefix;
      MLOPS_SAMPLE_MARK(6);
    }
    // ---- top-p: the smallest key whose mass above it (among the top-k) is below p * S_k
    if (rcfg.top_p < 1.0f) {
      uint32_t prefix = 0, mask = 0;
      uint64_t acc = 0;
      double thr = 0.0;
      int top = 3;  // the first level of the rounds below
      bool wide = false;
      if constexpr (TK) {  // a gathered top-k: top-p on the list, no rounds (where few enough weigh)
        if (has_top_k && all_n >= 0 && tk_top_p<NT, MLOPS_SAMPLE_TK_TOPP_DRAW && !GSL>(rcfg, m, T, all, all_n, tau, sh, topp_by_warp)) top = -1;
      }
      if constexpr (WIDE || TP) {
        if (!has_top_k) {
          wide = true;
          gather_tried = true;
          // GSL: the near codes' words after the gathered list (gsl_dyn_bytes)
          uint64_t* nib = GSL ? reinterpret_cast<uint64_t*>(all + kGather) : nullptr;
          top = wide_top_p<C, NT, TP, TP2, GSL, kPushNear>(rcfg, m, T, zs, v0, v1, sh, all, use_cand, all_n, prefix,
                                                           mask, acc, thr, ch, nib, kMaskDraw ? &wnear : nullptr,
                                                           kMaskDraw ? &wnear_ok : nullptr)
                    ? -1
                    : 2;
          cand_lo = prefix;  // TP: the list holds every element at or above the crossing bin (where use_cand)
          MLOPS_SAMPLE_MARK(7);
          // the gathered list: level 2 in one weighing, then one warp (tp3_rounds); MLOPS_SAMPLE_WIDE_TP3: the wide
          // forms too (their list is the crossing bin's elements, bin_first's gather of the tp forms)
          if constexpr (TP3 || (WIDE && MLOPS_SAMPLE_WIDE_TP3)) {
            if (top == 2 && all_n >= 0) {
              if constexpr (kTp3Warps)
                top = tp3_rounds_warps<NT, MLOPS_SAMPLE_TP3_WARPS == 2>(rcfg, m, T, all, all_n, prefix, mask, acc, thr, sh);
              else top = tp3_rounds<NT>(rcfg, m, T, all, all_n, prefix, mask, acc, thr, sh);
            }
          }
        }
      }
      // the rounds below zero and fill all of hlo / hhi (mask_draw's words too)
      if constexpr (kMaskDraw && MLOPS_SAMPLE_MASK_DRAW_PREZERO) wzeroed = wnear_ok && top < 0;
#pragma unroll 1
      for (int level = top; level >= 0; --level) {
        const int sh_bits = wide ? wide_shift(level) : 8 * level;
        const int buf = rnd & 1;
        // ES, below the first round: cnt[buf] counts this CTA's weighted elements a bin (zeroed
        // here: the other CTAs read buffer buf of round rnd - 2 before round rnd - 1's barrier)
        const bool count = ES && level < 3;
        // LATE, a round on the gathered list: the same count, of the list (the whole cluster's), in
        // cnt[0], which no other CTA reads after a gather (their last remote reads of cnt precede the
        // gather's barrier)
        const bool lcount = (LATE || TP) && all_n >= 0;
        for (int i = tid; i < 256 * kRep; i += NT) {
          sh.hlo[i] = 0;
          sh.hhi[i] = 0;
        }
        if (count && tid < 256) sh.cnt[buf][tid] = 0;
        if (lcount && tid < 256) sh.cnt[0][tid] = 0;
        __syncthreads();
        const uint32_t copy = lane & uint32_t(kRep - 1);
        if constexpr (LEAN) {  // 4 elements at a time, their exps interleaved (lean_weights4)
          LeanRow lm = lean_row(rcfg, m, T);
          lm.u_min = -__int_as_float(0x7f800000);  // top-p's masses are before min-p
          lm.min_w = 0;
          const int n = all_n >= 0 ? all_n : use_cand ? int(sh.cand_n) : int(v1 - v0);
          const float* src = all_n >= 0 ? all : use_cand ? sh.cand : zs;
          const bool viac = TK && all_n < 0 && use_cand;  // the list's slice indices
          // TP2, a round on the gathered list: lean_weights_sparse4 (a position's exps only where a lane of the
          // warp weighs its element there: the list's bin thins out round by round), so a warp-uniform trip count
          const bool sparse = TP2 && all_n >= 0;
          for (int i0 = tid; (sparse ? (i0 & ~31) : i0) < n; i0 += 4 * NT) {
            float x[4];
            bool on[4];
            uint32_t w[4], k[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const int i = i0 + j * NT;
              x[j] = i < n ? (viac ? cv(i) : src[i]) : 0.0f;
              k[j] = key_of(x[j]);
              on[j] = i < n && k[j] >= tau && (k[j] & mask) == prefix;
            }
            if (sparse)
              lean_weights_sparse4(lm, x, on, w);
            else
              lean_weights4(lm, x, on, w);
#pragma unroll
            for (int j = 0; j < 4; ++j)
              if (w[j]) {
                const uint32_t at = ((k[j] >> sh_bits) & 255u) * kRep + copy;
                add_mass_of<LEAN>(&sh.hlo[at], &sh.hhi[at], w[j]);
                if (lcount) atomicAdd(&sh.cnt[0][(k[j] >> sh_bits) & 255u], 1u);
              }
          }
        } else if (use_cand) {
          for (int i = tid; i < int(sh.cand_n); i += NT) {
            const float x = sh.cand[i];
            const uint32_t k = key_of(x);
            if (k < tau || (k & mask) != prefix) continue;
            const uint32_t w = sample_weight(x, m, T);
            const uint32_t at = ((k >> sh_bits) & 255u) * kRep + copy;
            if (w) add_mass(&sh.hlo[at], &sh.hhi[at], w);
            if (count && w) atomicAdd(&sh.cnt[buf][(k >> sh_bits) & 255u], 1u);
          }
        } else {
#pragma unroll 4
          for (int64_t v = v0 + tid; v < v1; v += NT) {
            const float x = zr(v);
            const uint32_t k = key_of(x);
            if (k < tau || (k & mask) != prefix) continue;
            const uint32_t w = sample_weight(x, m, T);
            const uint32_t at = ((k >> sh_bits) & 255u) * kRep + copy;
            if (w) add_mass(&sh.hlo[at], &sh.hhi[at], w);
            if (count && w) atomicAdd(&sh.cnt[buf][(k >> sh_bits) & 255u], 1u);
          }
        }
        __syncthreads();
        uint64_t mass = 0;
        uint32_t n_bin = 0;  // ES: the cluster's weighted elements in bin 255 - tid
        if (GATHER && all_n >= 0) {  // the gathered candidates: this CTA's masses are the cluster's
          if (tid < 256) {
            for (int r = 0; r < kRep; ++r)
              mass += mass_of<LEAN>(sh.hlo[(255 - tid) * kRep + r], sh.hhi[(255 - tid) * kRep + r]);
            if (lcount) n_bin = sh.cnt[0][255 - tid];
          }
        } else {
          if (tid < 256) {
            uint64_t t = 0;
            for (int r = 0; r < kRep; ++r) t += mass_of<LEAN>(sh.hlo[tid * kRep + r], sh.hhi[tid * kRep + r]);
            sh.mass[buf][tid] = t;
          }
          exchange_sync<LEAN>();
          if (tid < 256) {
            if constexpr (LEAN) {
              for (int r = 0; r < C; ++r) mass += remote_load(&sh.mass[buf][255 - tid], unsigned(r));
            } else {
              for (int r = 0; r < C; ++r) {
                const ClusterShared<NT>* o = cluster_map(&sh, unsigned(r));
                mass += o->mass[buf][255 - tid];
                if (count) n_bin += o->cnt[buf][255 - tid];
              }
            }
          }
          ++rnd;
        }
        const uint64_t incl = acc + suffix_scan256<NT>(mass, sh);  // syncs before and after
        if (level == 3) {
          if (tid == 255) sh.b_total = incl;  // S_k: the mass of every key >= tau
          __syncthreads();
          thr = top_p_threshold(rcfg.top_p, sh.b_total);
        }
        if (tid == 0) {  // no bin reaches the threshold: the prefix stays, the rounds end
          sh.b_prefix = prefix;
          sh.b_mask = mask;
          sh.b_done = 1;
        }
        __syncthreads();
        if (tid < 256 && double(incl) >= thr && (tid == 0 || !(double(incl - mass) >= thr))) {
          sh.b_prefix = prefix | (uint32_t(255 - tid) << sh_bits);
          sh.b_mask = mask | (255u << sh_bits);
          sh.b_acc = incl - mass;
          sh.b_done = (count || lcount) && n_bin == 1;  // ES: the bin's lower bound keeps the same weights
        }
        __syncthreads();
        prefix = sh.b_prefix;
        mask = sh.b_mask;
        acc = sh.b_acc;
        const int done = sh.b_done;
        __syncthreads();
        if (done) break;
        if (level == 3 && !use_cand && all_n < 0) {  // the keys >= max(tau, the chosen bin), when they fit
          if constexpr (TK) tk_list<NT, C>(zs, int(v1 - v0), prefix > tau ? prefix : tau, sh);
          else build_candidates<NT, decltype(zr), TK>(zr, v0, v1, prefix > tau ? prefix : tau, sh);
          cand_lo = prefix > tau ? prefix : tau;
          use_cand = __syncthreads_or(sh.cand_n <= uint32_t(kClusterCand)) != 0;
        }
        // one gather a call, decided alike in every CTA (use_cand is a CTA's own: after a top-k
        // whose gather did not fit, some CTAs may hold candidates and others not)
        if (GATHER && level == 3 && !gather_tried) {
          gather_tried = true;
          all_n = gather_candidates<C, NT, false, TK, false, GSL>(sh, all, zs, 0xffffffffu, ch);
        } else if (LATE && level == 2 && all_n < 0) {
          late_gather<C, NT>(zr, v0, v1, prefix > tau ? prefix : tau, sh, all, use_cand, all_n);
        }
      }
      if (prefix > tau) tau = prefix;
      MLOPS_SAMPLE_MARK(8);
    }
    // ---- draw: kept sums per warp sub-chunk, the cluster's total, the walk in index order
    KeptWeight kw;
    kw.m = m;
    kw.t = T;
    kw.tau = tau;
    kw.use_min_p = rcfg.min_p > 0.0f;
    kw.min_thr = min_p_threshold(rcfg.min_p);
    if constexpr (TK) {
      writer = false;  // the thread that finds the target writes the token itself
      // MLOPS_SAMPLE_LIST_DRAW: a top-k row (k at most kTkKept) whose gathered list holds every kept element draws
      // from it (list_draw; every CTA decides alike: the same list, the same bound). Not in the global-slice forms:
      // there ptxas 13.0 doubled the kernel's stack with it (40 -> 80 bytes) and GPU run 217's B = 64 top-k took +5.9 us.
      // MLOPS_SAMPLE_TK_TOPP_DRAW: where tk_top_p_warp found top-p on such a list, warp 0 draws from its entries
      const bool whole = !GSL && rcfg.top_k > 0 && rcfg.top_k <= kTkKept && int64_t(rcfg.top_k) < V && all_n >= 0 &&
                         cand_lo <= tau;
      const bool kept = MLOPS_SAMPLE_TK_TOPP_DRAW && whole && topp_by_warp;
      if (kept) list_draw_kept<NT>(p, row, step, ch, tau, lean_row(rcfg, m, T).min_w, sh);
      const bool listed = kept || (MLOPS_SAMPLE_LIST_DRAW && whole &&
                                   list_draw<NT>(p, row, step, ch, all, all_n, lean_row(rcfg, m, T), tau, sh));
      if (!listed) {
        if constexpr (GSL)
          chunk_draw<C, NT>(p, row, step, v0, v1, zs, lean_row(rcfg, m, T), tau, use_cand && cand_lo <= tau, sh);
        else
          tk_draw<C, NT, TP>(p, row, step, v0, v1, zs, lean_row(rcfg, m, T), tau, use_cand && cand_lo <= tau, sh);
      }
    } else if constexpr (LEAN) {
      writer = false;  // the thread whose chunk holds the target writes the token itself
      if (kMaskDraw && wnear_ok)
        mask_draw<C, NT>(p, row, step, v0, v1, zs, lean_row(rcfg, m, T), tau, wnear, sh, wzeroed);
      else
        lean_draw<C, NT>(p, row, step, v0, v1, zs, lean_row(rcfg, m, T), tau, sh);
    } else {
    const int64_t wc = (v1 - v0 + NW - 1) / NW;
    const int64_t a = v0 + warp * wc < v1 ? v0 + warp * wc : v1;
    const int64_t b = a + wc < v1 ? a + wc : v1;
    uint64_t s = 0;
#pragma unroll 4
    for (int64_t v = a + lane; v < b; v += 32) s += kw(zr(v));
    s = warp_sum(s);
    if (lane == 0) sh.wsum[warp] = s;
    __syncthreads();
    if (tid == 0) {
      uint64_t t = 0;
      for (int w = 0; w < NW; ++w) t += sh.wsum[w];
      sh.pub_kept = t;
    }
    cluster_sync();
    uint64_t S = 0, excl = 0, mine = 0;
    for (int r = 0; r < C; ++r) {
      const uint64_t k = cluster_map(&sh, unsigned(r))->pub_kept;
      if (r < int(rank)) excl += k;
      if (r == int(rank)) mine = k;
      S += k;
    }
    const uint64_t target = scale_draw(draw64(p.seeds[row], step), S);
    writer = mine && excl <= target && target < excl + mine;  // S > 0: the max is always kept
    if (writer) {
      const uint64_t t = target - excl;
      if (tid == 0) {
        uint64_t run = 0;
        int w = NW - 1;
        for (int i = 0; i < NW; ++i) {
          if (t < run + sh.wsum[i]) {
            w = i;
            break;
          }
          run += sh.wsum[i];
        }
        sh.b_warp = w;
        sh.b_target = t - run;
        sh.b_token = int(best_index(best));
        sh.b_tokw = 0;
      }
      __syncthreads();
      if (warp == sh.b_warp) {  // its lanes split the warp's sub-chunk into contiguous pieces
        const uint64_t tw = sh.b_target;
        const int64_t lc = (b - a + 31) / 32;
        const int64_t la = a + int64_t(lane) * lc < b ? a + int64_t(lane) * lc : b;
        const int64_t lb = la + lc < b ? la + lc : b;
        uint64_t ls = 0;
#pragma unroll 4
        for (int64_t v = la; v < lb; ++v) ls += kw(zr(v));
        const uint64_t lincl = warp_incl_scan(ls);
        const uint64_t lex = lincl - ls;
        // the one lane whose piece holds the target; the warp walks that piece 32 at a time: the
        // first element whose running sum exceeds the target
        const unsigned hit = __ballot_sync(kFull, ls && lex <= tw && tw < lincl);
        const int hl = hit ? __ffs(hit) - 1 : 0;
        const int64_t pa = __shfl_sync(kFull, la, hl), pb = hit ? __shfl_sync(kFull, lb, hl) : pa;
        uint64_t run = __shfl_sync(kFull, lex, hl);
        for (int64_t base = pa; base < pb; base += 32) {  // warp-uniform trip count
          const int64_t v = base + int64_t(lane);
          const uint32_t w = v < pb ? kw(zr(v)) : 0u;
          const uint64_t incl = run + warp_incl_scan(w);
          const unsigned f = __ballot_sync(kFull, w && incl > tw);
          if (f) {
            if (int(lane) == __ffs(f) - 1) {
              sh.b_token = int(v);
              sh.b_tokw = w;
            }
            break;
          }
          run = __shfl_sync(kFull, incl, 31);
        }
      }
      __syncthreads();
      token = sh.b_token;
      logprob = float(log(double(sh.b_tokw) / double(S)));
    }
    }
  }
  MLOPS_SAMPLE_MARK(9);
  if (writer && tid == 0) {
    p.tokens[row] = token;
    if (p.flags) p.flags[row] = flags;
    if (p.logprobs) p.logprobs[row] = logprob;
  }
  // no CTA leaves while another may read its shared memory; every step is read
  if constexpr (LEAN) cluster_wait();
  else cluster_sync();
  MLOPS_SAMPLE_MARK(10);
  MLOPS_SAMPLE_ROW_SPAN(1);
  if (rank == 0 && tid == 0) p.steps[row] = step + 1;
#endif
}

}  // namespace
}  // namespace mlops::vocab
