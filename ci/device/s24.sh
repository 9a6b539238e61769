#!/bin/bash
# Session 24's device call, prepared without a device (none was lent that session; run it in the next one). One H200,
# END_S = 460 s. Wheels (.carry/s24/, built by `nox -s gpu_build -- --tags sm90[,c75s] --package attention` in a
# worktree of each commit): base (365a3dc: 9da2ab4's kernels, GPU run 124's build) and new (the kEarly refine's next item
# decoded once by thread 0 and read from shared memory, and the q digits' positions a lane: sm90 and c75s).
# bench_attention.py --variants planner --quick base / new three times each, the full cases twice each; then the whole
# test_attention_gpu.py on new (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on new.
# Results: $OUT/r24.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r24
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
for w in base new; do inst ".carry/s24/$w/mlops_attention-*.whl" /tmp/s24-$w; done
inst ".carry/s24/newc75s/mlops_attention-*.whl" /tmp/s24-c75s
gpu_info
for t in base-q1 new-q1 new-q2 base-q2 base-q3 new-q3 base-f1 new-f1 new-f2 base-f2; do
  case $t in *-q*) a=--quick;; *) a=;; esac
  attn_bench /tmp/s24- ${t%-*} $t 40 8 $a
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s24-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s24-new r24
