#!/bin/bash
# Session 27's A / B device calls (runs 136 - 138: s27b.sh, s27c.sh, s27d.sh set the parameters). One H200, END_S = 480
# s. W: the wheels, "name=folder ..." (sm90 wheels: bench_attention.py --variants planner, interleaved by attn_abn);
# T: the tested wheel's name (its c75s wheel in the folder T_C75S); N: the run's name. ncu's durations of every kernel
# of the planner's B8 L128K 3+3 exact decode on T (what the events hold beside the refine); then the whole
# test_attention_gpu.py on T (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on T.
# Results: $OUT/$N.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/$N
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
inst_named /tmp/$N-
inst "$T_C75S/mlops_attention-*.whl" /tmp/$N-c75s
gpu_info
attn_abn /tmp/$N- "${names[@]}"
# the planner's decode is the script's last: its kernels are the last ones ncu lists
PYTHONPATH=/tmp/$N-$T timeout 120 ncu --section SpeedOfLight --clock-control none -k regex:"refine|coarse|combine|zero" \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $R/ncu-kernels.txt 2>&1
echo "ncu kernels rc=$? at ${SECONDS}s" >> $R/phases.txt
attn_c75s /tmp/$N-c75s
attn_tests_tail /tmp/$N-$T $N
