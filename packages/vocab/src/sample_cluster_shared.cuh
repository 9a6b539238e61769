// The sampler's cluster kernel (sample_cluster_kernel.cuh), its foundations: the sizes, the phase timeline of
// bench/sample_timeline_probe.cu, the cluster primitives (barriers, reads of another CTA's shared memory, their
// host meanings for tests/c/sample_kernel_on_host.cpp), a CTA's static shared memory (ClusterShared) and the
// warp / 256-bin scans every phase uses.
#pragma once
#include <cstddef>  // offsetof

#include "sample_kernel.cuh"

#if !defined(MLOPS_CUDA_ON_HOST)
#include <cooperative_groups.h>
#endif

#if defined(MLOPS_CUDA_ON_HOST) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
#define MLOPS_SAMPLE_CLUSTER_BODY 1
#endif

namespace mlops::vocab {
namespace {

#ifndef MLOPS_SAMPLE_CLUSTER_CAND
#define MLOPS_SAMPLE_CLUSTER_CAND 2048
#endif
constexpr int kClusterCand = MLOPS_SAMPLE_CLUSTER_CAND;  // elements of a slice kept in shared memory once a round bounds them
constexpr int kClusterThreads = 512;
constexpr int kGather = 2048;  // the gather forms: candidates of the whole cluster a CTA holds
// The most elements a global-slice CTA takes: chunk_draw's chunk sums, 2048 chunks of 64, in hlo / hhi.
constexpr int64_t kGslMaxSlice = 2048 * 64;
// The global-slice forms' near codes (session 42, MLOPS_SAMPLE_GSL_NIBBLES, sample_cluster_wide_top_p.cuh): a nibble an
// element of the slice, 16 a 64-bit word (a trip of the near pass's 4 quads), word w of thread t at w NT + t in dynamic
// shared memory after the gathered list. The words a thread for a slice of n: its quads (tid + u NT) in fours.
// On by default since GPU run 216 (an H100, docs/vocab.md "Session 43"): its nibble-wise list_nib (44f6e56) against the
// same build with the codes off, the B = 64 probe's cluster2_tp3g top-p launch 52.2 / 51.7 -> 47.7 / 48.6 us (the
// rows' listing 6.75 -> 4.93 us, their rounds on the list 3.31 -> 2.83), penalties + top-p 54.4 / 54.7 -> 49.0 / 49.3,
// the 40 KB it adds to a CTA (~80 KB with the static part) not slowing the max's pass; runs 213 - 215 had put the
// first list_nib forms at ~4 - 7 us a row. -D...=0: list_near and bin_first's global loads (the runner checks both).
#ifndef MLOPS_SAMPLE_GSL_NIBBLES
#define MLOPS_SAMPLE_GSL_NIBBLES 1
#endif
MLOPS_HD constexpr int64_t gsl_nib_words(int64_t n, int NT) { return (((n + 3) / 4 + NT - 1) / NT + 3) / 4; }
// The penalties' shared-memory count (session 42, MLOPS_SAMPLE_PENALTY_TABLE, sample_cluster_kernel.cuh): a table of
// kPenaltySlots token keys (in cand) and counts (in hlo) for histories of at most kPenaltyTableMax tokens (3/4 full at
// most, where every token is distinct and in one CTA's slice); longer ones take the global workspace. On by default
// since GPU run 213 (an H100, with the near codes on beside it; docs/vocab.md "Session 42"): the B = 64 probe's
// penalties phase 2.84 -> 1.99 us, the bench's B = 64 penalties + top-p 61.50 -> 56.78 us (61.92 with the codes alone),
// B = 48 58.46 -> 53.55, B = 8 32.82 -> 31.62, B = 1 24.43 -> 22.98; -D...=0 builds the global count everywhere.
#ifndef MLOPS_SAMPLE_PENALTY_TABLE
#define MLOPS_SAMPLE_PENALTY_TABLE 1
#endif
#ifndef MLOPS_SAMPLE_PENALTY_SLOT_BITS  // 11; the runner's test of the table also builds 7 (collisions, probing)
#define MLOPS_SAMPLE_PENALTY_SLOT_BITS 11
#endif
// The table's logits read while counting (session 43): the thread that inserts a key loads its logit (the load issued
// before the probing) into hhi, and the apply pass reads it there: one dependent global load less after the count's
// barrier. On by default since GPU run 216 (an H100): the B = 64 probe's penalties phase, every row of two launches,
// 1.92 -> 1.81 us (cluster2_tp3g) and 2.84 -> 2.54 (cluster8_tp3); -D...=0 reads the logit after the barrier.
#ifndef MLOPS_SAMPLE_PENALTY_PREFETCH
#define MLOPS_SAMPLE_PENALTY_PREFETCH 1
#endif
// The global-slice forms' slice prefetched into L1 at the kernel's start (session 45, off by default, not yet run on a
// GPU): their measuring pass reads the slice from the row after the configuration / step / history reads and the
// penalties, as the staged forms' copy did before MLOPS_SAMPLE_EARLY_STAGE (~700 cycles of a B = 1 row in run 218's
// probe); with no shared memory to copy 38 - 76 KB into (the gathered list and the near codes hold it), a
// prefetch.global.L1 a 128-byte line (76 KB at C = 2: 594 lines, one a thread of 1 024) starts the slice's L2 / DRAM
// round trip there instead. A hint: the same values are read, the same token.
#ifndef MLOPS_SAMPLE_GSL_PREFETCH
#define MLOPS_SAMPLE_GSL_PREFETCH 0
#endif
// The wide forms' rounds on the gathered list by tp3_rounds (session 46): the wide top-p round gathers the crossing
// wide bin's elements alone, as the tp forms' gather does with bin_first, yet the wide forms then ran the generic rounds
// on it (levels 2, 1, 0: 2 x 2048 words cleared, the list weighed and kRep copies summed a level), 3.7 us of run 223's
// B = 1 cluster16_wide top-p kernel against tp3_rounds' 2.1 in cluster16_tp3. The same prefix, acc and early stop
// (tp3_rounds' comment): the same token. With mask_draw (below) on by default since GPU runs 224 - 226 (H100s): the
// probe's B = 1 cluster16_wide top-p kernel 16.26 -> 13.75 us (this alone: 14.68), the bench's B = 1 top-p 21.3 -> 19.7,
// B = 8 28.4 -> 25.2 (docs/vocab.md "Session 46"). -D...=0: the generic rounds (the runner's test of the earlier forms).
#ifndef MLOPS_SAMPLE_WIDE_TP3
#define MLOPS_SAMPLE_WIDE_TP3 1
#endif
// tp3_rounds' second level on the gathered list (sample_cluster_list_rounds.cuh; session 46): off, GPU run 226 (an
// H100): the B = 1 / 8 wide rows within 0.3 us of the form without it, while the global-slice kernels' stack grew 32 ->
// 40 bytes (cluster16_tp3 8 -> 64) and B = 64's cluster2_tp3g took +0.7 (temperature) to +1.8 us (top-p) in every mode.
#ifndef MLOPS_SAMPLE_TP3_LEVEL1
#define MLOPS_SAMPLE_TP3_LEVEL1 0
#endif
// The tk forms' gather by warps (gather_candidates' WARPS: a warp a CTA's list, 4 remote loads a lane in flight, no
// search of the offsets an element) in clusters of at least this many CTAs, 0: none (session 46). Session 34 kept the
// tk forms out of it on B = 64's cluster8_tk row (+1 350 cycles, most of it in the unchanged staging); 16 takes B = 1's
// cluster16_tk alone, whose gather phase was 2.3 us of run 223's 13.0 us kernel. 16 by default since GPU run 227 (an
// H100): the gather 2.27 -> 1.84 us, the bench's B = 1 top-k 16.67 -> 16.13, the combination 18.58 -> 18.02. The host
// runner's clusters (3 / 4 CTAs) take it only where a test builds it with 2.
#ifndef MLOPS_SAMPLE_TK_WARPS_GATHER
#define MLOPS_SAMPLE_TK_WARPS_GATHER 16
#endif
// The wide forms' top-p draw over the near pass's mask (sample_cluster_draw.cuh: mask_draw; session 46, on by default
// since GPU runs 224 - 226 with WIDE_TP3: the probe's draw phase 2.91 -> 2.13 us). -D...=0: lean_draw, as before.
#ifndef MLOPS_SAMPLE_WIDE_MASK_DRAW
#define MLOPS_SAMPLE_WIDE_MASK_DRAW 1
#endif
// MLOPS_SAMPLE_MASK_DRAW_KEPT (session 54): mask_draw over the bits of the near elements at or above the crossing
// bin's lower bound (list_near's return: it loads every near element and tests its key anyway) instead of every near
// bit. The draw's tau lies in the crossing bin or above (the rounds refine within it; min-p only raises it), so the
// same elements weigh: the same chunk sums, token and weight. On the bench's rows a CTA's near bins (down to m - 10 T)
// hold ~450 elements, the crossing bin and above ~90. GPU run 251 (an H100, four paired rounds): B = 1 top-p 19.54 ->
// 19.32 us (CUPTI 16.6 -> 16.5), penalties + top-p 20.94 -> 20.82, B = 8 top-p 24.61 -> 23.81, penalties + top-p
// 26.52 -> 25.65; the probe's B = 1 "draw: sums" 1.13 -> 1.04. On since; 0: every near bit (the runner checks both).
#ifndef MLOPS_SAMPLE_MASK_DRAW_KEPT
#define MLOPS_SAMPLE_MASK_DRAW_KEPT 1
#endif
// MLOPS_SAMPLE_MASK_DRAW_PREZERO (session 54, prepared): mask_draw's chunk words at hlo / hhi [NT, 2 NT) instead of
// [0, NT), zeroed by wide_top_p before list_near's first barrier, so that mask_draw neither zeroes them nor waits a
// barrier for it. Nothing writes those words in between on the path where tp3_rounds finishes (its finish takes hlo's
// first 64 words; the gather, cnt / mass and the list); where the generic rounds ran after it (they zero and fill all
// of hlo / hhi) mask_draw zeroes them itself. The same sums, token and weight.
#ifndef MLOPS_SAMPLE_MASK_DRAW_PREZERO
#define MLOPS_SAMPLE_MASK_DRAW_PREZERO 0
#endif
// MLOPS_SAMPLE_WARP_WALK (session 56, prepared): the staged forms' walk (lean_draw's over its stored weights, walk_chunk's
// for tk_draw<TP> and mask_draw) by the warp of the one thread whose chunk holds the target, 32 positions a step
// (warp_walk), instead of that thread alone an element at a time: q = 19 positions a chunk at B = 1 (C = 16, 512
// threads), each a shared load and a compare on one chain (lean_draw: ~19 dependent load / add pairs; walk_chunk: the
// loads, then one exp for the ~1 kept element) after the draw's last cluster barrier. The same running sums in the same
// index order, so the same token and weight; the global-slice forms' chunk_draw already walks by a warp.
#ifndef MLOPS_SAMPLE_WARP_WALK
#define MLOPS_SAMPLE_WARP_WALK 0
#endif
// MLOPS_SAMPLE_PUSH_X (session 56, prepared): cluster exchanges pushed instead of pulled, as MLOPS_SAMPLE_TK_PUSH's
// gather is: each CTA sends its value into every CTA's shared memory by st.async (push_store_u64 / _pair), which completes
// bytes on the receiving CTA's mbarrier, and each CTA waits on its own mbarrier alone: one one-way store's latency
// instead of a cluster barrier (whose release fence and arrive every thread pays) and then a remote load's round trip.
// Bit 1: draw_locate's kept totals (every draw over the staged slice or a CTA's list: lean_draw, tk_draw, mask_draw,
// chunk_draw), into ClusterShared::x_kept, the mbarrier in pub_kept's 8 bytes (the pulled totals' place). Bit 2: the
// max's exchange of the lean non-tk forms (cluster16_lean / _wide and their cluster8 forms; the tk forms' window counts
// are read behind that barrier), (max, flags) pairs into mass[1]'s first 2 C words (no round has used them: the rounds,
// and the near pass's remote reads through cnt / mass[0], come after every pair has landed), the mbarrier in pub_best's.
// Bit 4: wide_near_pass's exchange in the wide forms (cluster16_wide / cluster8_wide: top-p without top-k), each CTA's 32
// near bins into every CTA's cnt / mass[0] words (the pulled form's `red`, at 32 rank + j) and its S into mass[1][2 C +
// rank], the mbarrier in pub_wide's (the pulled S's place; invalidated where wide_full_pass publishes there after it).
// Bit 8 (with 4): the wide forms' gather of the crossing bin's list after such a near exchange (push_gather in
// sample_cluster_gather.cuh): the counts on pub_lp's mbarrier, then the values on pub_wide's second phase.
// A row measured by the head's statistics (no max exchange) pulls as before: an mbarrier may take bytes only after a
// cluster barrier has ordered its init before them (the max's, or bit 2's early arrive after the penalties).
// The same totals, maxima and flags: the same token.
#ifndef MLOPS_SAMPLE_PUSH_X
#define MLOPS_SAMPLE_PUSH_X 0
#endif
// The staged wide / tp forms' near pass by 16-byte loads from the staged slice (session 47; wide_near_pass's U, as
// MLOPS_SAMPLE_GSL_QUADS is for the global-slice forms, with MLOPS_SAMPLE_GSL_LEAN's whole trips): U float4 of
// shared memory a trip, near elements told by one float compare, the trip's mask bits set without a branch. The
// strided pass (0) weighs 4 elements a trip with a bound and a key test an element; B = 1 cluster16_wide's near pass
// was 3.5 of the probe's 13.75 us (run 229). The mask's bits then map by quads (near_element<NT, true>: list_near and
// mask_draw read them so); the same bins, mask set, S and token. 0: the strided pass. Not kept (GPU run 230, an H100):
// the probe's B = 1 near pass 3.51 -> 3.62 us (U = 4) / 3.69 (U = 2) and its listing 1.02 -> 1.26 (the bench's B = 1
// top-p +0.74 us), though B = 8's top-p gained 0.6: at B = 1 the pass is not bound by its loads' instructions.
#ifndef MLOPS_SAMPLE_WIDE_QUADS
#define MLOPS_SAMPLE_WIDE_QUADS 0
#endif
// The staged forms' strided near pass (wide_near_pass, U = 0) in whole trips (session 47): the trips whose 4 positions
// all lie in the slice test no bound, and weigh by lean_weights4<false, false> (no NaN test: a NaN x makes d NaN and
// d >= cutoff false; no min-p test: a mass row's). GPU run 235's ncu of the B = 1 cluster16_wide kernel put ~1 000
// warp instructions a warp in this pass (228 SASS instructions a trip of 4 elements; 199 with this), its stall samples
// mostly issue (selected / not selected 39 %) and fixed-latency waits (26 %). The same weights, bins, mask and S. On
// since GPU runs 236 / 237 (H100s): the probe's B = 1 near pass 3.23 -> 2.86 us, cluster16_wide top-p 13.81 -> 13.28;
// the bench's B = 1 top-p 19.79 -> 19.61, B = 8 25.27 -> 24.66 (docs/vocab.md "Session 47"). 0: every trip as the
// tail's (the runner's earlier-forms build).
#ifndef MLOPS_SAMPLE_WIDE_LEAN
#define MLOPS_SAMPLE_WIDE_LEAN 1
#endif
// The staged forms' near bins in eighth octaves (session 55, MLOPS_SAMPLE_NEAR_FINE; on by default since GPU run 257):
// wide_near_pass's 32 bins on the key's top 12 bits (sign, exponent, 3 mantissa bits) instead of the wide digit's
// 11, where the 32 still span the max's bin down to m - 10 T's (else the wide digit's, as before). Top-p's work after
// the crossing follows that bin's count: on the bench's N(0, 3^2) rows a threshold in [6, 7) lists ~3 460 elements,
// gathers ~2 000 and takes ~1.3 us longer than one in [7, 8) (GPU runs 255 / 256: B = 1 top-p 15.2 - 20.1 us over 16
// rows). The crossing bin's prefix then fixes 12 bits; the later rounds (bits 13 - 20, ...) count only keys matching
// it, so their bit-20 half that differs stays empty: the same masses, threshold and token. Not the global-slice forms
// (W = 2: their near codes count wide bins). Run 257 (an H100, four alternating rounds): B = 1 top-p 19.04 -> 18.14 us
// (CUPTI 16.42 -> 15.44), penalties + top-p 20.55 -> 19.77, B = 8 top-p 23.58 -> 22.98; over 16 seeded rows the [6, 7)
// ones -0.8 to -1.2, the others -0.1 to -0.6; the other modes and B = 64 unchanged (docs/vocab.md "Session 55").
// 0: the wide digit's bins (the runner's earlier-forms build). F > 1 (prepared): the finest of up to F bits finer
// (2: sixteenths of an octave, where 32 of them reach m - 10 T: the bench's rows, 13 -> 5 in ~22).
#ifndef MLOPS_SAMPLE_NEAR_FINE
#define MLOPS_SAMPLE_NEAR_FINE 1
#endif
// A round's key counts summed over the cluster by 16-byte remote loads (cluster_counts256, session 47): each of the
// 256 threads read its bin's count from each of the C CTAs (C 4-byte loads a thread: 4 096 a CTA at C = 16, every
// CTA serving as many); here a thread reads 4 bins of one CTA (1 024 loads a CTA at C = 16, spread over every thread)
// and the C CTAs' quads of a bin group meet by shuffles. The same sums. Where the distributed shared memory's requests
// set the pace, the B = 1 cluster16_tk "top-k round 1" phase (1.77 us of the probe's 12.4 in run 229) shrinks.
// The fused first round only (the top-k rows' round counted in the staging): in the later rounds' exchange too,
// ptxas 13.0 spilled more (cluster16_tk's stack 32 -> 56 bytes, cluster8_lean's 0 -> 24). 0: a thread's C loads of its
// bin, as before. Not kept (GPU run 230, an H100): the probe's B = 1 cluster16_tk "top-k round 1" 1.75 -> 2.76 us (the
// bench's top-k +0.41), B = 8 cluster8_tk 1.38 -> 1.83, cluster4_tp3g 1.73 -> 1.79: the 16 loads a thread were in
// flight at once, where a lane's 2 quads here wait in turn; the phase is latency, not the distributed shared memory's
// request count.
#ifndef MLOPS_SAMPLE_COUNT_QUADS
#define MLOPS_SAMPLE_COUNT_QUADS 0
#endif
// The tk forms' fused first round (a top-k row's key counts by top byte, counted in the staging and published with the
// max) from a window of 32 bins (session 48, tk_count_window): warp 0, once it holds the cluster's max, reads the C CTAs'
// counts of the max's bin and the 31 below it (a lane a bin: 16 remote loads a lane at C = 16, 512 a CTA) and scans
// them from the top; where they reach k the crossing bin, the count above it and the bin's own are level 3's (no key
// lies above the max's bin, so the window's sums from the top are the 256-bin suffix sums). The round before read all
// 256 bins (4 096 remote loads a CTA at C = 16) and ran the 256-bin scan's barriers: GPU run 238's probe (an H100) put
// B = 1 cluster16_tk's "top-k round 1" at 1.79 us, and those loads issued in the max phase instead (beside warp 0's)
// moved 0.67 us into it, so the pull is the distributed shared memory's traffic, not its latency. Where the window does
// not reach k (a flat row, or k over the 32 bins' elements) the round reads the 256 bins as before. The same prefix,
// remaining count, done and bin count. 0: every row reads the 256 bins.
#ifndef MLOPS_SAMPLE_TK_COUNT_WINDOW
#define MLOPS_SAMPLE_TK_COUNT_WINDOW 1
#endif
// tk_count_window's 32 counts a lane read beside the cluster's maxima (session 53): warp 0 reads the C CTAs' counts of
// the window under this CTA's own max's bin in the same flight as the C maxima, and where the cluster's max lies in that
// bin (a row whose max's bin every CTA's slice reaches: the bins are a factor of 4 wide, the bench's rows' 16 slice
// maxima of N(0, 3^2) all lie in [4, 16)) those are the window's counts, one remote round trip instead of two on the
// max phase of every fused top-k row; else the window is read again for the max's bin, as before. The same counts, so
// the same level 3. 0: the window read after the maxima (the runner checks both). Not kept (GPU run 247, an H100): the
// B = 1 cluster16_tk max phase 1.86 -> 1.81 us, the bench's top-k / combination +0.08 / -0.07 (noise), for 64 - 112
// more SASS instructions a tk kernel: the second round trip was not what the phase waited on.
#ifndef MLOPS_SAMPLE_TK_WINDOW_GUESS
#define MLOPS_SAMPLE_TK_WINDOW_GUESS 0
#endif
// tp3_rounds' level 2 chosen by every warp from the 256 bins' masses in registers (session 53, tp3_rounds_warps in
// sample_cluster_list_rounds.cuh): 5 block barriers instead of 10 on the path the bench's top-p rows take (the B = 1
// cluster16_wide probe's "top-p done", 2.07 us in GPU run 246). The staged tp3 and wide forms at 512 threads, not the
// global-slice forms. 0: tp3_rounds (the runner checks both). Not kept (GPU runs 247 / 248, H100s): the level's choice
// 0.67 -> 0.86 us (16 warps each scanning issue more than the 256 threads' scan and its barriers cost), the bench's B = 1
// top-p 19.70 -> 19.81, B = 8 24.59 -> 25.23. 2 (session 53, prepared): the same choice by warp 0 alone, broadcast to
// the others by one barrier (tp3_rounds_warps<NT, true>: one warp's scan, not sixteen contending for issue).
#ifndef MLOPS_SAMPLE_TP3_WARPS
#define MLOPS_SAMPLE_TP3_WARPS 0
#endif
// The tk forms' gather pushed (session 49, push_candidates in sample_cluster_gather.cuh): where tk_count_window found
// level 3's bin, the same window tells every CTA's count of the keys the listing will take (those in the bins from the
// crossing one to the max's), so warp 0 also lays out the gathered list there (g_off, g_n) and arms this CTA's
// mbarrier for its bytes; after its listing each CTA sends its listed values into every CTA's list by st.async (the
// distributed shared memory's store that completes bytes on the receiving CTA's mbarrier), and each CTA waits on its
// own mbarrier alone. gather_candidates instead publishes the counts behind a cluster barrier, scans them and then pulls
// every element by two dependent remote loads (its slice index, then its value): GPU run 239's probe put B = 1
// cluster16_tk's gather at 1.80 us. The same values at the same places of the list (the listing's order, each CTA's
// part where its count's scan puts it). The smallest cluster that takes it, as MLOPS_SAMPLE_TK_WARPS_GATHER (0: none;
// the host runner's clusters only where a test builds it with 1 or 2): 8 since GPU runs 242 / 243 (H100s, four paired
// rounds each): B = 1 top-k 50 15.15 -> 14.43 us, the combination 17.22 -> 16.54, B = 8 top-k 18.14 -> 16.71, the
// combination 20.25 -> 19.18 (the probe's gather 1.81 -> 0.80 us at B = 1, 1.85 -> 0.42 at B = 8, the max phase +0.3 /
// +0.2 for the window's layout). In the 1024-thread global-slice kernels (B = 64's cluster2_tp3g) ptxas 13.0 grew the
// stack 32 -> 40 bytes and B = 64 lost 0.6 - 2.3 us (run 242). The window's counts kept in shared memory and laid out
// by warp 0 before its listing instead (run 243): the max phase 1.58 -> 3.02 us at B = 1, each count's store waiting
// for its remote load (the loads' asm is volatile with a memory clobber), B = 1 top-k +0.65 against the base.
#ifndef MLOPS_SAMPLE_TK_PUSH
#define MLOPS_SAMPLE_TK_PUSH 8
#endif
// A gathered top-k row's level 2 and tk_finish in one (session 49, tk_level2_finish in sample_cluster_list_rounds.cuh):
// the smallest cluster of the staged tk forms that takes it (0: none; the host runner's clusters only where a test
// builds it with 1 or 2). 8 (clusters of 8 and 16) by default since GPU run 245 (an H100; out of line, session 52):
// the probe's "top-k done" 1.73 -> 1.50 us at B = 1 (cluster16_tk), 1.79 -> 1.46 at B = 8 (cluster8_tk).
#ifndef MLOPS_SAMPLE_TK_FINISH2
#define MLOPS_SAMPLE_TK_FINISH2 8
#endif
// Top-p after a gathered top-k with at most 64 weighed elements by one warp (session 50, tk_top_p_warp in
// sample_cluster_list_rounds.cuh): 1 on, 0 off (tk_top_p's walk of the list by every thread and block_max_u64). On
// since GPU run 245: the combination's "top-p done" 2.19 -> 1.77 us at B = 1, 2.15 -> 1.78 at B = 8.
#ifndef MLOPS_SAMPLE_TK_TOPP_WARP
#define MLOPS_SAMPLE_TK_TOPP_WARP 1
#endif
// And that rule by every warp, the entries split among them (session 53, tk_top_p_split in
// sample_cluster_list_rounds.cuh): 1 on, 0 off (warp 0 alone, tk_top_p_warp). On since GPU run 249 (an H100): the
// combination's "top-p done" 1.82 -> 1.69 us at B = 1, 1.81 -> 1.69 at B = 8; the bench's combination 15.22 -> 15.12
// (CUPTI 12.40 -> 12.28), B = 8 17.87 -> 17.68 (15.25 -> 14.96); 312 fewer SASS instructions a tk / tp kernel.
#ifndef MLOPS_SAMPLE_TK_TOPP_SPLIT
#define MLOPS_SAMPLE_TK_TOPP_SPLIT 1
#endif
// And the draw of such a row from tk_top_p's compacted entries by warp 0 (session 51, list_draw_kept in
// sample_cluster_draw.cuh): 1 on (with MLOPS_SAMPLE_TK_TOPP_WARP), 0 off (list_draw or tk_draw weigh the list again).
// On since GPU run 245: the combination's "drawn" 1.69 -> 1.41 us at B = 1 (against list_draw; 1.83 with tk_draw).
#ifndef MLOPS_SAMPLE_TK_TOPP_DRAW
#define MLOPS_SAMPLE_TK_TOPP_DRAW 1
#endif
// A device function kept out of line where inlining it grew a kernel's stack (ptxas 13.0, sm_90, 64 registers a
// thread): store_row_draw (sample_cluster_draw.cuh), tk_level2_finish (sample_cluster_list_rounds.cuh).
#if defined(MLOPS_CUDA_ON_HOST)
#define MLOPS_SAMPLE_OUT_OF_LINE  // the host runner: nothing to keep apart (cuda_runtime.h's host side has no __noinline__)
#else
#define MLOPS_SAMPLE_OUT_OF_LINE __noinline__
#endif
constexpr int kPenaltySlotBits = MLOPS_SAMPLE_PENALTY_SLOT_BITS, kPenaltySlots = 1 << kPenaltySlotBits;
constexpr int64_t kPenaltyTableMax = kPenaltySlots * 3 / 4;

// A phase timeline for bench/sample_timeline_probe.cu, which defines MLOPS_SAMPLE_TIMELINE before including
// sample_cluster_kernel.cuh: thread 0 of each CTA of row 0 stores %clock64 at the numbered points of sample_cluster_kernel
// (0 start, 1 penalties, 2 staged, 3 max, 4 top-k's first round, 5 its list gathered, 6 top-k done, 7 the
// wide top-p round, 8 top-p done, 9 drawn, 10 end). Compiled out everywhere else.
// And every row's span (session 36, GPU run 197: a round of 30 rows at B = 64 took ~42 us while row 0 took 28):
// %globaltimer (ns, one clock for every SM) of the row's first CTA start (atomicMin; the probe sets ~0 first) and its
// last CTA end (atomicMax), rows 0 .. 63.
#if defined(MLOPS_SAMPLE_TIMELINE) && !defined(MLOPS_CUDA_ON_HOST)
__device__ unsigned long long g_sample_timeline[16][16];  // declared in both passes: the probe reads it
// A row's %globaltimer span: [0] its earliest CTA's start, [1] its latest CTA's end; session 55: [2] its latest CTA's
// start, [3] its earliest CTA's end (how far apart the cluster's CTAs start: the marks count from each CTA's own start)
__device__ unsigned long long g_sample_rows[64][4];
#define MLOPS_SAMPLE_ROW_SPAN_WORDS 4
// session 41: every row's points (rows 0 .. 63), each CTA's %clock64 as g_sample_timeline's for row 0: at B = 64 the
// global-slice form's top-p rows, all in one round, took 35 - 55 us (GPU run 207), and which phase differs tells why
#define MLOPS_SAMPLE_HAS_ROW_MARKS 1
__device__ unsigned long long g_sample_row_marks[64][16][16];
#endif
#if defined(MLOPS_SAMPLE_TIMELINE) && defined(MLOPS_SAMPLE_CLUSTER_BODY) && !defined(MLOPS_CUDA_ON_HOST)
#define MLOPS_SAMPLE_MARK(i)                                                              \
  do {                                                                                    \
    if (threadIdx.x == 0 && blockIdx.y < 64) {                                            \
      unsigned long long t_;                                                              \
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(t_)::"memory");                        \
      if (blockIdx.y == 0) g_sample_timeline[cluster_rank()][i] = t_;                     \
      g_sample_row_marks[blockIdx.y][cluster_rank()][i] = t_;                             \
    }                                                                                     \
  } while (0)
// i = 0: the CTA's start, 1: its end (g_sample_rows)
#define MLOPS_SAMPLE_ROW_SPAN(i)                                                          \
  do {                                                                                    \
    if (threadIdx.x == 0 && blockIdx.y < 64) {                                            \
      unsigned long long t_;                                                              \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_)::"memory");                    \
      if ((i) == 0) {                                                                     \
        atomicMin(&g_sample_rows[blockIdx.y][0], t_);                                     \
        atomicMax(&g_sample_rows[blockIdx.y][2], t_);                                     \
      } else {                                                                            \
        atomicMax(&g_sample_rows[blockIdx.y][1], t_);                                     \
        atomicMin(&g_sample_rows[blockIdx.y][3], t_);                                     \
      }                                                                                   \
    }                                                                                     \
  } while (0)
