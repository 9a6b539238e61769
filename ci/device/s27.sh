#!/bin/bash
# Session 27's first device call. One H200, END_S = 480 s. Wheels (.carry/s27/, `nox -s gpu_build -- --tags sm90[,c75s]
# --package attention` in a worktree of the commit): base = c795acc's sm90 wheel (.carry/s26/rev: session 26's kernels),
# d1 = 2321876 (the digits without divisions, exp_att: new numerics), d2 = d7ae586 (d1 + the partial's uniform row bases
# and the item's scalars from thread 0), and d2's c75s wheel. bench_attention.py --variants planner base / d1 / d2
# interleaved (attn_abn); ncu of d2's B8 L128K kEarly refine (for ci/device/ncu_lines.py against a local -lineinfo
# compile of d7ae586); then the whole test_attention_gpu.py on d2 (5 shards), its c75s subset (2 shards) and the s17a
# sanitizer script on d2. Results: $OUT/r27.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r27
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
inst ".carry/s26/rev/mlops_attention-*.whl" /tmp/s27-base
inst ".carry/s27/d1/mlops_attention-*.whl" /tmp/s27-d1
inst ".carry/s27/d2/mlops_attention-*.whl" /tmp/s27-d2
inst ".carry/s27/d2c75s/mlops_attention-*.whl" /tmp/s27-c75s
gpu_info
attn_abn /tmp/s27- base d1 d2
ncu_prof d2-b8-l131072 /tmp/s27-d2 -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
attn_c75s /tmp/s27-c75s
attn_tests_tail /tmp/s27-d2 r27
