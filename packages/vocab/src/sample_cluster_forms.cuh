// The sampler's cluster kernel: its forms, the F of sample_cluster_kernel<C, NT, F>. Each form names which of the
// kernel's steps a variant takes (vocab_api.cpp's kSampleVariants lists them by name, kSampleStaged by number);
// each adds to the form it derives from, as the kernel's static_asserts require.
// STAGE (the *_smem variants and everything after them): the slice copied into shared memory once (stage_slice).
// LEAN (the *_lean variants): restricted barriers, branch-free weights, the lean draw (lean_draw).
// GATHER (the *_gather variants, on the lean form): the rounds after the first on the cluster's gathered candidates.
// LATE (the *_late variants, on the gather form): a second gather after the second round where the first's bin
// held too many elements (late_gather).
// ES (the *_es variants, on the staged form): a top-p round below the first stops the rounds when the chosen bin holds
// exactly one element of non-zero weight (counted cluster-wide next to the masses). The rounds
// below it would only narrow the threshold from the bin's lower bound to that element's key, and
// every key between the two is of an element of zero weight (the bin holds no other weight): the
// same kept weights, the same S, the same token and log-probability. The first round (over the
// whole slice, where few bins take most elements) counts nothing: one un-replicated atomic an
// element there would serialise; later rounds see only the prefix's elements.
// WIDE (the *_wide variants, on the late form): top-k's first round in each CTA alone on a wide
// digit, then one gather (wide_topk_gather); top-p without top-k: a first round on the wide digit
// across the cluster and a gather of the crossing bin's elements (wide_top_p).
// TK (the *_tk variants, on the gather form): candidate lists of slice indices, top-p after a gathered
// top-k decided on the list (tk_top_p), the draw over a CTA's list where it holds the kept elements (tk_draw).
// TP (the *_tp variants, on the tk form): top-p without top-k takes the wide forms' first round (wide_top_p<TP>:
// one shared RED an element where the weight's high bits are 0, a list of slice indices of every element at or
// above the crossing bin, gathered by index), the early stop on the gathered list, and the draw over a CTA's
// list by chunk sums (tk_draw<TP>): no draw pass over the slice where the list holds the kept elements.
// TP2 (the *_tp2 variants, on the tp form): the wide round's atomics unconditional (wide_full_pass<TP2>), the rounds on
// the gathered list weighing a position only where a lane of the warp keeps its element there.
// TP3 (the *_tp3 variants, on the tp form): the rounds on the gathered list cut to one weighing and one warp
// (tp3_rounds).
// GSL (the *_tp3g variants, on the tp3 form, session 38): the slice stays in global memory (STAGE's pass measures and
// counts only, every later read of the slice goes to the row, the gather reads the other slices there), the dynamic
// shared memory holds the gathered list alone and the draw goes by chunks of 64 (chunk_draw). For a batch that
// staged clusters run in several rounds (B = 64: 30 clusters of 8 at a time on the H200, GPU run 196): 1024-thread
// CTAs, one an SM, 2 a row at B = 64, every row at once, each pass over the slice an L2 read.
#pragma once

namespace mlops::vocab {
namespace {

struct ClusterForm {  // cluster8 / cluster16: the slice read from the row at every pass
  static constexpr bool stage = false, es = false, lean = false, gather = false, late = false, wide = false, tk = false,
                        tp = false, tp2 = false, tp3 = false, gsl = false;
};
struct StagedForm : ClusterForm { static constexpr bool stage = true; };  // cluster8_smem, cluster16_smem(_t1024)
struct EsForm : StagedForm { static constexpr bool es = true; };          // *_smem_es (kSampleStaged 2)
struct LeanForm : StagedForm { static constexpr bool lean = true; };      // *_lean (3)
struct GatherForm : LeanForm { static constexpr bool gather = true; };    // *_gather (4)
struct LateForm : GatherForm { static constexpr bool late = true; };      // *_late (5)
struct WideForm : LateForm { static constexpr bool wide = true; };        // *_wide (6)
struct TkForm : GatherForm { static constexpr bool tk = true; };          // *_tk (7)
struct TpForm : TkForm { static constexpr bool tp = true; };              // *_tp (8)
struct Tp2Form : TpForm { static constexpr bool tp2 = true; };            // *_tp2 (9)
struct Tp3Form : TpForm { static constexpr bool tp3 = true; };            // *_tp3 (10)
struct Tp3gForm : Tp3Form { static constexpr bool gsl = true; };          // *_tp3g (11)

}  // namespace
}  // namespace mlops::vocab