#else
#define MLOPS_SAMPLE_MARK(i) \
  do {                       \
  } while (0)
#define MLOPS_SAMPLE_ROW_SPAN(i) \
  do {                           \
  } while (0)
#endif
// Session 47's points inside the wide top-p near pass and mask_draw (the probe built with MLOPS_SAMPLE_NEAR_MARKS):
// marks 4 / 15 / 5 / 6, which a top-p row without top-k does not otherwise reach (the probe orders them by time).
// Session 53's points inside tp3_rounds / tp3_rounds_warps and mask_draw (the probe built with MLOPS_SAMPLE_TP3_MARKS):
// 4 the level's weighing done, 15 its bin chosen, 5 the bin's elements collected, 6 mask_draw's chunk sums.
#if defined(MLOPS_SAMPLE_TP3_MARKS)
#define MLOPS_SAMPLE_TP3_MARK(i) MLOPS_SAMPLE_MARK(i)
#else
#define MLOPS_SAMPLE_TP3_MARK(i) \
  do {                           \
  } while (0)
#endif
// Session 54's points inside mask_draw (the probe built with MLOPS_SAMPLE_DRAW_MARKS; not with the other two): 5 at
// its entry, 4 after the chunk words' zeroing (its barrier), 15 thread 0's weights added, 6 the sums (their barrier).
#if defined(MLOPS_SAMPLE_DRAW_MARKS)
#if defined(MLOPS_SAMPLE_TP3_MARKS) || defined(MLOPS_SAMPLE_NEAR_MARKS)
#error "MLOPS_SAMPLE_DRAW_MARKS takes marks 4 / 15 / 5 / 6 as the other two do: one of the three at a time"
#endif
#define MLOPS_SAMPLE_DRAW_MARK(i) MLOPS_SAMPLE_MARK(i)
#else
#define MLOPS_SAMPLE_DRAW_MARK(i) \
  do {                            \
  } while (0)
