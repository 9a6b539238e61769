#!/bin/bash
# Session 7, device run 39 (one H200). (1) Alone first: bench_norm's planned rows at 2048x4096 and 16384x4096
# (the planner of 4148d5f takes r16lx4wf / r16lx2f for NVFP4). (2) The whole GPU files of the CUDA 11.8 builds
# (sm_90 SASS) of norm (4148d5f), vocab and optimizers (416f9ea), fewer shards than run 36 and no JIT beside.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/t-norm
for p in norm vocab optimizers; do inst ".carry/gpu/sm90cu118/mlops_$p-*.whl" /tmp/u-$p; done
TT=$PWD/tools/testing
PYTHONPATH=/tmp/t-norm:$TT timeout 120 python3 packages/norm/bench/bench_norm.py --shapes 2048x4096,16384x4096 > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((420 - SECONDS)); [ $L -gt 300 ] && L=300
shards sm90cu118 vocab /tmp/u-vocab 8 $L
shards sm90cu118 norm /tmp/u-norm 4 $L
shards sm90cu118 optimizers /tmp/u-optimizers 2 $L
wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt; rm -rf r
