#!/bin/bash
# Session 9, device run 53 (one H200): the wide top-p change of 1d9b6f4 (bins only the elements within 2^-16
# of the max's weight first) timed beside 71896f9 (.carry/before) in the same call, alone; then racecheck
# and memcheck of the wide / lean sanitizer subset; then both vocab GPU files at once (two processes).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R
source ci/device/lib.sh
git rev-parse HEAD > $R/commit.txt 2>/dev/null
vocab_ab 120
export PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
vocab_sanitize 120
left=$((575 - SECONDS))
timeout $left $P packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-sampler.log 2>&1 &
timeout $left $P packages/vocab/tests/test_vocab_gpu.py > $R/vocab-gpu.log 2>&1 &
wait %1; summ vocab-sampler $?
wait %2; summ vocab-gpu $?
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
