#!/bin/bash
# Session 12, the lead's closing device call (one H200, run 68): the PTX paths and the sanitizer runs the helpers'
# calls left out. Wheels of 0e46222's packages (clean worktrees): attention c80 / c61 (.carry/s12z/c80, c61: the
# mma_pv4 variants and the one-round planner through PTX JIT; compute_61 takes the DP4A / shuffle MMA path), attention
# sm90 (.carry/s12attn/sm90, run 67's wheel of 1a0dc58) for memcheck of mma_pv4 / mma_pv4w, norm c80 (.carry/s12z/c80:
# r16lxp's cp.async path, sm_80 … sm_89, never run before). Every package into its own fresh target.
# DRY=1: the shell logic only, for a check here.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; compute-sanitizer() { echo "DRY sanitizer $*"; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s12z/c80/mlops_attention-*.whl" /tmp/z-c80-attention
inst ".carry/s12z/c61/mlops_attention-*.whl" /tmp/z-c61-attention
inst ".carry/s12attn/sm90/mlops_attention-*.whl" /tmp/z-sm90-attention
inst ".carry/s12z/c80/mlops_norm-*.whl" /tmp/z-c80-norm
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
# (1) memcheck of the new attention variants (racecheck ran in run 65)
PYTHONPATH=/tmp/z-sm90-attention timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
  python3 ci/device/s12a_sanitize.py > $R/sanitizer-memcheck.log 2>&1
echo "attention memcheck rc=$? $(grep -E 'ERROR SUMMARY|failed' $R/sanitizer-memcheck.log | tr '\n' ' ' | cut -c1-160) [${SECONDS}s]" >> $R/summary.txt
# (2) the PTX paths, all at once (3 + 3 + 3 processes on 16 cores), bounded by the call's end
L=$((330 - SECONDS)); [ $L -gt 240 ] && L=240
shards c80 attention /tmp/z-c80-attention 3 $L -k "mma_pv4 or planner"
shards c61 attention /tmp/z-c61-attention 3 $L -k "mma_pv4 or planner"
shards c80 norm /tmp/z-c80-norm 3 $L -k r16lxp
wait; echo "tests done [${SECONDS}s]" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|Error" $R/c*-*.log 2>/dev/null | head -20 > $R/failures.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt r/failures.txt; rm -rf r