#endif
#if defined(MLOPS_SAMPLE_NEAR_MARKS)
#define MLOPS_SAMPLE_NEAR_MARK(i) MLOPS_SAMPLE_MARK(i)
#else
#define MLOPS_SAMPLE_NEAR_MARK(i) \
  do {                            \
  } while (0)
#endif

#if defined(MLOPS_SAMPLE_CLUSTER_BODY) && !defined(MLOPS_CUDA_ON_HOST)
__device__ __forceinline__ unsigned cluster_rank() { return cooperative_groups::this_cluster().block_rank(); }
__device__ __forceinline__ void cluster_sync() { cooperative_groups::this_cluster().sync(); }
template <class T>
__device__ __forceinline__ T* cluster_map(T* local, unsigned rank) {
  return cooperative_groups::this_cluster().map_shared_rank(local, rank);
}
// The lean forms' cluster barrier for exchanges through shared memory only. this_cluster().sync()
// releases every state space: MEMBAR.ALL.GPU before the arrive (nvcc 13.0, sm_90), a wait for the
// thread's memory operations to reach GPU scope at each of a call's 3 - 11 barriers. Here the
// release is restricted to this CTA's shared memory (MEMBAR.ALL.CTA) and the arrive is relaxed;
// the wait acquires as usual. Global writes before it are NOT ordered for the other CTAs (the
// penalties' barriers keep cluster_sync). nvcc before 12.8 lacks the restricted fence: the full one.
__device__ __forceinline__ void cluster_arrive_smem() {
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)
  asm volatile("fence.release.sync_restrict::shared::cta.cluster;" ::: "memory");
  asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
