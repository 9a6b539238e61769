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
  attn_bench /tmp/s20g- ${t%-*} $t 40 8 --kernel-time
done
attn_tests_tail /tmp/s20g-new r20g
