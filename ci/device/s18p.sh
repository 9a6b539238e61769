#!/bin/bash
# Session 18, a part for ci/device/s15.sh (one H200, <= 175 s): norm's lean kernels (r16 / r32 / ln: test_norm_gpu.py
# -k lean) on the lower archs' code paths, built here as sm_90 SASS from compute_80 / 70 / 61 PTX (nox -s gpu_build --
# --tags c80s,c70s,c61s --package norm: the same __CUDA_ARCH__ paths the driver's JIT of the cNN builds would run,
# without its minutes: runs 96 / 99 spent 300 s in the JIT). Wheels: .carry/s18b/ptx/<tag>/. 4 shards a tag, all 12 at
# once. Results: $OUT/r/p/ (logs, tests-sorted.txt, failures.txt). DRY=1: the commands only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/p; mkdir -p $R; touch $R/tests.txt; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
# K / N / LIMIT_S: the -k selection, shards a tag, the limit (run 100: K=lean N=4 LIMIT_S=160 reached 181-206 of 327;
# PTX: the wheels' folder (session 19: .carry/s19b/ptx, b746ae1's). The rest, next: K="lean_layer_norm or lean_row_variant or lean_nvfp4_nonfinite or planned_few_rows" N=5)
L=${LIMIT_S:-160}
for t in c80s c70s c61s; do
  inst "${PTX:-.carry/s18b/ptx}/$t/mlops_norm-*.whl" /tmp/p18-$t
  shards $t norm /tmp/p18-$t ${N:-4} $L -k "${K:-lean}"
done
collect
cat $R/tests-sorted.txt $R/failures.txt
