#!/bin/bash
# Session 21, the lead's fourth device call: run 112's early1 probe again on 10d11bd (the refine without spills): the
# planner taking the kEarly instance within one round too (fbla_launch.cu, one line). One H200, END_S = 260 s. Wheels:
# .carry/s21c/new (10d11bd), .carry/s21d/early1. bench_attention.py --quick --variants planner --kernel-time (L 4K and
# 16K), new / early1, three times; then the whole test_attention_gpu.py and the s17a sanitizer script on early1 (so that
# a kept planner line has its tests from this call). Results: $OUT/r21d.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r21d
source ci/device/lib.sh
call_setup 260 phases.txt tests.txt
inst ".carry/s21c/new/mlops_attention-*.whl" /tmp/s21d-new
inst ".carry/s21d/early1/mlops_attention-*.whl" /tmp/s21d-early1
gpu_info
for t in new-1 early1-1 new-2 early1-2 new-3 early1-3; do
  attn_bench /tmp/s21d- ${t%-*} $t 30 8 --quick --kernel-time
done
attn_tests_tail /tmp/s21d-early1 r21d
