#!/bin/bash
# Session 9, device run 53 (one H200): the wide top-p change of 1d9b6f4 (bins only the elements within 2^-16
# of the max's weight first) timed beside 71896f9 (.carry/before) in the same call, alone; then racecheck
# and memcheck of the wide / lean sanitizer subset; then both vocab GPU files at once (two processes).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench-before $R/bench-new
git rev-parse HEAD > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/m .carry/gpu/sm90/mlops_vocab-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/b .carry/before/mlops_vocab-*.whl
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200) [${SECONDS}s]" >> $R/summary.txt; }
V=cluster16_wide,cluster16_gather,cluster8_wide,cluster8_lean
MLOPS_BENCH_OUT=$R/bench-before PYTHONPATH=/tmp/b:$PWD/tools/testing timeout 120 python3 packages/vocab/bench/bench_vocab.py --only sampling --variants $V > $R/bench-before.log 2>&1; s bench-before $?
MLOPS_BENCH_OUT=$R/bench-new PYTHONPATH=/tmp/m:$PWD/tools/testing timeout 120 python3 packages/vocab/bench/bench_vocab.py --only sampling --variants $V > $R/bench-new.log 2>&1; s bench-new $?
export PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
for tool in racecheck memcheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $P -k "sanitizer_subset and (wide or lean)" packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1; s vocab-$tool $?
done
left=$((575 - SECONDS))
timeout $left $P packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-sampler.log 2>&1 &
timeout $left $P packages/vocab/tests/test_vocab_gpu.py > $R/vocab-gpu.log 2>&1 &
wait %1; s vocab-sampler $?
wait %2; s vocab-gpu $?
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
