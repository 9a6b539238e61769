#!/bin/bash
# Session 23, the lead's fourth device call (GPU run 121). One H200, END_S = 480 s. Wheels (.carry/s23/): base (f34bf93:
# 8163ab8's refine), stk (d66de7b: the BF16 item's K rows staged), new (+ its scores' q as 16-byte loads for all heads,
# its l's loads ahead of the adds, its V rows prefetched by lines; sm90 and c75s), newspan (new + span.patch). The span
# probe on newspan (B1 L16K / L4K / B8 L16K and B1 with a filling group of 30 / 100 tokens); bench_attention.py
# --variants planner --quick base / stk / new three times each, --lengths 16414,16484 --batches 1 once each, the full cases
# base / new once; then the whole test_attention_gpu.py on new (5 shards), its c75s subset (2 shards) and the s17a
# sanitizer script on new. Results: $OUT/r23d.tgz, $OUT/summary.txt, $OUT/span.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r23d
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
for w in base stk new newspan; do inst ".carry/s23/$w/mlops_attention-*.whl" /tmp/s23d-$w; done
inst ".carry/s23/newc75s/mlops_attention-*.whl" /tmp/s23d-c75s
gpu_info
attn_span /tmp/s23d-newspan
for t in base-q1 stk-q1 new-q1 new-q2 stk-q2 base-q2 base-q3 new-q3 stk-q3; do
  attn_bench /tmp/s23d- ${t%-*} $t 30 8 --quick
done
for t in base-t stk-t new-t; do
  attn_bench /tmp/s23d- ${t%-*} $t 30 8 --lengths 16414,16484 --batches 1
done
for t in base-f new-f; do
  attn_bench /tmp/s23d- ${t%-*} $t 40 8
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s23d-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s23d-new r23d
