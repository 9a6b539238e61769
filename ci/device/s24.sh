#!/bin/bash
# Session 24's device call, prepared without a device (none was lent that session; run it in the next one). One H200,
# END_S = 460 s. Wheels (.carry/s24/, built by `nox -s gpu_build -- --tags sm90[,c75s] --package attention` in a
# worktree of each commit): base (sm90: GPU run 124's `part` wheel, .carry/s23/part, 9da2ab4's kernels) and new (70cd621:
# the kEarly refine's next item decoded once by thread 0 and handed over in shared memory, and the q digits' positions a
# lane; sm90 and c75s).
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
attn_ab /tmp/s24- base new
attn_c75s /tmp/s24-c75s
attn_tests_tail /tmp/s24-new r24
