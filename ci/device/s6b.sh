#!/bin/bash
# Session 6, device run 31 (one H200): vocab round A (cluster8_wide / cluster16_wide sampler candidates,
# commit 5fd3bc8) and the positional decode probe. Phases in sequence (benches alone on the machine):
# 1. the vocab GPU test files (every sampler variant bit for bit), racecheck + memcheck of the wide
#    variants' sanitizer subset; 2. the sampling bench (planned rows + lean / gather / late / wide);
# 3. ci/device/rope_probe.py: decode T = 1 ... 32 beside the empty and one-element kernels, dec / early2
#    / stage4 from the cache, random then sorted positions (why T = 32 reads 2.5-2.7 us over the empty
#    kernel by events in runs 29 / 30 while its kernel is 2.11 us).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
for n in vocab positional; do
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/m .carry/gpu/sm90/mlops_$n-*.whl
done
export PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
timeout 150 $P packages/vocab/tests/test_vocab_gpu.py packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-sm90.log 2>&1; s vocab-sm90 $?
for tool in racecheck memcheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $P -k "sanitizer_subset and wide" packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1; s vocab-$tool $?
done
left=$((520 - SECONDS)); echo "bench phase: $left s left" >> $R/summary.txt
timeout $((left - 100)) python3 packages/vocab/bench/bench_vocab.py --only sampling --variants cluster16_lean,cluster16_gather,cluster16_late,cluster16_wide,cluster8_lean,cluster8_gather,cluster8_late,cluster8_wide > $R/vocab-bench.log 2>&1; s vocab-bench $?
left=$((545 - SECONDS))
timeout $((left * 2 / 3)) python3 ci/device/rope_probe.py --tokens 1,2,4,8,16,32 --variants dec,early2,stage4 --blocks 2 > $R/probe-decode.log 2>&1; echo "probe-decode rc=$?" >> $R/summary.txt
timeout $((550 - SECONDS)) python3 ci/device/rope_probe.py --tokens 32 --variants dec --positions arange > $R/probe-arange.log 2>&1; echo "probe-arange rc=$?" >> $R/summary.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
