#!/bin/bash
# Session 14, GPU run 80 (one H200, <= 420 s): (1) attention: ci/device/s14a2.sh (the planner on mma_pv4r's kernel:
# bench of the six issue-6 cases, the whole attention GPU file; <= 240 s); (2) vocab: ci/device/s14v2.sh (the
# session's second sampler change, before / after; <= 150 s), each part alone on the GPU while it benches.
# Results: $OUT/r/attn2, $OUT/r/vocab2, tarred into $OUT/r.tgz at the end.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
mkdir -p $OUT/r
if [ -f ci/device/s14a2.sh ]; then
  bash ci/device/s14a2.sh > $OUT/r/attn2-call.log 2>&1; echo "attention part rc=$? at ${SECONDS}s"
  tail -70 $OUT/r/attn2-call.log
fi
if [ -f ci/device/s14v2.sh ]; then
  bash ci/device/s14v2.sh > $OUT/r/vocab2-call.log 2>&1; echo "vocab part rc=$? at ${SECONDS}s"
  tail -50 $OUT/r/vocab2-call.log
fi
(cd $OUT && tar czf r.tgz r && rm -rf r)
