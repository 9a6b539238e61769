#!/bin/bash
# Session 23, the lead's third device call (GPU run 120): the timeline probe (bench/probes/timeline_dyn.patch, TL(0) after
# the item's barrier) on d66de7b (the BF16 item's K rows staged): .carry/s23/stktl. Results: $OUT/r23c.tgz, $OUT/timeline.txt.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r23c
source ci/device/lib.sh
call_setup 120 phases.txt
inst ".carry/s23/stktl/mlops_attention-*.whl" /tmp/s23c-tl
gpu_info
attn_timeline /tmp/s23c-tl
(cd /tmp && tar czf $OUT/r23c.tgz $(basename $R))
cat $R/phases.txt $R/timeline.txt
