#!/bin/bash
# Session 7, device run 35 (one H200): issue 3's decode question, then issue 7's first GPU run of CUDA
# 11.8 builds. (1) ci/device/rope_probe.py alone on the machine, eager rows beside the same rows
# replayed from CUDA graphs (--graph), with the bench's random positions over a 131072-row cache, over
# an 8192-row cache and sorted (0 ... T-1): which part of decode's event time is the launch, which the
# kernel, which the cache rows' addresses. (2) The GPU test files of attention and positional built by
# CUDA 11.8 (nvcc 11.8.89, sm_90 SASS; noxfile GPU_BUILDS "sm90cu118") at once. Phases bounded by
# SECONDS so the tar returns within the call.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R
for p in positional; do python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/t-$p .carry/gpu/sm90/mlops_$p-*.whl; done
for p in attention positional; do python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/u-$p .carry/gpu/sm90cu118/mlops_$p-*.whl; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
export MLOPS_BENCH_OUT=$R
probe() { PYTHONPATH=/tmp/t-positional:$PWD/tools/testing timeout $1 python3 ci/device/rope_probe.py "${@:2}" >> $R/probe.log 2>&1; echo "probe ${*:2} rc=$? at ${SECONDS}s" >> $R/phases.txt; }
probe 170 --tokens 1,4,32 --blocks 3 --graph
probe 80 --tokens 1,32 --blocks 2 --graph --max-positions 8192
probe 50 --tokens 32 --blocks 2 --positions arange
for p in attention positional; do
  ( PYTHONPATH=/tmp/u-$p:$PWD/tools/testing MLOPS_ARCH_TAG=sm90cu118 timeout 240 python3 -m pytest -q --tb=short -p no:cacheprovider packages/$p/tests/test_${p}_gpu.py > $R/cu118-$p.log 2>&1
    echo "cu118 $p rc=$? $(grep -E 'passed|failed|error' $R/cu118-$p.log | tail -1 | cut -c1-160)" >> $R/phases.txt ) &
done
wait
cd $OUT && tar czf r.tgz r && cat r/phases.txt; rm -rf r
