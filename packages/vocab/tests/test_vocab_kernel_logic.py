"""CPU (CI): device code compiled by the host C++ compiler and run with one fiber an emulated GPU thread
(packages/common/include/mlops/common/testing/cuda_on_host.h on fibers.h) against the host emulations, bit for bit.

The embed kernels (src/embed_kernel.cuh, tests/c/embed_kernel_on_host.cpp): every variant, 16-byte
and scalar paths, partial units, OOV rows, bf16(x * w), the unit sums and r; a reversed unit fold is
caught.

The CUDA-core LM head (src/lm_head_kernel.cuh, tests/c/lm_head_kernel_on_host.cpp): the segment
split, the reduce-scatter whose tree must be the butterfly, the segment fold, the epilogue and its
statistics, grids of 1, 2 and every tile; reversing the segment fold is caught.

The cp.async-pipelined tensor-core LM head (src/lm_head_pipe_kernel.cuh,
tests/c/lm_head_pipe_kernel_on_host.cpp), its PTX primitives given host meanings (copies deferred
to the wait that needs them, the m16n8k16 MMA gathered over the warp in double): bit for bit against
a mirror of its order, within the float64 bound, statistics against the logits written, for stages
2, 3, 4, 6 and grids of 1, 2 and every tile; a wait count one too small, an unswizzled read and a
reversed segment fold are each caught (checked when it was written).

The sampler (src/sample_kernel.cuh, tests/c/sample_kernel_on_host.cpp): pass 1, the radix selections on the row
and on the shared-memory candidates,
the draw, the penalty kernels and every phase of the split variant (tokens, flags, log-probabilities,
steps, penalized logits, the penalty workspace back to zero); the lean forms' weight (lean_weight_of_u) against
rint(exp_det(u) * 2^31) on every 61st float of [-80, 0] and every float where its n differs from exp_det's.
Mutations of the candidate gather, the split draw's chunk target, phase A2's masses and phase A's counts are each
caught by it (checked when it was written). What it cannot see is the GPU's own scheduling and memory model: the GPU suite's."""

import os
import pathlib
import subprocess
import sys

from mlops_testing import build_cxx

ROOT = pathlib.Path(__file__).resolve().parents[3]
PKG = ROOT / "packages" / "vocab"
sys.path.insert(0, str(ROOT / "tools"))


