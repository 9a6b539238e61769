#!/bin/bash
# Session 34 (issue 5, the wide round's listing and gather; one H200 call, at most ~330 s): wheels .carry/s34v/before/
# (the sm90 vocab wheel of the session's base commit) and .carry/s34v/new/ (with the change), each into its own --target.
# (1) the timeline probe (packages/vocab/bench/sample_timeline_probe.cu) built twice on the machine: the kernel header
#     before the change with the same marks (.carry/probe_old/, carried) and after, run before / new;
# (2) alone on the GPU, before / new / before / new: the sampling bench (--quick; B = 1, 8, 64, every mode) of the
#     planned call and of cluster16_wide, cluster16_tp3, cluster8_tp3 (the forms whose wide round changed), each at most
#     40 s;
# (3) then at once: the GPU tests of the changed forms on the new wheel (both vocab GPU files, -k "wide or tp or
#     planned", two shards each) and compute-sanitizer racecheck / memcheck of the sanitizer subset of the wide / tp3
#     forms.
# Results under $OUT/r/v/ (tarred to $OUT/v.tgz); the summary lines are printed at the end. Since session 35 through
# lib.sh's ab_install / timeline_ab / bench_ab / fshards / ksanitize (the same commands as run 190 ran; the shards' JIT
# cache is /tmp/jit-sm90 and the timeline files timeline-{before,new}-1.log).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
N=/tmp/s34v-new; B=/tmp/s34v-before; rm -rf $N $B
ab_install .carry/s34v
timeline_ab 1
bench_ab 40 --variants cluster16_wide,cluster16_tp3,cluster8_tp3
for f in test_vocab_sampler_gpu test_vocab_gpu; do
  fshards $f packages/vocab/tests/$f.py $N 2 100 -k "wide or tp or planned"
done
ksanitize vocab $N 100 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (wide or tp3)"
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
