#!/bin/bash
# Session 14, GPU run 81 (one H200, <= 240 s): (1) norm: ci/device/s14n2.sh (r16lx4wh, the INT8 table in shared
# memory, beside the planned INT8 picks; <= 60 s); (2) attention: ci/device/s14a3.sh (the planner on mma_pv4r's
# refine also within mma_pv's one round on sm_90: the six issue-6 cases, `-k planner`; <= 120 s). Each part alone on
# the GPU while it benches. Results: $OUT/r/norm2, $OUT/r/attn3, tarred into $OUT/r.tgz at the end.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
mkdir -p $OUT/r
for part in s14n2 s14a3; do
  [ -f ci/device/$part.sh ] || continue
  bash ci/device/$part.sh > $OUT/r/$part-call.log 2>&1; echo "$part rc=$? at ${SECONDS}s"
  tail -60 $OUT/r/$part-call.log
done
(cd $OUT && tar czf r.tgz r && rm -rf r)
