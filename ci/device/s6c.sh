#!/bin/bash
# Session 6, device run 33 (one H200; run 32 was s6b's rerun: the probe and the vocab GPU files): the
# session's planner changes checked and measured. Wheels: .carry/gpu/sm90 positional + vocab of this commit.
# 1. the positional test directory (dec / decx5 now launch with no dynamic shared memory on the direct
#    cache path); the vocab sampler tests (CPU planner test, the planned variant per mode on the GPU:
#    the wide forms now planned for top-p rows without top-k);
# 2. alone: ci/device/rope_probe.py decode T = 1 / 4 / 32 (3 blocks) and T = 4096; the sampling bench's
#    planned rows (no --variants).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
for n in vocab positional; do  # one --target each: a second install into the same target skips mlops/
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/t-$n .carry/gpu/sm90/mlops_$n-*.whl
done
export PYTHONPATH=/tmp/t-vocab:/tmp/t-positional:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
timeout 200 $P packages/positional/tests > $R/pos-sm90.log 2>&1; s pos-sm90 $?
timeout 120 $P packages/vocab/tests/test_vocab_sampler.py packages/vocab/tests/test_vocab_sampler_gpu.py -k "plan" > $R/vocab-plan.log 2>&1; s vocab-plan $?
timeout 80 python3 ci/device/rope_probe.py --tokens 1,4,32 --blocks 3 > $R/probe-decode.log 2>&1; echo "probe-decode rc=$?" >> $R/summary.txt
timeout 40 python3 ci/device/rope_probe.py --tokens 4096 --variants decx5 > $R/probe-4096.log 2>&1; echo "probe-4096 rc=$?" >> $R/summary.txt
timeout $((560 - SECONDS)) python3 packages/vocab/bench/bench_vocab.py --only sampling > $R/vocab-bench.log 2>&1; s vocab-bench $?
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