#else
  __cluster_barrier_arrive();
#endif
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait;" ::: "memory"); }
// The lean forms' reads of another CTA's shared memory: mapa + ld.shared::cluster on 32-bit
// addresses, as volatile asm so the address is formed at the read. Through map_shared_rank's
// generic pointers nvcc 13.0 hoisted all 16 CTAs' 64-bit addresses out of the rounds' loops and
// spilled them (288 bytes of spill stores in the cluster16 gather kernel at 64 registers).
template <class T>
__device__ __forceinline__ T remote_load(const T* local, unsigned rank) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "4, 8 or 16 bytes (16: 16-byte aligned)");
  const uint32_t a = uint32_t(__cvta_generic_to_shared(local));
  uint32_t ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
  T t;
  if constexpr (sizeof(T) == 4) {
    uint32_t v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(ra) : "memory");
    memcpy(&t, &v, 4);
  } else if constexpr (sizeof(T) == 16) {
    uint32_t v[4];
    asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "r"(ra)
                 : "memory");
    memcpy(&t, v, 16);
  } else {
    uint64_t v;
    asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(ra) : "memory");
    memcpy(&t, &v, 8);
  }
  return t;
}
__device__ __forceinline__ void cluster_sync_smem() {
  cluster_arrive_smem();
  cluster_wait();
}
// MLOPS_SAMPLE_TK_PUSH's mbarrier (one phase a call: expected arrivals 1, thread 0's arrive with the expected bytes)
// and its stores. The init's fence orders it before the next cluster barrier (the max's exchange, a relaxed arrive),
// after which the other CTAs may complete bytes on it; its phase may complete bytes before the expect (the
// transaction count goes below 0 until it comes).
__device__ __forceinline__ void push_bar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(uint32_t(__cvta_generic_to_shared(bar))) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void push_expect(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(uint32_t(__cvta_generic_to_shared(bar))),
               "r"(bytes)
               : "memory");
}
// CTA rank's shared::cluster address of p, a place in this CTA's shared memory (the push stores' target and mbarrier)
__device__ __forceinline__ uint32_t cluster_addr(const void* p, unsigned rank) {
  uint32_t ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(uint32_t(__cvta_generic_to_shared(p))), "r"(rank));
  return ra;
}
// v into CTA rank's copy of *local, its 4 bytes completed on CTA rank's copy of *bar
__device__ __forceinline__ void push_store(float* local, unsigned rank, float v, uint64_t* bar) {
  const uint32_t ra = cluster_addr(local, rank), rb = cluster_addr(bar, rank);
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(ra), "r"(f32_bits(v)),
               "r"(rb)
               : "memory");
}
// MLOPS_SAMPLE_PUSH_X's stores: v (8 bytes) or the pair (a, b) (16 bytes, `local` 16-byte aligned) into CTA rank's copy
// of *local (this CTA's static shared memory), completed on CTA rank's copy of *bar
__device__ __forceinline__ void push_store_u64(uint64_t* local, unsigned rank, uint64_t v, uint64_t* bar) {
  const uint32_t ra = cluster_addr(local, rank), rb = cluster_addr(bar, rank);
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(ra), "l"(v), "r"(rb)
               : "memory");
}
__device__ __forceinline__ void push_store_pair(uint64_t* local, unsigned rank, uint64_t a, uint64_t b, uint64_t* bar) {
  const uint32_t ra = cluster_addr(local, rank), rb = cluster_addr(bar, rank);
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b64 [%0], {%1, %2}, [%3];" ::"r"(ra), "l"(a),
               "l"(b), "r"(rb)
               : "memory");
}
// The mbarrier's 8 bytes given back to plain stores (MLOPS_SAMPLE_PUSH_X bit 4: wide_full_pass publishes there)
__device__ __forceinline__ void push_bar_inval(uint64_t* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(uint32_t(__cvta_generic_to_shared(bar))) : "memory");
}
// Waits for the call's phase (parity 0; MLOPS_SAMPLE_PUSH_X bit 8: pub_wide's second, 1): every expected byte stored
// into this CTA, visible to the waiting thread.
template <uint32_t kParity = 0>
__device__ __forceinline__ void push_wait(uint64_t* bar) {
  const uint32_t a = uint32_t(__cvta_generic_to_shared(bar));
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(a), "n"(kParity)
        : "memory");
}
#endif

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)
// A read of another CTA's dynamic shared memory (the staged slice) at the place of `local` in this
// CTA's: mapa + ld.shared::cluster on the device; on the host, the same offset in block `rank`'s buffer.
template <class T>
__device__ __forceinline__ T remote_load_dyn(const T* local, unsigned rank) {
#if defined(MLOPS_CUDA_ON_HOST)
  const char* mine = reinterpret_cast<const char*>(g_dyn_shared[tl_slot].data());
  const size_t off = size_t(reinterpret_cast<const char*>(local) - mine);
  return *reinterpret_cast<const T*>(reinterpret_cast<const char*>(g_dyn_shared[rank].data()) + off);
#else
  return remote_load(local, rank);
#endif
}

