#!/bin/bash
# Session 20, the lead's second device call: timing of the streamed kEarly refine's forms (one H200, END_S = 150 s).
# Wheels in .carry/s20b/ (nox gpu_build --tags sm90 of the working tree's attention with one edit each):
#   cur/     the streamed refine as it stands (pv_mma_b's held tiles flushed after the u = 0 loads; 64-byte stack)
#   nopre/   cur without the next item's K planes issued early (the item's three parts copied at its top)
#   nohold/  cur with the first half's tiles written at once (wrong bits by design, timing only: no held values)
# and .carry/s20/base/ (125fa7a's sources). bench_attention.py --variants planner, in turn: base, cur, nopre, nohold,
# base, cur, nopre, nohold. Results: $OUT/r20b.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20b
source ci/device/lib.sh
call_setup 150 phases.txt tests.txt
inst ".carry/s20/base/mlops_attention-*.whl" /tmp/s20b-base
for w in cur nopre nohold; do inst ".carry/s20b/$w/mlops_attention-*.whl" /tmp/s20b-$w; done
gpu_info
for round in 1 2; do
  for w in base cur nopre nohold; do attn_bench /tmp/s20b- $w $w-$round 20 8; done
done
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
collect
python3 ci/device/bench_rows.py $R > $R/bench.txt
cat $R/phases.txt $R/bench.txt > $OUT/summary.txt
(cd /tmp && tar czf $OUT/r20b.tgz r20b)
cat $OUT/summary.txt
