#!/bin/bash
# Session 10, device run 56 (one H200). norm: the packed second rounding of the lx / lx2 kernels (mul_packed8,
# y = round(t * w) by one HMUL2 a pair; weight_offset kept as -0). Wheels built from clean worktrees: the one
# before (.carry/before, sm90) and the new one (.carry/gpu/{sm90,c80,c61}).
# (1) alone, in turn: bench_norm's planned rows at 2048x4096 / 16384x4096 and the lx / lx2 variants with CUPTI
#     kernel times, before then new;
# (2) the new build's whole GPU file on sm_90 (6 shards) and its lean tests (-k lean: every lx / lx2 / lw kernel,
#     the tiny-product hand-back) under compute_80 (fma.rn.bf16x2 + min.bf16x2) and compute_61 (bf16 on the fp32
#     path, fp16 by mul.rn.f16x2), 4 shards each, JIT.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
inst ".carry/before/mlops_norm-*.whl" /tmp/b
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/m
for t in c80 c61; do inst ".carry/gpu/$t/mlops_norm-*.whl" /tmp/$t-norm; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
TT=$PWD/tools/testing
V=r16lx2,r16lx4w,r16lx4wb,r16lx2f,r16lx4wf
for t in before:/tmp/b new:/tmp/m; do
  mkdir -p $R/bench-${t%%:*}
  MLOPS_BENCH_OUT=$R/bench-${t%%:*} PYTHONPATH=${t#*:}:$TT timeout 110 python3 packages/norm/bench/bench_norm.py \
    --shapes 2048x4096,16384x4096 --variants --variant-names $V --kernel-time $V > $R/bench-${t%%:*}.log 2>&1
  summ bench-${t%%:*} $?
done
L=$((575 - SECONDS)); [ $L -gt 330 ] && L=330
shards sm90 norm /tmp/m 6 $L
shards c80 norm /tmp/c80-norm 4 $L -k lean
shards c61 norm /tmp/c61-norm 4 $L -k lean
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r
