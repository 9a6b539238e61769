#!/bin/bash
# Session 25's third device call (GPU run 127). One H200, END_S = 460 s. Wheels (.carry/s25/, built by
# `nox -s gpu_build -- --tags sm90[,c75s] --package attention` in a worktree of each commit): base = 70cd621's sm90
# wheel (run 125's new), new = 84edc6e's sm90 and c75s wheels. 84edc6e: the q digits' high digit without its clamp
# (bounded_digits, the same values; run 126's per-line profile: ~130 of the 11,268 warp instructions a B8 L128K item).
# bench_attention.py --variants planner --quick base / new three times each, the full cases twice each; then the whole
# test_attention_gpu.py on new (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on new.
# Results: $OUT/r25b.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r25b
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
inst ".carry/s24/new/mlops_attention-*.whl" /tmp/s25b-base
inst ".carry/s25/new/mlops_attention-*.whl" /tmp/s25b-new
inst ".carry/s25/newc75s/mlops_attention-*.whl" /tmp/s25b-c75s
gpu_info
attn_ab /tmp/s25b- base new
attn_c75s /tmp/s25b-c75s
attn_tests_tail /tmp/s25b-new r25b
