#!/bin/bash
# Session 10, device run 57 (one H200). norm wheels of de1022f (run 56's kernels: packed y = t * w), sm90 and
# sm90cu118 (CUDA 11.8's nvcc and ptxas), built from a clean worktree.
# (1) first, on the fresh machine: the 1x4096 call overhead alone (bench_norm.py --overhead-only);
# (2) alone: the planned rows at 2048x4096 / 16384x4096 again (run 56's "after", a second sample);
# (3) alone: ncu of the planned 2048x4096 launches (y, INT8, FP8 dynamic, NVFP4);
# (4) at once: the CUDA 11.8 build's whole GPU file (6 shards), and compute-sanitizer memcheck then racecheck of
#     the lean-row test (4096, bf16) of r16lx2f / r16lx4wf / r16lx4wb (the lx2 kernels: named barriers, the rtab table).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/m
inst ".carry/gpu/sm90cu118/mlops_norm-*.whl" /tmp/u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
TT=$PWD/tools/testing
mkdir -p $R/overhead $R/planned
MLOPS_BENCH_OUT=$R/overhead PYTHONPATH=/tmp/m:$TT timeout 60 python3 packages/norm/bench/bench_norm.py --overhead-only \
  > $R/overhead.log 2>&1; summ overhead $?
MLOPS_BENCH_OUT=$R/planned PYTHONPATH=/tmp/m:$TT timeout 90 python3 packages/norm/bench/bench_norm.py \
  --shapes 2048x4096,16384x4096 > $R/planned.log 2>&1; summ planned $?
# alone: ncu --set full of the planned 2048x4096 launches (y, INT8, FP8 dynamic, NVFP4; profile_ops.py norm2048)
PYTHONPATH=/tmp/m timeout 150 ncu --set full --import-source yes --clock-control none --profile-from-start off -f \
  -o $R/n2048 python3 ci/device/profile_ops.py norm2048 > $R/ncu.log 2>&1; summ ncu $?
ncu -i $R/n2048.ncu-rep --page details > $R/ncu-details.txt 2>&1
ncu -i $R/n2048.ncu-rep --page source --csv --print-source sass -k regex:norm > $R/ncu-sass.csv 2>&1
rm -f $R/n2048.ncu-rep
L=$((560 - SECONDS)); [ $L -gt 330 ] && L=330
shards sm90cu118 norm /tmp/u 6 $L
( for tool in memcheck racecheck; do
    PYTHONPATH=/tmp/m:$TT MLOPS_ARCH_TAG=sm90 timeout 160 compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "lean_row_variant and 4096 and xdt0 and (r16lx2f or r16lx4wf or r16lx4wb)" \
      packages/norm/tests/test_norm_gpu.py > $R/norm-$tool.log 2>&1
    summ norm-$tool $?
  done ) &
wait; echo "done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; grep -h "SUMMARY" r/norm-*.log; rm -rf r
