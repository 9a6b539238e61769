#!/bin/bash
# Session 34, second change, NOT KEPT (packages/vocab/bench/probes/stage_roll.patch, apply on 4d408b8; issue 5, the
# cluster16 forms' staging measured from the stored copy in a rolled loop: slower, run 193); one
# H200 call, ~400 s): wheels .carry/s34r/before/ (42a330f's sm90 vocab wheel) and .carry/s34r/new/ (with the change).
# (1) the timeline probe built from the header before (.carry/probe_old/: 4d408b8's, which has the marks) and after,
#     run before / new / before / new;
# (2) the sampling bench of the planned call at B = 1 and 8 (every mode; --quick), before / new / before / new;
# (3) at once: both vocab GPU files whole on the new wheel (6 shards each) and compute-sanitizer racecheck / memcheck
#     of the sanitizer subset's cluster16 forms.
# Results under $OUT/r/v/ (tarred to $OUT/v.tgz); the summary lines are printed at the end. Since session 35 through
# lib.sh's ab_install / timeline_ab / bench_ab / fshards / ksanitize (the same commands as run 193 ran; the shards' JIT
# cache is /tmp/jit-sm90 and the timeline files .log).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
N=/tmp/s34r-new; B=/tmp/s34r-before; rm -rf $N $B
ab_install .carry/s34r
timeline_ab 2
bench_ab 60 --batches 1,8
for f in test_vocab_gpu test_vocab_sampler_gpu; do fshards $f packages/vocab/tests/$f.py $N 6 300; done
ksanitize vocab $N 300 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and cluster16"
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
