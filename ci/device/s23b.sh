#!/bin/bash
# Session 23, the lead's second device call (GPU run 119). One H200, END_S = 460 s. Wheels (.carry/s23/): base (f34bf93:
# the refine of 8163ab8, same SASS), stk (the BF16 item's K rows staged in shared memory; sm90 and c75s), stkspan (stk +
# bench/probes/span.patch). The span probe on stkspan; bench_attention.py --variants planner --kernel-time, --quick
# base / stk three times, then the full cases once each; then the whole test_attention_gpu.py on stk (5 shards), its c75s
# subset (2 shards) and the s17a sanitizer script on stk. Results: $OUT/r23b.tgz, $OUT/summary.txt, $OUT/span.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r23b
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
for w in base stk stkspan; do inst ".carry/s23/$w/mlops_attention-*.whl" /tmp/s23b-$w; done
inst ".carry/s23/stkc75s/mlops_attention-*.whl" /tmp/s23b-c75s
gpu_info
attn_span /tmp/s23b-stkspan
for t in base-q1 stk-q1 base-q2 stk-q2 base-q3 stk-q3; do
  attn_bench /tmp/s23b- ${t%-*} $t 30 8 --quick --kernel-time
done
for t in base-f stk-f; do
  attn_bench /tmp/s23b- ${t%-*} $t 40 8 --kernel-time
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s23b-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s23b-stk r23b
