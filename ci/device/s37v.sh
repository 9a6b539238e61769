#!/bin/bash
# Session 37's sampler change (wide_near_pass: top-p's wide round near the max first), one H200 call, ~250 - 450 s.
# Carry .carry/s37v: before/ and new/ (the sm90 vocab wheels of 3217a9c and of the commit under test, `python3 -m nox
# -s gpu_build -- --tags sm90 --package vocab` in a worktree of each), and timeline probes built here with nvcc 13.0
# (bench/sample_timeline_probe.cu): stp_old against 3217a9c's header (probe_old/), stp against the tree's, stp_<x>
# against the tree's with a -D of a probe-only form (run 199: stp_list, -DMLOPS_SAMPLE_NEAR_LIST=1, since taken out;
# run 200: stp_g2, -DMLOPS_SAMPLE_NEAR_G=2).
# (1) the probes named in PROBES (default "old new"), twice, at B = 1 8 16 30 60 64 (row 0's phases; every row's span
# above B = 1); (2) alone on the GPU, the sampling bench (--quick, B = 1, 8, 64) of the planned call and cluster8_tp3 /
# cluster16_tp3 named, for temperature (the anchor: unchanged code), top-p and penalties + top-p, before / new / before
# / new; (3) at once: both vocab GPU files whole on the new wheel (6 shards each) and compute-sanitizer (SAN: default
# "racecheck memcheck") of the wide / tp sanitizer subset. Results in $OUT/v.tgz.
# Run 199: PROBES="old new list"; run 200: PROBES="new g2" SAN=memcheck; run 201: PROBES="old near bf new" (stp_near: the
# near pass alone, e80c246; stp_bf: bin_first too, acc78b0; stp and the new wheel: list_near too).
# `DRY=1 OUT=/tmp/x bash ci/device/s37v.sh` runs the shell logic with the GPU commands echoed.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
N=/tmp/s37v-new; B=/tmp/s37v-before; rm -rf $N $B
ab_install .carry/s37v
for k in 1 2; do
  for side in ${PROBES:-old new}; do
    exe=.carry/s37v/stp_$side; [ $side = new ] && exe=.carry/s37v/stp
    [ -n "$DRY" ] && exe="echo DRY $exe"
    timeout 90 $exe 1 8 16 30 60 64 > $R/timeline-$side-$k.log 2>&1; summ timeline-$side-$k $?
  done
done
bench_ab 90 --modes temperature,top_p0.9,penalties_top_p0.9 --variants cluster8_tp3,cluster16_tp3
fshards vocab packages/vocab/tests/test_vocab_gpu.py $N 6 300
fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $N 6 300
for tool in ${SAN:-racecheck memcheck}; do
  ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and (wide or tp)" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $? ) &
done
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