#if defined(MLOPS_CUDA_ON_HOST)
// MLOPS_SAMPLE_TK_PUSH's mbarrier and stores on the host (the device's in the section above): the 8 bytes of push_bar
// as the transaction count, the pending arrival and whether the phase completed; a store lands at once and completes
// its bytes on the receiving block's copy; a wait yields to the other fibers until the phase completes.
struct HostPushBar {
  int32_t tx;
  uint16_t pending, done;
};
static_assert(sizeof(HostPushBar) == sizeof(uint64_t), "HostPushBar: push_bar's 8 bytes");
inline HostPushBar& host_push_bar(uint64_t* bar) { return *reinterpret_cast<HostPushBar*>(bar); }
inline void host_push_complete(HostPushBar& b, int32_t bytes, bool arrive) {
  b.tx += bytes;
  if (arrive) b.pending = 0;
  if (!b.pending && b.tx == 0) {  // the phase completes; the next one waits for its arrival (push_gather's second)
    ++b.done;
    b.pending = 1;
  }
  ++host_fibers::g_state.progress;
}
inline void push_bar_init(uint64_t* bar) { host_push_bar(bar) = HostPushBar{0, 1, 0}; }
inline void push_bar_inval(uint64_t*) {}
inline void push_expect(uint64_t* bar, uint32_t bytes) { host_push_complete(host_push_bar(bar), int32_t(bytes), true); }
// block rank's copy of p, a place in this block's static shared memory
template <class T>
inline T* host_block_remote(T* p, unsigned rank) {
  char* const base = g_block_shared_base;
  const size_t off = size_t(reinterpret_cast<char*>(p) - base) - size_t(tl_slot) * g_block_shared_size;
  return reinterpret_cast<T*>(base + size_t(rank) * g_block_shared_size + off);
}
inline void push_store(float* local, unsigned rank, float v, uint64_t* bar) {
  const char* mine = reinterpret_cast<const char*>(g_dyn_shared[tl_slot].data());
  const size_t off = size_t(reinterpret_cast<const char*>(local) - mine);
  *reinterpret_cast<float*>(reinterpret_cast<char*>(g_dyn_shared[rank].data()) + off) = v;
  host_push_complete(host_push_bar(host_block_remote(bar, rank)), -4, false);
}
inline void push_store_u64(uint64_t* local, unsigned rank, uint64_t v, uint64_t* bar) {
  *host_block_remote(local, rank) = v;
  host_push_complete(host_push_bar(host_block_remote(bar, rank)), -8, false);
}
inline void push_store_pair(uint64_t* local, unsigned rank, uint64_t a, uint64_t b, uint64_t* bar) {
  uint64_t* r = host_block_remote(local, rank);
  r[0] = a;
  r[1] = b;
  host_push_complete(host_push_bar(host_block_remote(bar, rank)), -16, false);
}
template <uint32_t kParity = 0>
inline void push_wait(uint64_t* bar) {  // phases complete in order here: done counts them
  while (host_push_bar(bar).done <= kParity) host_fibers::yield();
}
#endif

