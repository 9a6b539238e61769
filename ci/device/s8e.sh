#!/bin/bash
# Session 8, device run 45 (one H200): mma_pv+coarse_imma with the P V code words from the e words, then the o
# words (no spills past 12 bytes; run 44 spilled 144). (1) smoke; (2) alone:
# bench_attention --targets, imma_occ beside mma_pv; (3) compute-sanitizer racecheck and memcheck of mma_pv
# alone (ci/device/fbla_sanitize.py: the sanitizer-subset shapes and a second pass of heads); (4) the attention
# GPU file under sm_90 (every variant) and mma_pv's tests under compute_80 / compute_61 PTX.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
mma_setup
if mma_smoke; then
  mma_bench
  mma_ncu
fi
mma_sanitize &
mma_tests 5 540
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt
grep -E "Duration|Issue Slots Busy|Executed Instructions  |Achieved Active Warps" r/details-b8.txt
mma_rows
rm -rf r
