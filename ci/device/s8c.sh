#!/bin/bash
# Session 8, device run 43 (one H200): mma_pv+coarse_imma after run 42's profile (commit in docs/gpu-runs.md):
# code words from merged plane pairs, the slices' sums over the dead K planes (62 KB, 3 CTAs an SM, 80
# registers), conflict-free sum stores. (1) smoke; (2) alone: bench_attention --targets, imma_occ beside mma_pv;
# (3) ncu --set full of one refine_mma_kernel launch at B8 L16K (the same case as run 42); (4) the attention
# GPU file under sm_90 (every variant) and mma_pv's tests under compute_80 / compute_61 PTX.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
mma_setup
if mma_smoke; then
  mma_bench
  mma_ncu
  ncu -i $R/mma-b8.ncu-rep --page source --csv --print-source sass > $R/sass-b8.csv 2>&1
fi
mma_tests 6 560
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt
grep -E "Duration|Issue Slots Busy|Executed Instructions  |Achieved Active Warps|Registers Per" r/details-b8.txt
mma_rows
rm -rf r