// Element li of CTA r's slice, read by this CTA, whose own slice is zs: from CTA r's staged copy (shared memory), or
// (GSL, the global-slice forms, whose slices lie gch elements apart in the row) from global memory.
template <bool GSL>
__device__ __forceinline__ float slice_value(const float* zs, uint32_t li, unsigned r, int64_t gch) {
  if constexpr (GSL) return zs[(int64_t(r) - int64_t(cluster_rank())) * gch + int64_t(li)];
  else return remote_load_dyn(&zs[li], r);
}
#endif


template <int NT>
struct ClusterShared {
  // a round's histogram of this CTA's slice as it is counted: bin b's copy c at b * kRep + c;
  // masses as two 32-bit words (a carry-propagating atomic add). Key counts (top-k rounds) use hlo:
  // a round's copies are dead once summed into cnt, so the two never live together, and the 8 KB
  // saved let two CTAs of the staged cluster8 (a 76 KB slice at V = 151936) share an SM.
  uint32_t hlo[256 * kRep], hhi[256 * kRep];
  // the same histogram, its copies added: what the other CTAs read, double-buffered by round (they
  // read buffer r % 2 after round r's barrier; this CTA writes it again only after round r + 1's)
  // 16-byte aligned for cluster_counts256's loads (MLOPS_SAMPLE_COUNT_QUADS), and in the 512-thread kernels anyway: with
  // it ptxas 13.0 (sm_90) allocated the tk / tp kernels' registers with smaller stacks (cluster8_tk 64 -> 8 bytes,
  // cluster16_tk 40 -> 16, cluster16_tp3 64 -> 16; GPU run 236: B = 8 top-k 50 by CUPTI 16.3 -> 15.6 us, B = 1 13.15 ->
  // 12.88) while the 1024-thread global-slice kernels' grew (cluster2_tp3g 32 -> 40: B = 64 +0.4 - 2 us), so those keep
  // the natural alignment (session 47).
  alignas(MLOPS_SAMPLE_COUNT_QUADS || NT < 1024 ? 16 : 4) uint32_t cnt[2][256];
  uint64_t mass[2][256];
  uint64_t wtot[8];
  uint64_t red[NT / 32];
  uint64_t wsum[NT / 32];  // the draw: each warp's kept sum over its sub-chunk
  // published for the other CTAs of the cluster, each written once a call
  uint64_t pub_best, pub_lp, pub_kept;
  int pub_flags;
  // broadcasts within the CTA
  uint64_t b_total, b_acc, b_target, b_tokw;
  uint64_t b_best, b_mine;  // the lean forms: the cluster's max, this CTA's kept sum
  uint32_t pub_cand_n;      // the gather forms: this CTA's candidate count, published once a call
  uint32_t g_off[33];       // where each CTA's candidates start in the gathered list
  int g_n;                  // the gathered count, -1 when they do not all fit
  uint32_t pub_bound, g_bound;  // the wide forms: this CTA's list bound, the cluster's largest
  // the wide forms: the mass of this CTA's portion of the wide bins (wide_top_p, rows without top-k). In the tk forms'
  // top-k rows: MLOPS_SAMPLE_TK_PUSH's mbarrier (push_bar_of)
  uint64_t pub_wide;
  uint32_t b_prefix, b_mask, b_krem;
  int b_done, b_warp, b_token, b_flags;
  // the candidates: the slice's elements with key >= cand_lo, unordered (valid when cand_n <= kClusterCand)
  uint32_t cand_n;
  float cand[kClusterCand];
  // the tk / tp forms: the row's sanitized configuration and two of its tests, written by thread 0 before the
  // staging's barrier and read from here at each use after it. In registers they were live across the whole
  // kernel, and ptxas, held to 64 registers a thread by __launch_bounds__(512, 2), spilled them (session 14)
  mlops_sample_config r_cfg;
  int r_stats, r_fused;
  uint64_t r_draw;  // MLOPS_SAMPLE_EARLY_DRAW (sample_cluster_draw.cuh): the row's draw64, computed in the max phase
#if MLOPS_SAMPLE_PUSH_X & 1
  // draw_locate's pushed totals, CTA r's at x_kept[r] (C <= 16): 128 bytes, so the staged slice after the struct keeps
  // its 128-byte line (push_bar_of's comment), and the cluster8 forms' two CTAs an SM still fit (128 bytes to spare)
  uint64_t x_kept[16];
#endif
};

