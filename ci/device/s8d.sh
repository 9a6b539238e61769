#!/bin/bash
# Session 8, device run 44 (one H200): mma_pv+coarse_imma with the l / V-min sums as lane sums + a butterfly
# (the digits form's definition changed with it; no chains over 32 tokens on 4 lanes). (1) smoke; (2) alone:
# bench_attention --targets, imma_occ beside mma_pv; (3) compute-sanitizer racecheck and memcheck of mma_pv
# alone (ci/device/fbla_sanitize.py: the sanitizer-subset shapes and a second pass of heads); (4) the attention
# GPU file under sm_90 (every variant) and mma_pv's tests under compute_80 / compute_61 PTX.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
mma_setup
if mma_smoke; then
  mma_bench
fi
mma_sanitize &
mma_tests 5 540
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt
mma_rows
rm -rf r
