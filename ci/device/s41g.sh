#!/bin/bash
# Prepared in session 40 for the next device call. Run once, cut short: GPU run 206 (session 40, an H100, `END=200`, the
# budget's last 188 s): the bench A/B came back in its logs (docs/vocab.md "Session 40"), the probes and tests did not. list_near's K loads a lane a round on the global-slice
# forms (MLOPS_SAMPLE_GSL_LIST_LOADS, sample_cluster_wide_top_p.cuh), and the H200 figures of session 40's default build
# (runs 203 - 205 were on an H100). Carry .carry/s41g, built here from 6405a57 in a fresh worktree: before/ (the default
# build: K = 1) and new/ (CUDAFLAGS=-DMLOPS_SAMPLE_GSL_LIST_LOADS=4), sm90 vocab wheels of `python3 -m nox -s gpu_build
# -- --tags sm90 --package vocab` (a fresh build dir each), and the timeline probes stp_before / stp_new (nvcc [-D...]
# -O3 -std=c++17 -arch=sm_90 -fmad=false -I... bench/sample_timeline_probe.cu).
# 1. the probes before / new in turn, 3 rounds, at B = 64 and 32; 2. ncu of new's top-p cluster2_tp3g launch (B = 64,
# launch 110; --kernel-name-base mangled); 3. the sampling bench before / new / before / new (B = 1, 8, 31, 32, 40, 48,
# 64, 66; the five modes; the planned call and cluster2_tp3g / cluster8_tp3 named: B = 31 - 39 is the planner's open
# question, docs/vocab.md "Session 40"); 4. test_vocab_sampler_gpu.py whole on new (6 shards) and the tp3g sanitizer
# subset, to END s (580 unless set). If new wins and its tests pass: MLOPS_SAMPLE_GSL_LIST_LOADS's default to 4.
# Results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x bash ci/device/s41g.sh` runs the shell logic with the GPU commands echoed.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
# $R lies outside $OUT and goes back as $OUT/v.tgz, remade after each phase (snap): a call cut by its time limit returns
# only the first few files under $OUT (run 206 lost its probes' logs so), but the last v.tgz whole.
R=/tmp/s41g-r/v; rm -rf $R; mkdir -p $R $OUT; source ci/device/lib.sh; dry_stubs
snap() { (cd $R/.. && tar czf $OUT/v.tgz v); }
[ -n "$DRY" ] && ncu() { echo "DRY ncu $*"; }
C=.carry/s41g N=/tmp/s41g-new B=/tmp/s41g-before
rm -rf $N $B; ab_install $C
for k in 1 2 3; do
  for side in before new; do
    exe=$C/stp_$side; [ -n "$DRY" ] && exe="echo DRY $exe"
    timeout 60 $exe 64 32 > $R/timeline-$side-$k.log 2>&1; summ timeline-$side-$k $?
  done
done
snap
exe=$C/stp_new; [ -n "$DRY" ] && exe="echo DRY $exe"
timeout 150 ncu --set full --import-source no --kernel-name-base mangled -k regex:ILi2ELi1024ENS1_8Tp3gForm \
  --launch-skip 110 -c 1 -o $R/ncu-new $exe 64 > $R/ncu-new.log 2>&1; summ ncu-new $?
ncu -i $R/ncu-new.ncu-rep --page details --print-units base > $R/ncu-new-details.txt 2>&1
ncu -i $R/ncu-new.ncu-rep --page source --csv --print-source sass > $R/ncu-new-source.csv 2>&1
python3 ci/device/ncu_digest.py $R/ncu-new-source.csv --top 30 > $R/ncu-new-digest.txt 2>&1
rm -f $R/ncu-new-source.csv $R/ncu-new.ncu-rep
snap
bench_ab 100 --batches 1,8,31,32,40,48,64,66 --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 \
  --variants cluster2_tp3g,cluster8_tp3
snap
L=$((${END:-580} - SECONDS)); [ $L -gt 300 ] && L=300
if [ $L -ge 100 ]; then
  fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $N 6 $L
  ksanitize vocab $N $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tp3g"
fi
collect
python3 ci/device/bench_ab.py $R > $R/ab.txt 2>&1
snap
cat $R/gpu.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt
