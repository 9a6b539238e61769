#!/bin/bash
# Session 21, the lead's first device call: the V codes fragment-ordered (record version 2). One H200, END_S = 420 s.
# Wheels: .carry/s21/base (524494c's attention, V in bit planes), .carry/s21/new (the FO V format, sm_90),
# .carry/s21/c75s (the same sources, sm_90 SASS compiled from compute_75's PTX: the lower arch paths, the MMA by
# shuffles + DP4A). bench_attention.py --variants planner --kernel-time, base / new / base / new; then the whole
# test_attention_gpu.py on new (5 shards), its mma_pv / warps / items / stage tests on c75s (2 shards) and the s17a
# sanitizer script on new. Results: $OUT/r21.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r21
source ci/device/lib.sh
call_setup 420 phases.txt tests.txt
inst ".carry/s21/base/mlops_attention-*.whl" /tmp/s21-base
inst ".carry/s21/new/mlops_attention-*.whl" /tmp/s21-new
inst ".carry/s21/c75s/mlops_attention-*.whl" /tmp/s21-c75s
gpu_info
for t in base-1 new-1 base-2 new-2; do
  attn_bench /tmp/s21- ${t%-*} $t 40 8 --kernel-time
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s21-c75s 2 $L -k "mma_pv or warps or items or stage"
attn_tests_tail /tmp/s21-new r21
