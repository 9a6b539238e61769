#!/bin/bash
# Session 3, device run 18 (nvidia-h200-x2), the session's last: round C and the changes since run 17
# (norm planner -> lean row kernels, positional test fix + round C, attention imma_occ variant).
# GPU 0: the GPU tests of norm, positional, attention + racecheck of the staged cluster samplers and
# the IMMA decode; GPU 1: the norm, positional and attention benches.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
T=/tmp/m; export PYTHONPATH=$T:$PWD/tools/testing
git log --oneline -1 > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
P="python3 -m pytest -q --tb=short -p no:cacheprovider --durations=5"
( export CUDA_VISIBLE_DEVICES=0
  ( timeout 300 $P packages/norm/tests > $R/norm-tests.log 2>&1; s norm-tests $? ) &
  ( timeout 300 $P packages/positional/tests/test_positional_gpu.py > $R/pos-gpu.log 2>&1; s pos-gpu $? ) &
  ( timeout 300 $P packages/attention/tests/test_attention_gpu.py > $R/att-gpu.log 2>&1; s att-gpu $? ) &
  ( timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k "sanitizer_subset and (smem or imma)" packages/vocab/tests/test_vocab_sampler_gpu.py packages/attention/tests/test_attention_gpu.py > $R/racecheck.log 2>&1; s racecheck $? ) &
  wait ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 110 python3 packages/norm/bench/bench_norm.py --variants --shapes 16384x4096,2048x4096,16384x2048 > $R/norm-bench.log 2>&1; s norm-bench $?
  timeout 160 python3 packages/positional/bench/bench_positional.py --variants > $R/pos-bench.log 2>&1; s pos-bench $?
  timeout 90 python3 packages/attention/bench/bench_attention.py --targets --variants warps+coarse_warps,imma_occ+coarse_imma > $R/att-bench.log 2>&1; s att-bench $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
