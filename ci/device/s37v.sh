#!/bin/bash
# Session 37's sampler change (wide_near_pass: top-p's wide round near the max first), one H200 call, ~450 s. Carry
# .carry/s37v: before/ and new/ (the sm90 vocab wheels of 3217a9c and of the commit under test, `python3 -m nox -s
# gpu_build -- --tags sm90 --package vocab` in a worktree of each), stp / stp_old (bench/sample_timeline_probe.cu built
# here with nvcc 13.0 against the tree's header and against 3217a9c's in probe_old/).
# The new wheel lists in the near pass (MLOPS_SAMPLE_NEAR_LIST=1, the default); stp is built with =0 (the near pass,
# then build_candidates_staged), stp_list with the default: the probe separates the two.
# (1) the timeline probe old / new / list, twice, at B = 1 8 16 30 60 64 (row 0's phases; every row's span above B = 1: the
# B = 16 / 30 spreads are session 36's unrun question); (2) alone on the GPU, the sampling bench (--quick, B = 1, 8, 64)
# of the planned call and cluster8_tp3 / cluster16_tp3 named, for temperature (the anchor: unchanged code), top-p and
# penalties + top-p, before / new / before / new; (3) at once: both vocab GPU files whole on the new wheel (6 shards
# each) and compute-sanitizer racecheck / memcheck of the wide / tp sanitizer subset. Results in $OUT/v.tgz.
# `DRY=1 OUT=/tmp/x bash ci/device/s37v.sh` runs the shell logic with the GPU commands echoed.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
N=/tmp/s37v-new; B=/tmp/s37v-before; rm -rf $N $B
ab_install .carry/s37v
for k in 1 2; do
  for side in old new list; do
    exe=.carry/s37v/stp_$side; [ $side = new ] && exe=.carry/s37v/stp
    [ -n "$DRY" ] && exe="echo DRY $exe"
    timeout 90 $exe 1 8 16 30 60 64 > $R/timeline-$side-$k.log 2>&1; summ timeline-$side-$k $?
  done
done
bench_ab 90 --modes temperature,top_p0.9,penalties_top_p0.9 --variants cluster8_tp3,cluster16_tp3
fshards vocab packages/vocab/tests/test_vocab_gpu.py $N 6 300
fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $N 6 300
ksanitize vocab $N 300 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (wide or tp)"
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
