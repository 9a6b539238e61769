#!/bin/bash
# Session 12, attention (issue 6): the mma_pv4 variants (54.5 KB of shared memory a CTA at D 128: 4 CTAs an SM, so
# B1 L16K's 520 items are one round) against mma_pv+coarse_imma, on one H200. Wheels: .carry/s12attn/sm90.
# (1) smoke: the new variants' GPU tests at 3+3 D 128 G 4; (2) when it passed, bench_attention --targets with
# mma_pv / mma_pv4 / mma_pv4w (CUPTI kernel times); (3) the GPU tests of the mma_pv variants (-k mma_pv) on sm_90 in
# 4 shards; (4) racecheck of both new variants (ci/device/s12a_sanitize.py). Everything under $OUT/r.tgz.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
inst ".carry/s12attn/sm90/mlops_attention-*.whl" /tmp/sm90-attention
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
P="PYTHONPATH=/tmp/sm90-attention:$PWD/tools/testing"
env ${P} timeout 100 python3 -m pytest -q --tb=short -p no:cacheprovider packages/attention/tests/test_attention_gpu.py \
  -k "mma_pv4 and 3+3 and 128 and 4" > $R/smoke.log 2>&1
echo "smoke rc=$? $(tail -1 $R/smoke.log | cut -c1-150) at ${SECONDS}s" >> $R/phases.txt
if grep -q " passed" $R/smoke.log && ! grep -q "failed" $R/smoke.log; then
  MLOPS_BENCH_OUT=$R/bench env ${P} timeout ${BENCH_S:-170} python3 packages/attention/bench/bench_attention.py \
    --targets --variants mma_pv+coarse_imma,mma_pv4+coarse_imma,mma_pv4w+coarse_imma --kernel-time > $R/bench.log 2>&1
  echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
fi
L=$((${TESTS_END:-330} - SECONDS)); [ $L -gt 200 ] && L=200; [ $L -lt 30 ] && L=30
shards sm90 attention /tmp/sm90-attention 4 $L -k mma_pv
wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
PYTHONPATH=/tmp/sm90-attention timeout ${SAN_S:-60} compute-sanitizer --tool racecheck --error-exitcode 9 \
  python3 ci/device/s12a_sanitize.py > $R/sanitizer-racecheck.log 2>&1
echo "sanitizer racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|failed' $R/sanitizer-racecheck.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/phases.txt r/tests-sorted.txt && grep -h "fbla\|sdpa" r/bench.log | tail -40; rm -rf r
