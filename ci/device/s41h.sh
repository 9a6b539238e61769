#!/bin/bash
# Session 41: the global-slice forms with each slice's first quads staged in shared memory (MLOPS_SAMPLE_GSL_STAGE,
# sample_cluster_kernel.cuh; prepared, off) against the default. Carry .carry/s41h, built here: before/ (the default
# build of 6405a57, whose kernels are HEAD's: s41g's before/), new/ (5d7b160 with CUDAFLAGS=-DMLOPS_SAMPLE_GSL_STAGE=1),
# sm90 vocab wheels of `python3 -m nox -s gpu_build -- --tags sm90 --package vocab` in a fresh worktree, and the
# timeline probes stp_before / stp_new (nvcc [-DMLOPS_SAMPLE_GSL_STAGE=1] -O3 -std=c++17 -arch=sm_90 -fmad=false -I...
# bench/sample_timeline_probe.cu). 1. the probes before / new in turn, 3 rounds, at B = 64 and 32; 2. ncu of both
# sides' top-p cluster2_tp3g launch (B = 64, launch 110; the L2 hit rate and DRAM bytes: run 205's 34 % / 1.7x the
# rows); 3. the sampling bench before / new / before / new (B = 1, 32, 48, 64; the five modes; the planned call and
# cluster2_tp3g / cluster8_tp3 named); 4. test_vocab_sampler_gpu.py whole on new (6 shards) and the tp3g sanitizer
# subset, to END s (560 unless set). Results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x bash ci/device/s41h.sh`: the shell logic.
# TESTS (optional): the GPU test files the shards run, test_vocab_sampler_gpu.py unless set (session 42).
# Session 42's prepared two-sided call (never run: s41j.sh with .carry/s42b, a third side, ran instead as run 213):
# CARRY=.carry/s42a PROBE_B="64 1" NCU=0 BATCHES=1,8,48,64 SANK=tp3g END=540
# TESTS="packages/vocab/tests/test_vocab_sampler_gpu.py packages/vocab/tests/test_vocab_gpu.py"
# (before/ 33da4dc's wheel and probe, the default's kernels; new/ f413c72's with -DMLOPS_SAMPLE_GSL_NIBBLES=1, the near
# codes on: docs/vocab.md "Session 42").
# Run 209 (session 41, the wide rounds' bins a copy a warp, 2267461): CARRY=.carry/s41i PROBE_B="1 64" NCU=0
# BATCHES=1,8,32,48,64 SANK="tp3g or wide" (before/ the same 6405a57 wheel, new/ 2267461's; stp_before the row-marks
# probe at the kernels before, stp_new at 2267461).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
# $R lies outside $OUT and goes back as $OUT/v.tgz, remade after each phase (snap): a call cut by its time limit returns
# only the first few files under $OUT, but the last v.tgz whole.
R=/tmp/s41h-r/v; rm -rf $R; mkdir -p $R $OUT; source ci/device/lib.sh; dry_stubs
snap() { (cd $R/.. && tar czf $OUT/v.tgz v); }
[ -n "$DRY" ] && ncu() { echo "DRY ncu $*"; }
C=${CARRY:-.carry/s41h} N=/tmp/s41h-new B=/tmp/s41h-before
rm -rf $N $B; ab_install $C
for k in 1 2 3; do
  for side in before new; do
    exe=$C/stp_$side; [ -n "$DRY" ] && exe="echo DRY $exe"
    timeout 60 $exe ${PROBE_B:-64 32} > $R/timeline-$side-$k.log 2>&1; summ timeline-$side-$k $?
  done
done
snap
for side in before new; do
  [ "${NCU:-1}" = 1 ] || break
  exe=$C/stp_$side; [ -n "$DRY" ] && exe="echo DRY $exe"
  timeout 100 ncu --set full --import-source no --kernel-name-base mangled -k regex:ILi2ELi1024ENS1_8Tp3gForm \
    --launch-skip 110 -c 1 -o $R/ncu-$side $exe 64 > $R/ncu-$side.log 2>&1; summ ncu-$side $?
  ncu -i $R/ncu-$side.ncu-rep --page details --print-units base > $R/ncu-$side-details.txt 2>&1
  ncu -i $R/ncu-$side.ncu-rep --page source --csv --print-source sass > $R/ncu-$side-source.csv 2>&1
  python3 ci/device/ncu_digest.py $R/ncu-$side-source.csv --top 30 > $R/ncu-$side-digest.txt 2>&1
  rm -f $R/ncu-$side-source.csv $R/ncu-$side.ncu-rep
done
snap
bench_ab 100 --batches ${BATCHES:-1,32,48,64} --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 \
  --variants cluster2_tp3g,cluster8_tp3
snap
L=$((${END:-560} - SECONDS)); [ $L -gt 300 ] && L=300
if [ $L -ge 100 ]; then
  fshards vocab-sampler "${TESTS:-packages/vocab/tests/test_vocab_sampler_gpu.py}" $N 6 $L
  ksanitize vocab $N $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (${SANK:-tp3g})"
fi
collect
python3 ci/device/bench_ab.py $R > $R/ab.txt 2>&1
snap
cat $R/gpu.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt
