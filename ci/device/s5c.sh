#!/bin/bash
# Session 5, device run 27 (nvidia-h200-x2), round A: norm (r16lx2e / r16lx4we: the cheaper E2M1 / FP8
# encoders; C.run_rms fast path) and positional (dec / dec2 / dec4: no CTA barrier, a warp a token).
# First, on a quiet host, the norm Python-overhead row. GPU 0: the norm and positional test suites
# (GPU files, C API, NVRTC), then the positional bench of the candidates beside the planner's picks;
# GPU 1: the norm bench (2048x4096 / 16384x4096, candidates + CUPTI kernel times), then racecheck of
# the positional sanitizer subset (dec's warp-shared sincos row). Tests run from .carry/snapA.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
T=/tmp/m; S=$PWD/.carry/snapA; export PYTHONPATH=$T:$S/tools/testing
cat $S/COMMIT > $R/commit.txt
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/mlops_{norm,positional}-*.whl
cd $S
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
CUDA_VISIBLE_DEVICES=1 timeout 60 python3 -c "
import sys; sys.path.insert(0, 'packages/norm/bench'); import bench_norm as m
from mlops_bench import Bench; b = Bench('norm'); b.header(); m.overhead(b)" > $R/norm-overhead.log 2>&1; s norm-overhead $?
P="python3 -m pytest -q --tb=short -p no:cacheprovider --durations=5"
( export CUDA_VISIBLE_DEVICES=0
  ( timeout 330 $P packages/norm/tests > $R/norm-tests.log 2>&1; s norm-tests $? ) &
  ( timeout 330 $P packages/positional/tests > $R/pos-tests.log 2>&1; s pos-tests $? ) &
  wait
  timeout 230 python3 packages/positional/bench/bench_positional.py --variants \
    --variant-names early2,early2x5,stage4,dec,dec2,dec4 > $R/pos-bench.log 2>&1; s pos-bench $? ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 300 python3 packages/norm/bench/bench_norm.py --variants --shapes 2048x4096,16384x4096 \
    --variant-names r16lx,r16lx4,r16lx2,r16lx4w,r16lx2e,r16lx4we --kernel-time r16lx2,r16lx4w,r16lx2e,r16lx4we > $R/norm-bench.log 2>&1; s norm-bench $?
  timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 $P -k sanitizer_subset packages/positional/tests/test_positional_gpu.py > $R/race-pos.log 2>&1; s race-pos $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
