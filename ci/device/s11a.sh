#!/bin/bash
# Session 11, device run 60 (one H200). norm at 1ac28f6: the INT8 clean-warp codes reverted (INT8 as d3e9b66's),
# the packed FP8 dynamic row amax kept, the planner's new FP8 dynamic picks (r16lx2e few rows, r16lx4we many).
# (1) alone: bench_norm's planned rows and the lx / lx2 variants (CUPTI kernel times) at 2048x4096 and 16384x4096
#     (run 59's "before" and 4a155a8 rows are in docs/norm.md; its raw files went with the machine);
# (2) the lean tests (-k lean) on sm_90 in 4 shards.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench-new; source ci/device/lib.sh
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/m
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
V=r16lx2,r16lx4w,r16lx4wb,r16lx2f,r16lx4wf
MLOPS_BENCH_OUT=$R/bench-new PYTHONPATH=/tmp/m:$PWD/tools/testing timeout 150 python3 packages/norm/bench/bench_norm.py \
  --shapes 2048x4096,16384x4096 --variants --variant-names $V --kernel-time $V > $R/bench-new.log 2>&1
summ bench-new $?
L=$((380 - SECONDS)); [ $L -gt 240 ] && L=240
shards sm90 norm /tmp/m 4 $L -k lean
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r