// MLOPS_SAMPLE_TK_PUSH's mbarrier: pub_wide's 8 bytes, which only wide_top_p (a row without top-k) writes, while only
// a top-k row measured here (fused) pushes. A field of its own made the struct 16 bytes longer, so the staged slice after
// it in the dynamic shared memory no longer started on a 128-byte line: GPU run 241 (an H100) read the kernels without
// any new code slower (B = 1 temperature on cluster16_lean, its SASS the same but for that offset: +0.55 us; B = 1 / 8
// top-p on cluster16_wide +0.65 / +0.96), and ptxas 13.0 allocated the 1024-thread global-slice kernels anew (stack
// 32 -> 40 bytes) whether the field went last or into the struct's holes.
template <int NT>
__device__ __forceinline__ uint64_t* push_bar_of(ClusterShared<NT>& sh) {
  return &sh.pub_wide;
}

// An inclusive scan over the lanes, by the steps that reach lane kTo (the lanes above it get partial sums).
template <class T, unsigned kTo>
__device__ __forceinline__ T warp_incl_scan_to(T v) {
  static_assert(kTo < 32u, "a warp's lanes");
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (unsigned off = 1; off <= kTo; off <<= 1) {
    const T o = __shfl_up_sync(kFull, v, off);
    if (lane >= off) v += o;
  }
  return v;
}