def _build_and_run(tmp_path, runner: str, host_source: str, min_checks: int, defines: tuple = ()):
    import cuda_toolkit

    root = cuda_toolkit.toolkit_root(cuda_toolkit.provide(os.environ.get("MLOPS_TEST_CUDA", "13.0")))
    # -ffp-contract=off: as the library is built (cmake/mlops.cmake), so a*b+c is never fused; -U_FORTIFY_SOURCE: the
    # fibers switch stacks by _longjmp, which the fortified longjmp rejects
    exe = build_cxx(tmp_path / runner,
                    [*(f"-D{d}" for d in defines),
                     "-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-ffp-contract=off", "-w", f"-I{root / 'include'}",
                     f"-I{PKG / 'include'}", f"-I{ROOT / 'packages' / 'common' / 'include'}", f"-I{PKG / 'src'}",
                     f"-I{PKG / 'tests' / 'c'}", PKG / "tests" / "c" / f"{runner}.cpp", PKG / "src" / host_source])
    # 600 s: the sampler's runner, the longest, takes ~40 s on a 2-core machine on fibers (session 25; it took 298 s
    # alone and 649 s beside other work when each emulated thread was an OS thread)
    r = subprocess.run([str(exe)], capture_output=True, text=True, check=False, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith(" 0 failed"), r.stdout[-4000:] + r.stderr[-2000:]
    assert int(r.stdout.split()[-4]) >= min_checks, r.stdout[-200:]


def test_embed_device_code_on_host_equals_host_emulation(tmp_path):
    _build_and_run(tmp_path, "embed_kernel_on_host", "embed_host.cpp", 288)


def test_lm_head_device_code_on_host_equals_host_emulation(tmp_path):
    _build_and_run(tmp_path, "lm_head_kernel_on_host", "lm_head_host.cpp", 135)


def test_lm_head_pipe_device_code_on_host(tmp_path):
    _build_and_run(tmp_path, "lm_head_pipe_kernel_on_host", "lm_head_host.cpp", 528)


def test_lm_head_stream_device_code_on_host(tmp_path):
    """The sm_90 stream candidates (src/lm_head_stream_kernel.cuh): contiguous rows a CTA or row
    blocks in turn (rr), chunks of 8 / 16 / 32 rows of 8 KB or 16 rows of 4 KB (_deep), x in
    registers, against the mirror of their order bit for bit (stages 2, 3 and 6, uneven grids,
    poisoned stages)."""
    _build_and_run(tmp_path, "lm_head_stream_kernel_on_host", "lm_head_host.cpp", 1248)


def test_sampler_device_code_on_host_equals_host_emulation(tmp_path):
    """Every variant on every case (tokens, flags, log-probabilities, steps, penalized logits). Since session 41 two
    rows of the bench's vocabulary whose ~76 000 equal weights in one global-slice CTA's wide bin wrapped the 32-bit
    sums of their 16-bit halves (the full round's bins, the near pass's): the global-slice forms' tokens differed from
    the host's before (16 failures); summing the near pass's copies in 32 bits again is caught (8). Session 46's wide
    forms (tp3_rounds on their gathered list, the draw over the near mask, both on by default): a threshold one key high
    after tp3_rounds (13 failures), its hand-over to level 1 with acc lost (4), the mask's first bit dropped (46), an
    index off (22) and the walk's weight off (4) are caught. Session 55's near bins in eighth octaves
    (MLOPS_SAMPLE_NEAR_FINE, on by default since GPU run 257; the "long slices" rows at T = 0.8 take them): the crossing
    bin's prefix shifted by the wide digit's 21 bits instead of 20 is caught (80 failures)."""
    _build_and_run(tmp_path, "sample_kernel_on_host", "sample_host.cpp", 7754)


def test_sampler_near_codes_and_penalty_table_on_host_equal_host_emulation(tmp_path):
    """Session 42's two forms and session 43's prefetch, all on by default (the penalty table since GPU run 213, the near
    codes and the prefetch since run 216), here with a table of 128 slots:
    - the global-slice forms listing from the near pass's codes (list_nib, MLOPS_SAMPLE_GSL_NIBBLES). Two rows of V =
      40 000 exercise its edges (a CTA's list over kClusterCand with the crossing bin's entries fitting; a crossing 15
      near bins down, past the codes): an element's code off by one element of its word (98 failures), one near bin's
      code wrong (18), the tail's word dropped (94), the over-full list's bin entries not written while their count is
      returned (8), codes served past their 15 bins (16) and the slice's listing past them dropped (24) are caught;
    - the penalties counted in a shared-memory table (MLOPS_SAMPLE_PENALTY_TABLE), here of 128 slots
      (MLOPS_SAMPLE_PENALTY_SLOT_BITS=7, so that tokens collide and probe; 2 048 by default). The history repeats
      tokens and a row has a frequency penalty: a count kept at 1 (32 failures), every CTA counting every token (208),
      a collision counted into the other token's slot (96) and the block barrier after the penalized writes dropped
      (69) are caught;
    - and session 43's logits of the table loaded while counting (MLOPS_SAMPLE_PENALTY_PREFETCH): the logit stored by
      the thread that found the key instead of the one that inserted it is caught (144 failures);
    - with session 45's staged slice copied at the kernel's start (MLOPS_SAMPLE_EARLY_STAGE, on by default), the
      table's penalized logits written to the row but not to the copy are caught (47 failures);
    - and session 46's tk gather by warps (MLOPS_SAMPLE_TK_WARPS_GATHER, 16 by default: clusters of 16, which the
      runner does not build) in every cluster here: the last CTA's list copied wrong fails 22 tk checks;
    - and session 49's level 2 and finish of a gathered top-k row in one (tk_level2_finish, MLOPS_SAMPLE_TK_FINISH2) in
      every cluster here: the crossing bin one low fails 60 checks, a bin taken as done where it holds more than the
      remaining count 8, and the hand-over to level 1 dropped (the bin's first 32 keys taken) 16 (the "top_k 200 ties"
      rows);
    - and session 50's top-p after a gathered top-k by one warp (tk_top_p_warp, MLOPS_SAMPLE_TK_TOPP_WARP, on by
      default since GPU run 245): a key's own weight counted above it (>= for >) fails 28 checks;
    - and session 51's draw of such a row from tk_top_p's entries by warp 0 (list_draw_kept, MLOPS_SAMPLE_TK_TOPP_DRAW,
      on since run 245; the runner's "top_k 50 + top_p 0.9 + min_p 0.05" rows): min-p's filter dropped fails 8 checks,
      the lower and higher CTAs' parts swapped 16;
    - and session 53's window counts read beside the cluster's maxima (tk_count_window's guess,
      MLOPS_SAMPLE_TK_WINDOW_GUESS; off: no gain in GPU run 247): the guessed bin's counts taken where the cluster's
      max lies in another CTA's higher bin is caught by the "top_k 40, the top in one CTA" rows (wrong tokens, then a
      deadlock);
    - and session 53's level 2 of tp3_rounds chosen by every warp (tp3_rounds_warps, MLOPS_SAMPLE_TP3_WARPS; the
      staged tp3 / wide forms; off: slower in GPU runs 247 / 248): the chosen bin one low fails 90 checks, the mass
      above it not carried into the finish 18, and a bin of more than 32 weighted elements finished by the warp (its
      first 32 taken) 8;
    - and session 53's tk_top_p_warp rule split among every warp (tk_top_p_split, MLOPS_SAMPLE_TK_TOPP_SPLIT, on by
      default since GPU run 249; the earlier-forms build below takes warp 0's, 0): a key's own weight counted above it
      (>= for >) fails 24 checks, each warp's entries after its first dropped 48;
    - and mask_draw over every near bit (MLOPS_SAMPLE_MASK_DRAW_KEPT=0, the form before session 54; the default build
      draws over list_near's bits at or above the crossing bin: taking only the bins above it fails 52 checks);
    - and session 54's mask_draw words zeroed before list_near (MLOPS_SAMPLE_MASK_DRAW_PREZERO, prepared, off by
      default): trusting the words after the generic rounds fails 4 checks (the "near-ties under 20 at 1.1" row, whose
      rounds stop at level 1; not caught with MLOPS_SAMPLE_TP3_LEVEL1, whose tp3_rounds takes level 1);
    - and session 56's three prepared forms (their mutants measured on the default build with the macro alone): the
      near bins in sixteenths of an octave (MLOPS_SAMPLE_NEAR_FINE=2; the prefix shifted one bit more fails 60 checks),
      the walk by a warp (MLOPS_SAMPLE_WARP_WALK: the running sum taken from lane 0's thread instead of the chunk's
      holder fails 822), and the pushed exchanges (MLOPS_SAMPLE_PUSH_X=15: a total pushed into the receiver's own place
      instead of the sender's fails 1 173; a max, or the near bins, pushed so deadlock; the pushed gather losing
      entries fails 14)."""
    _build_and_run(tmp_path, "sample_kernel_on_host", "sample_host.cpp", 7754,
                   ("MLOPS_SAMPLE_GSL_NIBBLES=1", "MLOPS_SAMPLE_PENALTY_TABLE=1", "MLOPS_SAMPLE_PENALTY_SLOT_BITS=7",
                    "MLOPS_SAMPLE_PENALTY_PREFETCH=1", "MLOPS_SAMPLE_TK_WARPS_GATHER=2", "MLOPS_SAMPLE_TK_FINISH2=1",
                    "MLOPS_SAMPLE_TK_TOPP_WARP=1", "MLOPS_SAMPLE_TK_TOPP_DRAW=1", "MLOPS_SAMPLE_TK_WINDOW_GUESS=1",
                    "MLOPS_SAMPLE_TP3_WARPS=1", "MLOPS_SAMPLE_TK_TOPP_SPLIT=1", "MLOPS_SAMPLE_MASK_DRAW_KEPT=0",
                    "MLOPS_SAMPLE_MASK_DRAW_PREZERO=1", "MLOPS_SAMPLE_NEAR_FINE=2", "MLOPS_SAMPLE_WARP_WALK=1",
                    "MLOPS_SAMPLE_PUSH_X=15"))


def test_sampler_earlier_forms_on_host_equal_host_emulation(tmp_path):
    """The forms before session 37's list_near and bin_first (sample_cluster_wide_top_p.cuh: MLOPS_SAMPLE_NEAR_MASK,
    MLOPS_SAMPLE_BIN_FIRST, on by default since GPU run 202) and before session 42's shared-memory penalty count
    (MLOPS_SAMPLE_PENALTY_TABLE, on since GPU run 213; the global workspace's count, which histories over 1 536 tokens
    still take): the same runner with them off, so the timeline probes' "old" sides (built with -D...=0) stay
    checked. The first build, with the workspace's count, also checks the early stage's reload of a slice the cluster
    may have penalized (MLOPS_SAMPLE_EARLY_STAGE, on since GPU runs 220 / 221; the reload dropped: 47 failures). The
    second: list_near + bin_first without the near codes, the table without the prefetch (MLOPS_SAMPLE_GSL_NIBBLES,
    MLOPS_SAMPLE_PENALTY_PREFETCH, on since GPU run 216), the seed loaded after the last cluster barrier
    (MLOPS_SAMPLE_EARLY_DRAW, on since runs 218 / 219), the staged slice loaded after the configuration's reads, and the
    wide forms' generic rounds and lean draw (MLOPS_SAMPLE_WIDE_TP3, MLOPS_SAMPLE_WIDE_MASK_DRAW, on since GPU runs 224 -
    226), the strided near pass's every trip bounded (MLOPS_SAMPLE_WIDE_LEAN, on since GPU run 237) and the tk forms'
    fused first round from the 256 bins' counts (MLOPS_SAMPLE_TK_COUNT_WINDOW, session 48; its window of 32 bins is
    the default build's: a remaining count one off there fails 70 checks, a bin taken as done wrongly 49). The first
    build also takes the listing by keys (MLOPS_SAMPLE_LIST_FLOAT, session 48), the form before the float compare, and
    session 49's gather pushed by the listing CTAs (MLOPS_SAMPLE_TK_PUSH: on by default in clusters of 8 and 16, which
    the runner does not build; here in every cluster, with both listings): every CTA's part laid at g_off[0] fails 49
    checks, the crossing bin's counts left out of the layout aborts the runner (a CTA's listing against its count).
    The second build also takes warp 0's top-p after a gathered top-k (MLOPS_SAMPLE_TK_TOPP_SPLIT=0: tk_top_p_warp, the
    default before GPU run 249) and the near bins on the wide digit alone (MLOPS_SAMPLE_NEAR_FINE=0, the form before
    GPU run 257)."""
    _build_and_run(tmp_path, "sample_kernel_on_host", "sample_host.cpp", 7754,
                   ("MLOPS_SAMPLE_NEAR_MASK=0", "MLOPS_SAMPLE_BIN_FIRST=0", "MLOPS_SAMPLE_PENALTY_TABLE=0",
                    "MLOPS_SAMPLE_LIST_FLOAT=0", "MLOPS_SAMPLE_TK_PUSH=1"))
    _build_and_run(tmp_path, "sample_kernel_on_host", "sample_host.cpp", 7754,
                   ("MLOPS_SAMPLE_GSL_NIBBLES=0", "MLOPS_SAMPLE_PENALTY_PREFETCH=0", "MLOPS_SAMPLE_EARLY_DRAW=0",
                    "MLOPS_SAMPLE_EARLY_STAGE=0", "MLOPS_SAMPLE_WIDE_TP3=0", "MLOPS_SAMPLE_WIDE_MASK_DRAW=0",
                    "MLOPS_SAMPLE_WIDE_LEAN=0", "MLOPS_SAMPLE_TK_COUNT_WINDOW=0", "MLOPS_SAMPLE_TK_TOPP_SPLIT=0",
                    "MLOPS_SAMPLE_NEAR_FINE=0"))


def test_sampler_session44_forms_on_host_equal_host_emulation(tmp_path):
    """Session 44's forms together (list_draw on by default since GPU run 245; the staged tk listing on since GPU run
    229 in clusters of 16 alone, which the runner does not build: here in every cluster; row_draw on since GPU runs 218
    / 219):
    - the draw from the gathered list (sample_cluster_draw.cuh: list_draw, MLOPS_SAMPLE_LIST_DRAW): a top-k row of a
      staged tk kernel whose gathered list holds every kept element draws from the list, each CTA placing the kept
      elements in index order by its own list's slice indices (session 51's form, no remote load, so here with session
      49's gather pushed by the listing CTAs, MLOPS_SAMPLE_TK_PUSH, in every cluster). The lower and higher CTAs'
      parts swapped is caught (64 failures), the token one index off (48);
    - the tk listing by build_candidates_staged (sample_cluster_slice.cuh: tk_list, MLOPS_SAMPLE_TK_STAGED_LIST):
      listing only the upper half of the bound's bin is caught (102 failures);
    - the draw bits computed in the max phase (sample_cluster_draw.cuh: row_draw, MLOPS_SAMPLE_EARLY_DRAW): the bits
      of the next step stored there are caught (1 034 failures; in the head's-statistics branch alone, 88);
    - with session 46's second level of tp3_rounds (sample_cluster_list_rounds.cuh: MLOPS_SAMPLE_TP3_LEVEL1, off since
      GPU run 226): level 1 weighed on level 2's bits is caught (20 failures);
    - with session 47's staged near pass by 16-byte loads (sample_cluster_shared.cuh: MLOPS_SAMPLE_WIDE_QUADS, here 4):
      mask_draw reading the quad mask as the strided one's is caught (46 failures);
    - with session 47's round counts summed by 16-byte remote loads (sample_cluster_shared.cuh: cluster_counts256,
      MLOPS_SAMPLE_COUNT_QUADS; the runner's clusters of 3 CTAs take its padded lane groups): two bins of a quad
      swapped (105 failures) or one shuffle step dropped (134) are caught (both not kept: GPU run 230).
    Session 47's whole trips of the strided near pass (MLOPS_SAMPLE_WIDE_LEAN) are on by default since GPU run 237, so the
    first runner checks them: a trip taken as whole with its last position past the slice fails 95 checks. Session 48's
    listing by a float compare (MLOPS_SAMPLE_LIST_FLOAT) is on by default, so the first runner checks it too: the
    compare 0.25 high fails 60 checks (the runner's check_key_float_compare proves the compare against every bin
    boundary)."""
    _build_and_run(tmp_path, "sample_kernel_on_host", "sample_host.cpp", 7754,
                   ("MLOPS_SAMPLE_LIST_DRAW=1", "MLOPS_SAMPLE_TK_STAGED_LIST=1", "MLOPS_SAMPLE_EARLY_DRAW=1",
                    "MLOPS_SAMPLE_TP3_LEVEL1=1", "MLOPS_SAMPLE_WIDE_QUADS=4", "MLOPS_SAMPLE_COUNT_QUADS=1",
                    "MLOPS_SAMPLE_TK_PUSH=1"))


def test_sampler_global_slice_passes_before_on_host_equal_host_emulation(tmp_path):
    """The global-slice forms' passes before session 40 (sample_cluster_wide_top_p.cuh: MLOPS_SAMPLE_GSL_QUADS,
    MLOPS_SAMPLE_GSL_LEAN; sample_cluster_draw.cuh: MLOPS_SAMPLE_GSL_DRAW_LOADS; on by default since GPU run 203): the
    strided near pass and the one-load draw, which the default build no longer compiles, so the probes' "before" side
    stays checked. The default build's quad mask is checked by the runner above: a wrong bit -> element map of it, the
    draw's two chunks of a trip swapped and the near mask's bits dropped in the LEAN pass are each caught (84, 30 and 68
    failures at U / D = 2, when it was written). With them, list_near's K = 4 loads a lane a round
    (MLOPS_SAMPLE_GSL_LIST_LOADS, prepared, off by default): a listed index taken from the wrong one of the K is caught
    (46 failures)."""
    _build_and_run(tmp_path, "sample_kernel_on_host", "sample_host.cpp", 7754,
                   ("MLOPS_SAMPLE_GSL_QUADS=0", "MLOPS_SAMPLE_GSL_DRAW_LOADS=1", "MLOPS_SAMPLE_GSL_LEAN=0",
                    "MLOPS_SAMPLE_GSL_LIST_LOADS=4"))
