#!/bin/bash
# Session 26's seventh device call (GPU run 134): c795acc's sm90 wheel (.carry/s26/rev: the review's refactor of the K
# readers and the encoder's packing; the planned kernels' SASS is 4b138be's, close_kernel and the imma / chains forms'
# kernels changed) through the whole test_attention_gpu.py (5 shards) and the s17a sanitizer script.
# Results: $OUT/r26g.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r26g
source ci/device/lib.sh
call_setup 260 phases.txt tests.txt
inst ".carry/s26/rev/mlops_attention-*.whl" /tmp/s26g-new
gpu_info
attn_tests_tail /tmp/s26g-new r26g
