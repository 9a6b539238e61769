#!/bin/bash
# Session 23, the lead's fifth device call (GPU run 122). One H200, END_S = 420 s. Wheels (.carry/s23/): new (374b241)
# and cmb (+ combine_warps_kernel's first three tiles of partials loaded at once, not two; sm90 and c75s).
# bench_attention.py --variants planner --quick new / cmb three times each, --lengths 16414,16484 --batches 1 once each,
# the full cases once each; then the whole test_attention_gpu.py on cmb (5 shards), its c75s subset (2 shards) and the
# s17a sanitizer script on cmb. Results: $OUT/r23e.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r23e
source ci/device/lib.sh
call_setup 420 phases.txt tests.txt
for w in new cmb; do inst ".carry/s23/$w/mlops_attention-*.whl" /tmp/s23e-$w; done
inst ".carry/s23/cmbc75s/mlops_attention-*.whl" /tmp/s23e-c75s
gpu_info
for t in new-q1 cmb-q1 cmb-q2 new-q2 new-q3 cmb-q3; do
  attn_bench /tmp/s23e- ${t%-*} $t 30 8 --quick
done
for t in new-t cmb-t; do
  attn_bench /tmp/s23e- ${t%-*} $t 30 8 --lengths 16414,16484 --batches 1
done
for t in new-f cmb-f; do
  attn_bench /tmp/s23e- ${t%-*} $t 40 8
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s23e-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s23e-cmb r23e
