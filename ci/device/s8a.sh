#!/bin/bash
# Session 8, device run 41 (one H200): the first GPU run of the digits P V form's variant mma_pv+coarse_imma
# (da682e7). (1) A smoke test: mma_pv against the host emulation on one shape (exit early if it fails).
# (2) Alone: bench_attention --targets (B1 L16K, B8 L128K, random and peaked q) for the chains planner's pick
# imma_occ+coarse_imma beside mma_pv, events and CUPTI kernel time. (3) The attention GPU file under sm_90
# (every variant, 6 shards) and mma_pv's tests under compute_80 / compute_61 PTX (JIT), bounded by SECONDS.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
for t in sm90 c80 c61; do inst ".carry/gpu/$t/mlops_attention-*.whl" /tmp/$t-attention; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
TT=$PWD/tools/testing
PYTHONPATH=/tmp/sm90-attention:$TT timeout 120 python3 -m pytest -q --tb=short -p no:cacheprovider \
  packages/attention/tests/test_attention_gpu.py -k "mma_pv and 3+3 and 128 and 4" > $R/smoke.log 2>&1
echo "smoke rc=$? $(tail -1 $R/smoke.log | cut -c1-150) at ${SECONDS}s" >> $R/phases.txt
if grep -q " passed" $R/smoke.log && ! grep -q "failed" $R/smoke.log; then
  PYTHONPATH=/tmp/sm90-attention:$TT timeout 200 python3 packages/attention/bench/bench_attention.py --targets \
    --variants imma_occ+coarse_imma,mma_pv+coarse_imma --kernel-time > $R/bench.log 2>&1
  echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
fi
L=$((560 - SECONDS)); [ $L -gt 300 ] && L=300
shards sm90 attention /tmp/sm90-attention 6 $L
shards c80 attention /tmp/c80-attention 3 $L -k mma_pv
shards c61 attention /tmp/c61-attention 3 $L -k mma_pv
wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt; grep -h "mma_pv\|imma_occ\|sdpa" r/bench.log | head -40; rm -rf r
