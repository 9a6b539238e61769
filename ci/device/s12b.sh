#!/bin/bash
# Session 12, attention, call 2 (one H200): the planner for pv digits taking mma_pv4's refine where that makes the
# items one round (fbla_launch.cu). Wheels: .carry/s12attn/sm90. (1) bench_attention --targets with the planner's
# pick ("planner"), mma_pv and mma_pv4 (events); (2) the mma_pv / planner GPU tests in 4 shards, then the whole attention GPU file on sm_90 in 6 shards
# with the time left (a shard cut by its limit says rc=124).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
inst ".carry/s12attn/sm90/mlops_attention-*.whl" /tmp/sm90-attention
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/sm90-attention:$PWD/tools/testing timeout ${BENCH_S:-40} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner,mma_pv+coarse_imma,mma_pv4+coarse_imma \
  > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
shards sm90k attention /tmp/sm90-attention 4 40 -k "mma_pv or planner"
wait; echo "mma_pv / planner tests done at ${SECONDS}s" >> $R/phases.txt
L=$((${TESTS_END:-90} - SECONDS)); [ $L -lt 20 ] && L=20
shards sm90 attention /tmp/sm90-attention 6 $L
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "FAILED\|Error" $R/sm90-attention-*.log | head -20 > $R/failures.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/phases.txt r/tests-sorted.txt r/failures.txt; rm -rf r
