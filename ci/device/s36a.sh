#!/bin/bash
# Session 36's attention change (the partials' m / l as one 32-byte sector a refine item, ml_index), prepared without
# a device machine (none was lent in session 36): an A/B through s29a.sh, ~330 s. Carry `.carry/s36a` (build each wheel
# with `python3 -m nox -s gpu_build -- --tags sm90 --package attention` in a worktree of its commit, c75s likewise):
#   .carry/s36a/before/mlops_attention-*.whl     the sm90 attention wheel of e20f1a4 (before the change)
#   .carry/s36a/ml/mlops_attention-*.whl         the sm90 attention wheel of the commit under test
#   .carry/s36a/ml-c75s/mlops_attention-*.whl    its c75s wheel (compute_75's code path as sm_90 SASS)
# What runs (s29a.sh): bench_attention.py's planner cases at B 1 / 8 x L 4K / 16K / 128K for before and ml, four calls
# each interleaved (forward, backward, forward, backward); ncu --set full of ml's kEarly refine at B8 L128K 3+3 exact
# (the line to read: the global stores' bytes a sector, 28.9 in run 172); then the whole test_attention_gpu.py on ml
# (5 shards) with racecheck / memcheck of s17a_sanitize.py, and the c75s wheel's subset. Results $OUT/summary.txt and
# $OUT/run$RUN.tgz. `DRY=1 OUT=/tmp/x bash ci/device/s36a.sh` runs the shell logic with the GPU commands echoed.
RUN=${RUN:-195}
W="before=.carry/s36a/before ml=.carry/s36a/ml" T=ml T_C75S=.carry/s36a/ml-c75s NCU_REF=ml N=run$RUN \
  BENCH_ARGS="--lengths 4096,16384,131072 --batches 1,8" END_S=${END_S:-330} exec bash ci/device/s29a.sh
