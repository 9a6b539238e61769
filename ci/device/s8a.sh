#!/bin/bash
# Session 8, device run 41 (one H200): the first GPU run of the digits P V form's variant mma_pv+coarse_imma
# (da682e7). (1) A smoke test: mma_pv against the host emulation on one shape (exit early if it fails).
# (2) Alone: bench_attention --targets (B1 L16K, B8 L128K, random and peaked q) for the chains planner's pick
# imma_occ+coarse_imma beside mma_pv, events and CUPTI kernel time. (3) The attention GPU file under sm_90
# (every variant, 6 shards) and mma_pv's tests under compute_80 / compute_61 PTX (JIT), bounded by SECONDS.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
mma_setup
if mma_smoke; then
  mma_bench
fi
mma_tests 6 560
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt; grep -h "mma_pv\|imma_occ\|sdpa" r/bench.log | head -40; rm -rf r
