#!/bin/bash
# Session 9, device run 52 (one H200): the sampler change of 71896f9 (cheaper staging measure, sparse draw
# exps, 32-bit candidate lists) timed in the same call beside the wheel before it (46d7e06, .carry/before),
# then racecheck / memcheck of the wide / lean sanitizer subset and the vocab GPU tests on the new wheel.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench-before $R/bench-new
git rev-parse HEAD > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/m .carry/gpu/sm90/mlops_vocab-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/b .carry/before/mlops_vocab-*.whl
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
V=cluster16_wide,cluster16_gather,cluster8_wide,cluster8_lean
MLOPS_BENCH_OUT=$R/bench-before PYTHONPATH=/tmp/b:$PWD/tools/testing timeout 170 python3 packages/vocab/bench/bench_vocab.py --only sampling --variants $V > $R/bench-before.log 2>&1; s bench-before $?
MLOPS_BENCH_OUT=$R/bench-new PYTHONPATH=/tmp/m:$PWD/tools/testing timeout 170 python3 packages/vocab/bench/bench_vocab.py --only sampling --variants $V > $R/bench-new.log 2>&1; s bench-new $?
export PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
for tool in racecheck memcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $P -k "sanitizer_subset and (wide or lean)" packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1; s vocab-$tool $?
done
timeout $((560 - SECONDS)) $P packages/vocab/tests/test_vocab_sampler_gpu.py packages/vocab/tests/test_vocab_gpu.py > $R/vocab-sm90.log 2>&1; s vocab-sm90 $?
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
