#!/bin/bash
# Session 38's sampler calls (prepared without a device: none was lent in sessions 37 (after run 200) and 38), in two
# parts of one H200 session, ~450 s each. Carry .carry/s38g: before/ and new/ (sm90 vocab wheels of one commit:
# `python3 -m nox -s gpu_build -- --tags sm90 --package vocab` in a fresh worktree, new/ with
# CUDAFLAGS="-DMLOPS_SAMPLE_NEAR_MASK=1 -DMLOPS_SAMPLE_BIN_FIRST=1" in the environment), and timeline probes built here
# from bench/sample_timeline_probe.cu of the same commit (F="-O3 -std=c++17 -arch=sm_90 -fmad=false
# -Ipackages/vocab/src -Ipackages/vocab/include -Ipackages/common/include"; nvcc [-D...] $F -o .carry/s38g/stp_<side>):
# stp_old (no -D), stp_bf (-DMLOPS_SAMPLE_BIN_FIRST=1), stp_mask (-DMLOPS_SAMPLE_NEAR_MASK=1), stp (both).
# PART=a (session 37's question): the probes named in PROBES (default "old bf mask new") at B = 1 8 64, the
#   sampling bench before / new / before / new (temperature as the anchor, top-p, penalties + top-p; B = 1, 8, 64; the
#   planned call and cluster8_tp3 / cluster16_tp3 named), both vocab GPU files whole on the new wheel (6 shards each)
#   and compute-sanitizer (SAN) of the wide / tp sanitizer subset. If new wins and its tests pass: the macros'
#   defaults to 1 in src/sample_cluster_wide_top_p.cuh (or the one the probe says wins). The probes' GSL cases (B = 8,
#   64) time list_near's two-word mask on the global-slice forms too (stp_mask / stp against stp_old).
# PART=b (the global-slice forms, cluster2_tp3g / cluster4_tp3g): the before wheel (the macros' defaults) alone, two
#   rounds of the sampling bench at B = 8, 16, 32, 64 for temperature, top-k 50, the combination, top-p and
#   penalties + top-p, the planned call and cluster8_tp3 / cluster2_tp3g (_t512) / cluster4_tp3g named; the probe stp_old
#   (its tp3g cases: row spans at B = 32 / 64, one round of rows?); their own GPU tests (-k tp3g) and racecheck /
#   memcheck of their sanitizer subset. If they win: the planner (mlops_sample_plan_configs) takes them by B.
# .carry/s38g as left by session 38: wheels and probes of 4414356. Ran in session 39: run 201 (PART=b ROUNDS=1 TLIM=200)
# and run 202 (PART=a), docs/vocab.md "Session 39"; HEAD's default build since equals new/ (both macros on).
# Results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x PART=a bash ci/device/s38g.sh` runs the shell logic with the GPU commands
# echoed.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
N=/tmp/s38g-new; B=/tmp/s38g-before; rm -rf $N $B
ab_install .carry/s38g
probe() {  # probe SIDE LABEL BATCHES...
  local exe=.carry/s38g/stp_$1; [ $1 = new ] && exe=.carry/s38g/stp
  [ -n "$DRY" ] && exe="echo DRY $exe"
  timeout 120 $exe "${@:3}" > $R/timeline-$2.log 2>&1; summ timeline-$2 $?
}
if [ "${PART:-a}" = a ]; then
  for k in 1 2; do
    for side in ${PROBES:-old bf mask new}; do probe $side $side-$k 1 8 64; done
  done
  bench_ab 90 --modes temperature,top_p0.9,penalties_top_p0.9 --variants cluster8_tp3,cluster16_tp3
  fshards vocab packages/vocab/tests/test_vocab_gpu.py $N 6 300
  fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $N 6 300
  ksanitize vocab $N 300 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (wide or tp)"
else
  probe old gsl 8 16 32 64
  for k in $(seq ${ROUNDS:-2}); do  # ROUNDS=1 where the device budget left is short (session 39)
    MLOPS_BENCH_OUT=$R/bench-gsl-$k PYTHONPATH=$B:$PWD/tools/testing timeout 150 python3 \
      packages/vocab/bench/bench_vocab.py --only sampling --quick --batches 8,16,32,64 \
      --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 \
      --variants cluster8_tp3,cluster2_tp3g,cluster4_tp3g,cluster2_tp3g_t512 > $R/bench-gsl-$k.log 2>&1
    summ bench-gsl-$k $?
  done
  fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $B 4 ${TLIM:-300} -k tp3g
  ksanitize vocab $B ${TLIM:-300} packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tp3g"
fi
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
