#!/bin/bash
# Session 17, the lead's last device call (one H200, warm, <= 260 s): the whole GPU files of the two packages whose
# planned code changed this session, on the final wheels (.carry/s17z/{norm,attention}/*.whl): test_norm_gpu.py in 10
# shards (the lean LayerNorm kernels and their plan; run 96 ran the file on 7f1fba7) and test_attention_gpu.py in 6
# (the refine cuts and the kEarly instance; the file last ran whole in run 86), all 16 processes at once.
# Results: $OUT/r.tgz (logs, tests-sorted.txt, failures.txt). DRY=1: the shell logic only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
for p in norm attention; do inst ".carry/s17z/$p/mlops_$p-*.whl" /tmp/z17-$p; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
L=$((250 - SECONDS))
shards sm90 norm /tmp/z17-norm 10 $L
shards sm90 attention /tmp/z17-attention 6 $L
echo "started at ${SECONDS}s" > $R/phases.txt
finish gpu.txt phases.txt
