#!/bin/bash
# Session 4, device run 23 (nvidia-h200-x2, warm after run 22), round B part 2: vocab.
# GPU 0: the vocab GPU tests (lm_head incl. the stream / PDL candidates, samplers incl. lean / gather)
# + racecheck and memcheck of the lean / gather cluster samplers; GPU 1: the lm_head bench, the
# lm_head measurement-gap diagnostics and the sampling bench.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
T=/tmp/m; S=$PWD/.carry/snapA; export PYTHONPATH=$T:$S/tools/testing
cat $S/COMMIT > $R/commit.txt
[ -d $T/mlops/vocab ] || python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
cd $S
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
P="python3 -m pytest -q --tb=short -p no:cacheprovider --durations=5"
( export CUDA_VISIBLE_DEVICES=0
  ( timeout 420 $P packages/vocab/tests/test_vocab_sampler_gpu.py > $R/voc-samp.log 2>&1; s voc-samp $? ) &
  ( timeout 530 $P packages/vocab/tests/test_vocab_gpu.py packages/vocab/tests/test_vocab_c_api.py > $R/voc-gpu.log 2>&1; s voc-gpu $? ) &
  ( timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k "sanitizer_subset and (lean or gather or late)" packages/vocab/tests/test_vocab_sampler_gpu.py > $R/race-voc.log 2>&1; s race-voc $?
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $P -k "sanitizer_subset and (lean or gather or late)" packages/vocab/tests/test_vocab_sampler_gpu.py > $R/mem-voc.log 2>&1; s mem-voc $?
    timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k "sanitizer_subset and (stream8_rr or stream32_rr or stream16_deep)" packages/vocab/tests/test_vocab_gpu.py > $R/race-lm.log 2>&1; s race-lm $? ) &
  wait ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 150 python3 packages/vocab/bench/bench_vocab.py --only lm_head > $R/lm-bench.log 2>&1; s lm-bench $?
  timeout 80 python3 packages/vocab/bench/bench_vocab.py --only lm_head_gap > $R/lm-gap.log 2>&1; s lm-gap $?
  timeout 160 python3 packages/vocab/bench/bench_vocab.py --only sampling > $R/samp-bench.log 2>&1; s samp-bench $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
