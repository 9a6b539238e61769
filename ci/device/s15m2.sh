#!/bin/bash
# Session 15, GPU run 89 (one H200, <= 280 s): confirms the norm planner's few-rows change (f1b75f6). The sampler of
# bench_norm.py (planned calls, no --variants) over T in {1, 8, 128} x H in {2048, 4096, 8192} and 2048 / 16384 x 4096,
# before (3a5c619, .carry/s15n/new) and new (f1b75f6, .carry/s15m/new) in turn, twice; then the whole norm GPU file on
# the new wheel in 8 shards. Results under $OUT/r/m2.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/m2; mkdir -p $R; source ci/device/lib.sh
inst ".carry/s15n/new/mlops_norm-*.whl" /tmp/nb
inst ".carry/s15m/new/mlops_norm-*.whl" /tmp/nn
S=1x4096,8x4096,128x4096,1x2048,8x2048,128x2048,1x8192,8x8192,128x8192,2048x4096,16384x4096
for t in before:nb new:nn before:nb new:nn; do
  n=${t%%:*}-$SECONDS; mkdir -p $R/$n
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=/tmp/${t#*:}:$PWD/tools/testing timeout 40 python3 packages/norm/bench/bench_norm.py \
    --shapes $S > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
done
fshards norm packages/norm/tests/test_norm_gpu.py /tmp/nn 8 $((270 - SECONDS))
finish phases.txt
