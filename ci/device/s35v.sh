#!/bin/bash
# Session 35's sampler change (45abaeb: the lean weight's n by one FFMA), prepared without a device machine (none was
# lent in session 35): the next session's first H200 call, ~350 s. Carry (build each with `python3 -m nox -s gpu_build
# -- --tags sm90 --package vocab` in a worktree of its commit; session 35's other change, attention's quant_row, left
# every attention kernel's sm_90 SASS as it was, so it needs no call):
#   .carry/s35v/before/mlops_vocab-*.whl         the sm90 vocab wheel of fc5411c (before the change)
#   .carry/s35v/new/mlops_vocab-*.whl            the sm90 vocab wheel of the commit under test
#   .carry/probe_old/sample_cluster_kernel.cuh   `git show fc5411c:packages/vocab/src/sample_cluster_kernel.cuh`
# (1) the timeline probe before / new, twice (timeline_ab), and bench/cluster_exchange_probe.cu (a 64-bit value and
# 256 counts exchanged by a cluster's CTAs: pulled after the cluster barrier, as the sampler does, or pushed to
# mbarriers; results checked; 60 s at most, in case a wait never completes); (2) alone on the GPU, the sampling bench
# (--quick; B = 1, 8, 64, every mode) of the planned call and cluster8_tp3, before / new / before / new (bench_ab);
# (3) at once: both vocab GPU files whole on the new wheel (6 shards each: every lean kernel changed) and
# compute-sanitizer racecheck / memcheck of the lean / tp3 sanitizer subset. Results under $OUT/r/v/ (tarred to
# $OUT/v.tgz); the summary lines printed at the end.
# Then, if device time is left, ci/device/s35n.sh (ncu of the B = 64 picks on the same wheel: which pipe limits them).
# `DRY=1 OUT=/tmp/x bash ci/device/s35v.sh` runs the shell logic with the GPU commands echoed (lib.sh dry_stubs).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
N=/tmp/s35v-new; B=/tmp/s35v-before; rm -rf $N $B
ab_install .carry/s35v
[ -n "$DRY" ] && nvcc() { echo "DRY nvcc $*"; }
timeline_ab 2
# the cluster exchange probe (session 35, never run yet): pull after a cluster barrier against pushes to mbarriers
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cxp packages/vocab/bench/cluster_exchange_probe.cu > $R/exchange.log 2>&1 &&
  timeout 60 /tmp/cxp >> $R/exchange.log 2>&1
summ exchange $?
bench_ab 60 --variants cluster8_tp3
fshards vocab packages/vocab/tests/test_vocab_gpu.py $N 6 300
fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $N 6 300
ksanitize vocab $N 300 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (lean or tp3)"
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
