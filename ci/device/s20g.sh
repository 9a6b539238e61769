#!/bin/bash
# Session 20, the lead's sixth device call: the refine's item step computed only in CTAs with a second item (B1 L16K:
# one item a CTA; run 108 counted the step's divisions at 4.6 % of that refine's instructions). One H200, END_S = 240 s.
# Wheels: .carry/s20/base (125fa7a's attention), .carry/s20g/new (the change). bench_attention.py --variants planner
# --kernel-time (events and CUPTI kernel time), base / new / base / new; then the whole test_attention_gpu.py (5 shards)
# and the s17a sanitizer script on new. Results: $OUT/r20g.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20g
source ci/device/lib.sh
call_setup 240 phases.txt tests.txt
inst ".carry/s20/base/mlops_attention-*.whl" /tmp/s20g-base
inst ".carry/s20g/new/mlops_attention-*.whl" /tmp/s20g-new
gpu_info
for t in base-1 new-1 base-2 new-2; do
  mkdir -p $R/bench-$t
  MLOPS_BENCH_OUT=$R/bench-$t PYTHONPATH=/tmp/s20g-${t%-*}:$PWD/tools/testing timeout 40 python3 \
    packages/attention/bench/bench_attention.py --variants planner --kernel-time > $R/bench-$t.log 2>&1
  echo "bench $t rc=$? at ${SECONDS}s" >> $R/phases.txt
done
attn_tests_tail /tmp/s20g-new r20g
