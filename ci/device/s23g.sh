#!/bin/bash
# Session 23, the lead's seventh device call (GPU run 124). One H200, END_S = 460 s. Wheels (.carry/s23/): new (374b241)
# and part (+ the partial's slice sums over the chunk's 8 slices unrolled at D 128; sm90 and c75s). bench_attention.py
# --variants planner --quick new / part three times each, the full cases twice each; then the whole test_attention_gpu.py
# on part (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on part. Results: $OUT/r23g.tgz,
# $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r23g
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
for w in new part; do inst ".carry/s23/$w/mlops_attention-*.whl" /tmp/s23g-$w; done
inst ".carry/s23/partc75s/mlops_attention-*.whl" /tmp/s23g-c75s
gpu_info
for t in new-q1 part-q1 part-q2 new-q2 new-q3 part-q3 new-f1 part-f1 part-f2 new-f2; do
  case $t in *-q*) a=--quick;; *) a=;; esac
  attn_bench /tmp/s23g- ${t%-*} $t 40 8 $a
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s23g-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s23g-part r23g
