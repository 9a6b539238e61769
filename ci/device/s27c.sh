#!/bin/bash
# Session 27's third device call. One H200, END_S = 480 s. Wheels (.carry/s27/): d3 = 4ea40ab (run 136), d5 = 8b0d756
# (d3 + combine_warps_kernel's m / l loaded a tile ahead, the same values; digit_scale's S = c 2^k, new numerics) and
# d5's c75s wheel. bench_attention.py --variants planner d3 / d5 interleaved (attn_abn); ncu's durations of every
# kernel of the planner's B8 L128K 3+3 exact decode on d5; then the whole test_attention_gpu.py on d5 (5 shards), its
# c75s subset (2 shards) and the s17a sanitizer script on d5. Results: $OUT/r27c.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r27c
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
inst ".carry/s27/d3/mlops_attention-*.whl" /tmp/s27c-d3
inst ".carry/s27/d5/mlops_attention-*.whl" /tmp/s27c-d5
inst ".carry/s27/d5c75s/mlops_attention-*.whl" /tmp/s27c-c75s
gpu_info
attn_abn /tmp/s27c- d3 d5
# the planner's decode is the script's last: its kernels are the last ones ncu lists
PYTHONPATH=/tmp/s27c-d5 timeout 120 ncu --section SpeedOfLight --clock-control none -k regex:"refine|coarse|combine|zero" \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $R/ncu-kernels.txt 2>&1
echo "ncu kernels rc=$? at ${SECONDS}s" >> $R/phases.txt
attn_c75s /tmp/s27c-c75s
attn_tests_tail /tmp/s27c-d5 r27c
