#!/bin/bash
# Session 17, the lead's first device call (one H200, <= 330 s): norm's verification debt from session 16.
#   (1) the whole norm GPU file on sm_90 (7f1fba7's wheel; the code of 2540fdc, whose SASS equals run 95's d71b7fa)
#       in 8 shards: it last ran whole in run 79 (1363 passed), before the r32 kernels and the H 8192 plan;
#   (2) every lean kernel (-k lean: the r32 kernels r32lx4we / wf / wg, the H 8192 planned calls, the r16 lean kernels) under the compute_80 / 70 / 61 PTX
#       builds (JIT on the H200): never run below sm_90 SASS; 3 shards a tag, all at once (8 + 9 processes, 16 cores).
# Wheels: .carry/s17p/{sm90,c80,c70,c61}/mlops_norm-*.whl. Results: $OUT/r.tgz (logs, tests-sorted.txt, failures.txt).
# DRY=1: the shell logic only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
for t in sm90 c80 c70 c61; do inst ".carry/s17p/$t/mlops_norm-*.whl" /tmp/p17-$t-norm; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
L=$((320 - SECONDS))
shards sm90 norm /tmp/p17-sm90-norm 8 $L
K="lean"  # 277 of 1570: every lean kernel (r16l... and r32l...), the lean8k tests, the planned few-rows calls
for t in c80 c70 c61; do shards $t norm /tmp/p17-$t-norm 3 $L -k "$K"; done
echo "started at ${SECONDS}s" > $R/phases.txt
finish gpu.txt phases.txt
