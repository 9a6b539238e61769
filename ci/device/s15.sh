#!/bin/bash
# Session 15, GPU runs 84 / 85 (one H200): the parts named as arguments (ci/device/s15a.sh attention, s15n.sh norm,
# s15v.sh vocab: each writes under $OUT/r/<part>/), one after the other so each benches alone on the GPU; each part
# bounded by its own timeouts (<= 240 s). Then $OUT/r tarred into $OUT/r-<parts>.tgz.
# Usage: bash ci/device/s15.sh s15a s15n    (DRY=1 passes through to the parts)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/r/gpu.txt 2>&1
for part in "$@"; do
  [ -f ci/device/$part.sh ] || { echo "$part: no script"; continue; }
  timeout 290 bash ci/device/$part.sh > $OUT/r/$part-call.log 2>&1; echo "$part rc=$? at ${SECONDS}s"
  tail -40 $OUT/r/$part-call.log
done
(cd $OUT && tar czf r-$(IFS=-; echo "$*").tgz r && rm -rf r)
