#!/bin/bash
# Session 20, the lead's seventh device call: the kEarly refine instance planned within one round too (a probe: the
# planner's line in fbla_launch.cu changed in a worktree of 8e129b1), timed against HEAD's planner at B1 with the decode's
# kernel time (run 95 had kEarly slower at B1 L16K in events alone, which move ~2 us between processes). One H200,
# END_S = 120 s. Wheels: .carry/s20g/new (8e129b1's attention), .carry/s20h/early (the probe). bench_attention.py
# --variants planner --kernel-time, head / early / head / early. Results: $OUT/r20h.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20h
source ci/device/lib.sh
call_setup 120 phases.txt tests.txt
inst ".carry/s20g/new/mlops_attention-*.whl" /tmp/s20h-head
inst ".carry/s20h/early/mlops_attention-*.whl" /tmp/s20h-early
gpu_info
for t in head-1 early-1 head-2 early-2; do
  attn_bench /tmp/s20h- ${t%-*} $t 40 8 --kernel-time
done
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
python3 ci/device/bench_rows.py $R > $R/bench.txt
(cd /tmp && tar czf $OUT/r20h.tgz r20h)
cat $R/phases.txt $R/bench.txt
