#!/bin/bash
# Session 23, the lead's first device call (GPU run 118): the span probe (bench/probes/span.patch + span.py) on a wheel of
# 8163ab8 with the patch (.carry/s23/span): where a planned decode's GPU time goes, kernel by kernel, at B1 L16K (3+3,
# 4+2), B1 L4K and B8 L16K, beside SDPA's. Results: $OUT/span.txt, $OUT/r23.tgz (the raw tables).
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r23
source ci/device/lib.sh
call_setup 200 phases.txt
inst ".carry/s23/span/mlops_attention-*.whl" /tmp/s23-span
gpu_info
mkdir -p $R/span
PYTHONPATH=/tmp/s23-span timeout 150 python3 packages/attention/bench/probes/span.py $R/span 30 > $R/span.txt 2>&1
echo "span rc=$? at ${SECONDS}s" >> $R/phases.txt
cp $R/span.txt $OUT/span.txt
(cd /tmp && tar czf $OUT/r23.tgz $(basename $R))
cat $R/phases.txt $R/gpu.txt $R/span.txt
