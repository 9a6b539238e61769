#!/bin/bash
# Session 19, the lead's third device call (one H200, <= 120 s): the ablation probe's memory side (bench/probes/ablate.patch,
# docs/attention.md "Session 19"). Wheels in .carry/s19c/: base/ (b746ae1's attention), abl-N/ for N = 31 (every compute
# phase of the refine left out: run 102's wheel), 32 (the records copied for a CTA's first item only, no L2 prefetch:
# the refine's compute without its cache reads) and 63 (both: the structure alone). Quiet GPU, in turn:
# bench_attention.py --variants planner of base, abl32, abl63, abl31, base. Results: $OUT/r19c.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r19c; rm -rf $R; mkdir -p $R; touch $R/phases.txt
source ci/device/lib.sh
END=${END_S:-110}
dry_stubs
for w in base abl-31 abl-32 abl-63; do inst ".carry/s19c/$w/mlops_attention-*.whl" /tmp/s19c-${w/-/}; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
for w in base:base-1 abl32:abl32 abl63:abl63 abl31:abl31 base:base-2; do attn_bench /tmp/s19c- ${w%%:*} ${w#*:} 20 8; done
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
python3 ci/device/bench_rows.py $R > $R/bench.txt
cat $R/phases.txt $R/bench.txt > $OUT/summary.txt
(cd /tmp && tar czf $OUT/r19c.tgz r19c)
cat $OUT/summary.txt
