#!/bin/bash
# Session 21, the lead's third device call: the FO V format after two more changes (the BF16 slices' sums stored as one
# F4 of 4 heads a channel, 4-way bank conflicts where run 111's scalar stores had 16-way; pv_mma's words always loaded up
# front): every refine_mma4_kernel instance without spills. One H200, END_S = 400 s. Wheels: .carry/s21/base (524494c,
# bit planes), .carry/s21c/new and .carry/s21c/c75s (this tree). bench_attention.py --variants
# planner,imma_occ+coarse_imma,warps+coarse_warps (the digits form's pick, the chains form's on sm_80+ and below) --kernel-time, base / new / base / new; then
# the whole test_attention_gpu.py on new (5 shards), the c75s subset (2 shards) and the s17a sanitizer script on new.
# Results: $OUT/r21c.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r21c
source ci/device/lib.sh
call_setup 400 phases.txt tests.txt
inst ".carry/s21/base/mlops_attention-*.whl" /tmp/s21c-base
inst ".carry/s21c/new/mlops_attention-*.whl" /tmp/s21c-new
inst ".carry/s21c/c75s/mlops_attention-*.whl" /tmp/s21c-c75s
gpu_info
for t in base-1 new-1 base-2 new-2; do
  attn_bench /tmp/s21c- ${t%-*} $t 60 8 --kernel-time --variants planner,imma_occ+coarse_imma,warps+coarse_warps
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s21c-c75s 2 $L -k "mma_pv or warps or items or stage"
attn_tests_tail /tmp/s21c-new r21c
