#!/bin/bash
# Session 21, the lead's second device call: the one-round refine after the FO V change (run 111: B1 L16K / L4K 0.5 -
# 1 us slower in kernel time while every case of more rounds gained 10 - 13 %). Two probe wheels of 6516ec3, each one
# line: early1 = the planner takes the kEarly instance within one round too (fbla_launch.cu), tile1 = the one-round
# instance loads a tile's 3 V words at its MMA (pv_mma<D, false>). One H200, END_S = 200 s. Wheels: .carry/s21/new
# (6516ec3), .carry/s21b/{early1,tile1}. bench_attention.py --quick --variants planner --kernel-time (L 4K and 16K),
# new / early1 / tile1, twice. Results: $OUT/r21b.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r21b
source ci/device/lib.sh
call_setup 200 phases.txt tests.txt
inst ".carry/s21/new/mlops_attention-*.whl" /tmp/s21b-new
inst ".carry/s21b/early1/mlops_attention-*.whl" /tmp/s21b-early1
inst ".carry/s21b/tile1/mlops_attention-*.whl" /tmp/s21b-tile1
gpu_info
for t in new-1 early1-1 tile1-1 new-2 early1-2 tile1-2; do
  attn_bench /tmp/s21b- ${t%-*} $t 30 8 --quick --kernel-time
done
attn_bench_tail r21b
