#!/bin/bash
# Session 37's sampler changes (wide_near_pass, then bin_first / list_near), one H200 call, ~300 s. Carry .carry/s37v:
# before/ and new/ (sm90 vocab wheels: `python3 -m nox -s gpu_build -- --tags sm90 --package vocab` in a worktree of the
# commit, new/ with CUDAFLAGS="-DMLOPS_SAMPLE_NEAR_MASK=1 -DMLOPS_SAMPLE_BIN_FIRST=1" in the environment: a fresh
# worktree, so its build dir takes the flags), and timeline probes built here with nvcc 13.0 from
# bench/sample_timeline_probe.cu (F="-O3 -std=c++17 -arch=sm_90 -fmad=false -Ipackages/vocab/src
# -Ipackages/vocab/include -Ipackages/common/include"; nvcc [-D...] $F -o .carry/s37v/stp_<side> ...): stp_<side> for each
# side of PROBES, stp for "new".
# (1) the probes named in PROBES, twice, at B = 1 8 16 30 60 64 (row 0's phases; every row's span above B = 1);
# (2) alone on the GPU, the sampling bench (--quick, B = 1, 8, 64) of the planned call and cluster8_tp3 / cluster16_tp3
# named, for temperature (the anchor: unchanged code), top-p and penalties + top-p, before / new / before / new; (3) at
# once: both vocab GPU files whole on the new wheel (6 shards each) and compute-sanitizer (SAN: default "racecheck
# memcheck") of the wide / tp sanitizer subset. Results in $OUT/v.tgz.
# Run 199: 3217a9c / 63719fe wheels, PROBES="old new list" (stp_list: the near pass listing by ballots, since taken
# out); run 200: 3217a9c / e80c246, PROBES="new g2" SAN=memcheck (stp_g2: -DMLOPS_SAMPLE_NEAR_G=2, since taken out).
# Next (prepared in session 37; no machine was lent after run 200): before = 45c4c33's default build (the near pass:
# e80c246's kernels), new = 45c4c33 with both macros, PROBES="old bf mask new" (stp_old: default; stp_bf:
# -DMLOPS_SAMPLE_BIN_FIRST=1; stp_mask: -DMLOPS_SAMPLE_NEAR_MASK=1; stp: both). If new wins and its tests pass, set
# both macros' defaults to 1 in sample_cluster_wide_top_p.cuh (or the one that wins, by the probe).
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
ksanitize vocab $N 300 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (wide or tp)"
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
