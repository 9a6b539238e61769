#!/bin/bash
# Device run 9 (mid-session check of the new kernels): attention GPU suite + quick bench, vocab
# lm_head (pipe variant) tests + bench, optimizers GPU file (8-bit rework), norm python overhead.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_BENCH_OUT=$OUT MLOPS_ARCH_TAG=sm90
T=/tmp/m; python3 -m pip install -q --no-index --no-deps --no-compile --target $T .carry/mid/*.whl
cp packages/norm/python/mlops/norm/_ops.py $T/mlops/norm/   # the out= fast path (norm wheel from run 6)
export PYTHONPATH=$T:$PWD/.carry/mid/snap/tools/testing
cd .carry/mid/snap   # the tests and benches of the commit the wheels were built from
s() { echo "$1 rc=$2 $(tail -1 $OUT/$1.log | cut -c1-150)" >> $OUT/summary.txt; }
timeout 120 python3 -m pytest -v --tb=short -p no:cacheprovider packages/attention/tests/test_attention_gpu.py > $OUT/att-gpu.log 2>&1; s att-gpu $?
timeout 60 python3 -m pytest -v --tb=short -p no:cacheprovider packages/optimizers/tests/test_optimizers_gpu.py > $OUT/opt-gpu.log 2>&1; s opt-gpu $?
timeout 60 python3 -m pytest -v --tb=short -p no:cacheprovider -k "lm_head" packages/vocab/tests/test_vocab_gpu.py > $OUT/voc-gpu.log 2>&1; s voc-gpu $?
timeout 70 python3 packages/attention/bench/bench_attention.py --quick --peaked > $OUT/att-bench.log 2>&1; s att-bench $?
timeout 60 python3 packages/vocab/bench/bench_vocab.py --only lm_head --quick > $OUT/voc-bench.log 2>&1; s voc-bench $?
(cd packages/norm/bench && timeout 20 python3 -c "
import bench_norm; from mlops_bench import Bench; b=Bench('norm'); b.header(); bench_norm.overhead(b)") > $OUT/norm-overhead.log 2>&1; s norm-overhead $?
timeout 60 python3 packages/optimizers/bench/bench_optimizers.py --case 8bit > $OUT/opt-bench.log 2>&1; s opt-bench $?
cat $OUT/summary.txt
