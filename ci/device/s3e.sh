#!/bin/bash
# Session 3, device run 17 (nvidia-h200-x2), round B of the perf work (commit in $R/commit.txt).
# GPU 0: every GPU test file of norm, positional, attention, vocab at once + racecheck of the new
# vocab (early-stop cluster) and attention (IMMA) kernels, then the vocab sampling bench.
# GPU 1 alone: the norm, attention, lm_head and positional benches.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
T=/tmp/m; export PYTHONPATH=$T:$PWD/tools/testing
git log --oneline -1 > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
P="python3 -m pytest -q --tb=short -p no:cacheprovider --durations=5"
( export CUDA_VISIBLE_DEVICES=0
  ( timeout 330 $P packages/norm/tests > $R/norm-tests.log 2>&1; s norm-tests $? ) &
  ( timeout 330 $P packages/positional/tests/test_positional_gpu.py > $R/pos-gpu.log 2>&1; s pos-gpu $? ) &
  ( timeout 330 $P packages/attention/tests/test_attention_gpu.py > $R/att-gpu.log 2>&1; s att-gpu $? ) &
  ( timeout 330 $P packages/vocab/tests/test_vocab_sampler_gpu.py packages/vocab/tests/test_vocab_gpu.py packages/vocab/tests/test_vocab_compile.py > $R/voc-gpu.log 2>&1; s voc-gpu $? ) &
  ( timeout 330 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k "sanitizer_subset and (_es or imma)" packages/vocab/tests/test_vocab_sampler_gpu.py packages/attention/tests/test_attention_gpu.py > $R/racecheck.log 2>&1; s racecheck $? ) &
  wait
  timeout 150 python3 packages/vocab/bench/bench_vocab.py --only sampling --quick > $R/voc-bench-sample.log 2>&1; s voc-bench-sample $? ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 100 python3 packages/norm/bench/bench_norm.py --variants --shapes 16384x4096,2048x4096,1x4096,16384x8192,16384x2048 > $R/norm-bench.log 2>&1; s norm-bench $?
  timeout 130 python3 packages/attention/bench/bench_attention.py --targets > $R/att-bench.log 2>&1; s att-bench $?
  timeout 80 python3 packages/vocab/bench/bench_vocab.py --only lm_head --quick > $R/voc-bench-lm.log 2>&1; s voc-bench-lm $?
  timeout 150 python3 packages/positional/bench/bench_positional.py --variants > $R/pos-bench.log 2>&1; s pos-bench $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
