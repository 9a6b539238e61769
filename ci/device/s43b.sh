#!/bin/bash
# Session 43, the last ~300 s of the budget: the default build's wheel (8ede06f: the near codes and the penalty prefetch
# on together, first time on a GPU) from $CARRY/new, its probe stp_new at B = 64 and 1, the bench once (B = 1, 8, 48,
# 64; the five modes; before the tests: the GPU to itself), test_vocab_sampler_gpu.py in 6 shards, memcheck of `sanitizer_subset and (tp3g or penalt)` and
# racecheck of `sanitizer_subset and tp3g and (penalt or near_codes)`, to END s (150 unless set).
# `CARRY=.carry/s43a bash ci/device/s43b.sh`; results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x ...`: the shell logic.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/s43b-r/v; rm -rf $R; mkdir -p $R $OUT; source ci/device/lib.sh; dry_stubs
C=${CARRY:-.carry/s43a} F=packages/vocab/tests/test_vocab_sampler_gpu.py
rm -rf /tmp/j-new; inst "$C/new/mlops_vocab-*.whl" /tmp/j-new; echo "install rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
exe=$C/stp_new; [ -n "$DRY" ] && exe="echo DRY $exe"
timeout 30 $exe 64 1 > $R/timeline-new-1.log 2>&1; summ timeline-new-1 $?
mkdir -p $R/bench-new-1
MLOPS_BENCH_OUT=$R/bench-new-1 PYTHONPATH=/tmp/j-new:$PWD/tools/testing timeout 60 python3 packages/vocab/bench/bench_vocab.py \
  --only sampling --quick --batches 1,8,48,64 \
  --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 > $R/bench-new-1.log 2>&1
summ bench-new-1 $?
L=$((${END:-150} - SECONDS - 20)); [ $L -lt 60 ] && L=60
fshards vocab-sampler $F /tmp/j-new 6 $L
SAN=memcheck ksanitize vocab /tmp/j-new $L $F "sanitizer_subset and (tp3g or penalt)"
SAN=racecheck ksanitize vocab /tmp/j-new $L $F "sanitizer_subset and tp3g and (penalt or near_codes)"
collect
(cd $R/.. && tar czf $OUT/v.tgz v)
cat $R/gpu.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt
