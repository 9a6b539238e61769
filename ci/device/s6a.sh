#!/bin/bash
# Session 6, device run 30 (one H200): issue 3's planner change (decx5 from the cache past decode, up to
# dec's wave bound; run 29) checked and measured. 1. the positional test directory on sm_90 (the
# planner test and every GPU test, the planned kernel now decx5 between decode and 10 waves). 2. alone
# on the machine: ci/device/rope_probe.py, decode T = 1 / 32 in 3 blocks, then T = 256 / 1024 / 4096
# with the dec variants beside early2x5. Wheel: .carry/gpu/sm90 positional of this commit.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
git rev-parse HEAD > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/m .carry/gpu/sm90/mlops_positional-*.whl
export PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90
timeout 240 python3 -m pytest -q --tb=short -p no:cacheprovider packages/positional/tests > $R/pos-sm90.log 2>&1
echo "pos-sm90 rc=$? $(grep -E 'passed|failed|error' $R/pos-sm90.log | tail -1)" >> $R/summary.txt
timeout 120 python3 ci/device/rope_probe.py --tokens 1,32 --blocks 3 > $R/probe-decode.log 2>&1; echo "probe-decode rc=$?" >> $R/summary.txt
timeout 150 python3 ci/device/rope_probe.py --tokens 256,1024,4096 --variants decx5,dec,early2x5 --blocks 2 > $R/probe-mid.log 2>&1; echo "probe-mid rc=$?" >> $R/summary.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
