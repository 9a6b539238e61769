#!/bin/bash
# Session 9, device run 52 (one H200): the sampler change of 71896f9 (cheaper staging measure, sparse draw
# exps, 32-bit candidate lists) timed in the same call beside the wheel before it (46d7e06, .carry/before),
# then racecheck / memcheck of the wide / lean sanitizer subset and the vocab GPU tests on the new wheel.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R
source ci/device/lib.sh
git rev-parse HEAD > $R/commit.txt 2>/dev/null
vocab_ab 170
export PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
vocab_sanitize 60
timeout $((560 - SECONDS)) $P packages/vocab/tests/test_vocab_sampler_gpu.py packages/vocab/tests/test_vocab_gpu.py > $R/vocab-sm90.log 2>&1; summ vocab-sm90 $?
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
