#!/bin/bash
# Session 27's fourth device call. One H200, END_S = 480 s. Wheels (.carry/s27/): d3 = 4ea40ab (digits by a power of
# two), d5 = 8b0d756 (S = c 2^k as branches, run 137), d6 = dd5efd3 (d5's values, digit_scale by selects) and d6's
# c75s wheel. bench_attention.py --variants planner d3 / d5 / d6 interleaved; ncu's durations of the planner's B8 L128K
# 3+3 exact decode's kernels on d6; then the whole test_attention_gpu.py on d6 (5 shards), its c75s subset (2 shards)
# and the s17a sanitizer script on d6. Results: $OUT/r27d.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r27d
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
inst ".carry/s27/d3/mlops_attention-*.whl" /tmp/s27d-d3
inst ".carry/s27/d5/mlops_attention-*.whl" /tmp/s27d-d5
inst ".carry/s27/d6/mlops_attention-*.whl" /tmp/s27d-d6
inst ".carry/s27/d6c75s/mlops_attention-*.whl" /tmp/s27d-c75s
gpu_info
attn_abn /tmp/s27d- d3 d5 d6
# the planner's decode is the script's last: its kernels are the last ones ncu lists
PYTHONPATH=/tmp/s27d-d6 timeout 120 ncu --section SpeedOfLight --clock-control none -k regex:"refine|coarse|combine|zero" \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $R/ncu-kernels.txt 2>&1
echo "ncu kernels rc=$? at ${SECONDS}s" >> $R/phases.txt
attn_c75s /tmp/s27d-c75s
attn_tests_tail /tmp/s27d-d6 r27d
