#!/bin/bash
# Session 22, the lead's third device call (GPU run 117). One H200, END_S = 420 s. Wheels (.carry/s22/): bfp (f34bf93,
# run 116's last step) and bk (06da2ef: + the BF16 item's K loads 8 at once; sm90 and c75s). bench_attention.py
# --variants planner --kernel-time: --quick (L 4K / 16K) bfp / bk three times, then the full cases bfp / bk once; then
# the whole test_attention_gpu.py on bk (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on bk.
# Results: $OUT/r22c.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r22c
source ci/device/lib.sh
call_setup 420 phases.txt tests.txt
for w in bfp bk; do inst ".carry/s22/$w/mlops_attention-*.whl" /tmp/s22c-$w; done
inst ".carry/s22/bkc75s/mlops_attention-*.whl" /tmp/s22c-c75s
gpu_info
for t in bfp-q1 bk-q1 bfp-q2 bk-q2 bfp-q3 bk-q3; do
  attn_bench /tmp/s22c- ${t%-*} $t 30 8 --quick --kernel-time
done
for t in bfp-f bk-f; do
  attn_bench /tmp/s22c- ${t%-*} $t 40 8 --kernel-time
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s22c-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s22c-bk r22c
