#!/bin/bash
# Session 4, device run 22 (nvidia-h200-x2), round B part 1 (the planners from round A + round B candidates; read L2 flush): norm, positional, attention.
# First, on a quiet host, the norm Python-overhead row (it moves with host load: runs 14/17/18).
# GPU 0: the GPU tests of norm, positional, attention + racecheck of the new staged kernels
# (positional stage*, attention stage*); GPU 1: the norm, positional and attention benches.
# Tests run from .carry/snapA (the committed tree the wheels were built from).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
T=/tmp/m; S=$PWD/.carry/snapA; export PYTHONPATH=$T:$S/tools/testing
cat $S/COMMIT > $R/commit.txt
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
cd $S
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
CUDA_VISIBLE_DEVICES=1 timeout 60 python3 -c "
import sys; sys.path.insert(0, 'packages/norm/bench'); import bench_norm as m
from mlops_bench import Bench; b = Bench('norm'); b.header(); m.overhead(b)" > $R/norm-overhead.log 2>&1; s norm-overhead $?
P="python3 -m pytest -q --tb=short -p no:cacheprovider --durations=5"
( export CUDA_VISIBLE_DEVICES=0
  ( timeout 420 $P packages/norm/tests > $R/norm-tests.log 2>&1; s norm-tests $? ) &
  ( timeout 480 $P packages/positional/tests/test_positional_gpu.py packages/positional/tests/test_positional_nvrtc.py > $R/pos-gpu.log 2>&1; s pos-gpu $? ) &
  ( timeout 420 $P packages/attention/tests/test_attention_gpu.py > $R/att-gpu.log 2>&1; s att-gpu $? ) &
  ( timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k sanitizer_subset packages/positional/tests/test_positional_gpu.py > $R/race-pos.log 2>&1; s race-pos $?
    timeout 230 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k sanitizer_subset packages/attention/tests/test_attention_gpu.py > $R/race-att.log 2>&1; s race-att $?
    timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k "lean_row_variant and r16lx4w" packages/norm/tests/test_norm_gpu.py > $R/race-norm.log 2>&1; s race-norm $? ) &
  wait ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 150 python3 packages/norm/bench/bench_norm.py --variants --shapes 16384x4096,2048x4096,16384x2048 --kernel-time r16l4,r16lx2,r16lx4w,r16lw > $R/norm-bench.log 2>&1; s norm-bench $?
  timeout 200 python3 packages/positional/bench/bench_positional.py --variants > $R/pos-bench.log 2>&1; s pos-bench $?
  timeout 150 python3 packages/attention/bench/bench_attention.py --targets --kernel-time --variants warps+coarse_warps,imma_occ+coarse_imma,stage+coarse_imma,stage_bf+coarse_imma > $R/att-bench.log 2>&1; s att-bench $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
