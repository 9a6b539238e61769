#!/bin/bash
# Session 26's second device call. One H200, END_S = 460 s. Wheels (.carry/s26/, `nox -s gpu_build -- --tags
# sm90,c75s --package attention` in a worktree of the commit): base = 84edc6e's sm90 wheel (.carry/s25/new, the
# attention sources of 4d7f0b3: K bit planes), new = the K codes fragment-ordered (record version 3) sm90 and c75s
# wheels. The format changes the records' bytes, not the decode's values: new's tests compare every kernel with the
# host emulation (which reads the new order) bit for bit, as before.
# bench_attention.py --variants planner --quick base / new three times each, the full cases twice each; then the whole
# test_attention_gpu.py on new (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on new.
# Results: $OUT/r26b.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r26b
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
inst ".carry/s25/new/mlops_attention-*.whl" /tmp/s26b-base
inst ".carry/s26/new/mlops_attention-*.whl" /tmp/s26b-new
inst ".carry/s26/newc75s/mlops_attention-*.whl" /tmp/s26b-c75s
gpu_info
attn_ab /tmp/s26b- base new
attn_c75s /tmp/s26b-c75s
attn_tests_tail /tmp/s26b-new r26b
