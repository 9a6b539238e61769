#!/bin/bash
# Session 10, device run 59 (one H200). norm: the INT8 clean-warp codes and the packed FP8 dynamic row amax
# (4a155a8) against the packed-y build before it (cd0b2b7, .carry/before), sm90; new c80 too.
# (1) alone, in turn: bench_norm's planned rows and the lx / lx2 variants (CUPTI kernel times) at 2048x4096 and
#     16384x4096, before then new;
# (2) at once: the lean tests (-k lean, the new test_lean_int8_fp8_nonfinite included) of the new build on sm_90
#     (4 shards) and under compute_80 (4 shards, JIT: max.NaN / max.bf16x2 paths).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
inst ".carry/before/mlops_norm-*.whl" /tmp/b
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/m
inst ".carry/gpu/c80/mlops_norm-*.whl" /tmp/c80-norm
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
TT=$PWD/tools/testing
V=r16lx2,r16lx4w,r16lx4wb,r16lx2f,r16lx4wf
for t in before:/tmp/b new:/tmp/m; do
  mkdir -p $R/bench-${t%%:*}
  MLOPS_BENCH_OUT=$R/bench-${t%%:*} PYTHONPATH=${t#*:}:$TT timeout 110 python3 packages/norm/bench/bench_norm.py \
    --shapes 2048x4096,16384x4096 --variants --variant-names $V --kernel-time $V > $R/bench-${t%%:*}.log 2>&1
  summ bench-${t%%:*} $?
done
L=$((560 - SECONDS)); [ $L -gt 400 ] && L=400
shards sm90 norm /tmp/m 4 $L -k lean
shards c80 norm /tmp/c80-norm 5 $L -k lean
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r
