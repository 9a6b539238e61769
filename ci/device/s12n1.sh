#!/bin/bash
# Session 12, norm device call 1 (one H200): it installed into /tmp/m, where the warm machine already held
# another package's mlops/ (pip --target skips it), so mlops.norm was missing and nothing ran (rc 0,
# 15 s: bench, tests and sanitizer runs all failed on the import). Kept as it ran (this comment aside);
# s12n2.sh is the call that measured.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench-new; source ci/device/lib.sh
inst ".carry/s12norm/sm90/mlops_norm-*.whl" /tmp/m
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
V=r16lx2,r16lx4we,r16lx2f,r16lx4wf,r16lxp2,r16lxp4,r16lxp8
MLOPS_BENCH_OUT=$R/bench-new PYTHONPATH=/tmp/m:$PWD/tools/testing timeout 165 python3 packages/norm/bench/bench_norm.py \
  --shapes 2048x4096,16384x4096 --variants --variant-names $V --kernel-time $V > $R/bench-new.log 2>&1
summ bench-new $?
L=$((280 - SECONDS)); [ $L -gt 150 ] && L=150
shards sm90 norm /tmp/m 4 $L -k r16lxp
( for tool in racecheck memcheck; do
    PYTHONPATH=/tmp/m timeout $((L / 2)) compute-sanitizer --tool $tool --error-exitcode 9 python3 -c '
import torch, mlops.norm as mn
x = torch.randn(700, 4096, dtype=torch.bfloat16, device="cuda"); w = torch.randn(4096, dtype=torch.bfloat16, device="cuda")
for v in ("r16lxp2", "r16lxp4", "r16lxp8"):
    for kw in ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "fp8"}):
        mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize(); print("ran")' > $R/san-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log | tr '\n' ' ' | cut -c1-200) [${SECONDS}s]" >> $R/summary.txt
  done ) &
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r