__device__ __forceinline__ uint64_t warp_incl_scan(uint64_t v) { return warp_incl_scan_to<uint64_t, 31u>(v); }

// The max phase's reduction by warp 0 (lane r: CTA r's max b and flags f, or 0): the cluster's max and the flags' or,
// in every lane's b / f, and lane 0 stores them into b_best / b_flags.
template <int NT>
__device__ __forceinline__ void cluster_max_flags(uint64_t& b, int& f, ClusterShared<NT>& sh) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    const uint64_t ob = __shfl_xor_sync(kFull, b, off);
    b = ob > b ? ob : b;
    f |= __shfl_xor_sync(kFull, f, off);
  }
  if ((threadIdx.x & 31u) == 0) {
    sh.b_best = b;
    sh.b_flags = f;
  }
}

__device__ __forceinline__ uint64_t warp_sum(uint64_t v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
  return v;
}

// Suffix sums over the 256 bins of a histogram: thread j < 256 holds bin 255 - j's value x and gets
// the sum over bins >= 255 - j (an inclusive scan in j); threads >= 256 get 0. Every thread of the
// CTA calls it (two barriers).
template <int NT>
__device__ uint64_t suffix_scan256(uint64_t x, ClusterShared<NT>& sh) {
  const int tid = threadIdx.x;
  uint64_t v = 0;
  if (tid < 256) {
    v = warp_incl_scan(x);
    if ((tid & 31) == 31) sh.wtot[tid >> 5] = v;
  }
  __syncthreads();
  if (tid < 256)
    for (int w = 0; w < (tid >> 5); ++w) v += sh.wtot[w];
  __syncthreads();
  return v;
}

#if defined(MLOPS_SAMPLE_CLUSTER_BODY)  // remote_load: sm_90 device code, or the host runner
// The count of bin 255 - tid (tid < 256; 0 for the other threads) summed over the cluster's C CTAs' `cnt` (a round's
// 256 counts, 16-byte aligned, published before the caller's cluster barrier), by 16-byte loads (MLOPS_SAMPLE_COUNT_QUADS):
// item i = quad i / G (bins 4 q .. 4 q + 3) of CTA i % G (G: C rounded up to a power of two; the lanes of CTAs >= C
// add 0), G consecutive lanes a quad, their sums by log2 G shuffles; 64 G items, a multiple of 32, so a warp takes
// part in an iteration whole. tmp: 256 words of this CTA's shared memory that no other CTA reads and nothing of this
// CTA reads until the caller's next barrier. Every thread calls it (one barrier).
template <int C, int NT>
__device__ __forceinline__ uint32_t cluster_counts256(const uint32_t* cnt, uint32_t* tmp) {
  constexpr int G = C <= 1 ? 1 : C <= 2 ? 2 : C <= 4 ? 4 : C <= 8 ? 8 : C <= 16 ? 16 : 32;
  static_assert(C >= 1 && C <= 32 && NT % 32 == 0, "at most a warp's lanes a quad");
  const int tid = threadIdx.x;
#pragma unroll 1
  for (int i = tid; i < 64 * G; i += NT) {
    const unsigned r = unsigned(i) & unsigned(G - 1);
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r < unsigned(C)) v = remote_load(reinterpret_cast<const uint4*>(cnt) + i / G, r);
#pragma unroll
    for (int off = G / 2; off >= 1; off >>= 1) {
      v.x += __shfl_xor_sync(kFull, v.x, off);
      v.y += __shfl_xor_sync(kFull, v.y, off);
      v.z += __shfl_xor_sync(kFull, v.z, off);
      v.w += __shfl_xor_sync(kFull, v.w, off);
    }
    if (r == 0) {
      const int q = i / G;
      tmp[4 * q] = v.x;
      tmp[4 * q + 1] = v.y;
      tmp[4 * q + 2] = v.z;
      tmp[4 * q + 3] = v.w;
    }
  }
  __syncthreads();
  return tid < 256 ? tmp[255 - tid] : 0u;
}
#endif

}  // namespace
}  // namespace mlops::vocab
