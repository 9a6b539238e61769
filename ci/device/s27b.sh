#!/bin/bash
# Session 27's second device call. One H200, END_S = 480 s. Wheels (.carry/s27/): base = c795acc (.carry/s26/rev), d1 =
# 2321876 (the digits without divisions, exp_att), d3 = 4ea40ab (d1 + the partial's uniform row bases and full-chunk
# adds; run 135's d2 without its item scalars from thread 0), and d3's c75s wheel. bench_attention.py --variants planner
# base / d1 / d3 interleaved (attn_abn); ncu's durations of every kernel of the planner's B8 L128K 3+3 exact decode
# (the refine, the combine and the zeroing kernel: what the events hold beside the refine); then the whole
# test_attention_gpu.py on d3 (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on d3.
# Results: $OUT/r27b.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r27b
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
inst ".carry/s26/rev/mlops_attention-*.whl" /tmp/s27b-base
inst ".carry/s27/d1/mlops_attention-*.whl" /tmp/s27b-d1
inst ".carry/s27/d3/mlops_attention-*.whl" /tmp/s27b-d3
inst ".carry/s27/d3c75s/mlops_attention-*.whl" /tmp/s27b-c75s
gpu_info
attn_abn /tmp/s27b- base d1 d3
# the planner's decode is the script's last: its kernels are the last ones ncu lists
PYTHONPATH=/tmp/s27b-d3 timeout 120 ncu --section SpeedOfLight --clock-control none -k regex:"refine|coarse|combine|zero" \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $R/ncu-kernels.txt 2>&1
echo "ncu kernels rc=$? at ${SECONDS}s" >> $R/phases.txt
attn_c75s /tmp/s27b-c75s
attn_tests_tail /tmp/s27b-d3 r27b
