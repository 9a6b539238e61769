#!/bin/bash
# Session 26's fifth device call (GPU run 132). One H200, END_S = 460 s. Wheels (.carry/s26/, `nox -s gpu_build --
# --tags sm90,c75s --package attention` in a worktree of the commit): base = 3c68e41's sm90 wheel (.carry/s26/new, run
# 129's new: the K codes fragment-ordered, the next item's L2 prefetch), new = 4b138be's sm90 and c75s wheels (the
# kEarly refine without that prefetch: run 131's nopf, whose wheel no test had run). bench_attention.py --variants
# planner --quick base / new three times each, the full cases twice each; then the whole test_attention_gpu.py on new
# (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on new.
# Results: $OUT/r26e.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r26e
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
inst ".carry/s26/new/mlops_attention-*.whl" /tmp/s26e-base
inst ".carry/s26/fin/mlops_attention-*.whl" /tmp/s26e-new
inst ".carry/s26/finc75s/mlops_attention-*.whl" /tmp/s26e-c75s
gpu_info
attn_ab /tmp/s26e- base new
attn_c75s /tmp/s26e-c75s
attn_tests_tail /tmp/s26e-new r26e
