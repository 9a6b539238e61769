#!/bin/bash
# Session 7, device run 37 (one H200). Wheels of e253153 built from a clean worktree: norm sm90 / c80 / c61
# (the NVFP4 candidates r16lx2f / r16lx4wf of 734dd86 + e253153), positional c80 (unchanged since 894b831).
# A: norm's whole GPU file on sm_90 (4 shards) beside positional's GPU file under compute_80 (6 shards, JIT);
# B: the new variants' tests and the non-finite test under compute_80 and compute_61 (4 shards each: the
#    packed NaN-propagating amax on sm_80+, the first commit's path below);
# C: alone, bench_norm --variants for the four NVFP4 candidates at 2048x4096 and 16384x4096 with CUPTI times.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/t-norm
for t in c80 c61; do inst ".carry/gpu/$t/mlops_norm-*.whl" /tmp/$t-norm; done
inst ".carry/gpu/c80/mlops_positional-*.whl" /tmp/c80-positional
TT=$PWD/tools/testing
shards sm90 norm /tmp/t-norm 4 170
shards c80 positional /tmp/c80-positional 6 170
wait; echo "A done at ${SECONDS}s" >> $R/phases.txt
K="r16lx2f or r16lx4wf or nonfinite"
shards c80 norm /tmp/c80-norm 4 130 -k "$K"
shards c61 norm /tmp/c61-norm 4 130 -k "$K"
wait; echo "B done at ${SECONDS}s" >> $R/phases.txt
V=r16lx2e,r16lx4we,r16lx2f,r16lx4wf
PYTHONPATH=/tmp/t-norm:$TT timeout $((570 - SECONDS)) python3 packages/norm/bench/bench_norm.py --variants \
  --shapes 2048x4096,16384x4096 --variant-names $V --kernel-time $V > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt; rm -rf r
