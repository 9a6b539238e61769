#!/bin/bash
# Session 16 (issue 5, sampling <= 15 us at B = 1; the vocab helper's part of a GPU run, one H200, at most 240 s): the
# tke forms (cluster8_tke / cluster16_tke, new named variants, planned nowhere): the tk forms (cluster16_tk is the
# planned B = 1 call for top-k and for top-k + top-p + min-p; cluster8_tk above B = 7) with the staging's first
# 16-byte loads issued before the row's configuration is first used (GPU run 90's ncu: the tk form issued them only
# after the configuration's load, the fused count's clear and a CTA barrier). Wheels: .carry/s16v/new/ (sm90, the
# commit in $R/commit.txt) and .carry/s16v/before/ (7ecf8ca's, the code planned now), each into a fresh --target.
# (1) alone on the GPU, in turn before / new / before / new: the sampling bench (--quick --batches 1,8: every mode) of
#     the planned call (the same kernels in both wheels: the anchors), cluster16_tk / cluster8_tk (unchanged code in
#     the new wheel: anchors too) and on the new wheel cluster16_tke / cluster8_tke; CUPTI kernel times for the
#     planned call and the cluster16 tk / tke forms at B = 1, the cluster8 ones at B = 8 (54 profiler sessions a new
#     call; run 85's took 45 and ~135 timings within 30 s); each at most 34 s, skipped where less than 20 s would be
#     left before the tests' 80 s;
# (2) then at once: the tke forms' GPU tests on the new wheel (test_vocab_sampler_gpu.py -k "tke or
#     staged_variants_run_staged", test_vocab_gpu.py -k tke: every tke instance bit for bit against the host emulation;
#     two shards each) and compute-sanitizer racecheck / memcheck of the tke sanitizer subset, bounded by END (240 s).
# Results under /tmp/rv/ (one tarball: $OUT/v.tgz); the summary, the tests, the sanitizer lines and the A/B table
# (one line a (case, impl) at B = 1 / 8: the two calls of each wheel, their mean, new - before, CUPTI) at the end.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rv; rm -rf $R; mkdir -p $R; source ci/device/lib.sh
OUT=${OUT:-/tmp/out-s16v}; mkdir -p $OUT
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ] || [ "$1" = ci/device/bench_ab.py ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
END=${END:-240}
N=/tmp/s16v-new; B=/tmp/s16v-before; rm -rf $N $B
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s16v/new/ .carry/s16v/before/ > $R/wheels.txt 2>&1
inst ".carry/s16v/new/mlops_vocab-*.whl" $N
echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s16v/before/mlops_vocab-*.whl" $B
echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
VB=cluster16_tk,cluster8_tk                              # the before wheel has no tke (bench_vocab.py rejects it)
VN=cluster16_tk,cluster8_tk,cluster16_tke,cluster8_tke
for t in before-1:$B:$VB new-1:$N:$VN before-2:$B:$VB new-2:$N:$VN; do  # alone on the GPU, interleaved
  IFS=: read -r side tgt var <<< "$t"
  name=bench-$side; lim=$((END - 80 - SECONDS)); [ $lim -gt 34 ] && lim=34
  if [ $lim -lt 20 ]; then echo "$name skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout $lim python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --batches 1,8 --variants $var > $R/$name.log 2>&1
  summ $name $?
done
L=$((END - 8 - SECONDS)); [ $L -gt 90 ] && L=90; [ $L -lt 30 ] && L=30
fshards test_vocab_sampler_gpu packages/vocab/tests/test_vocab_sampler_gpu.py $N 2 $L -k "tke or staged_variants_run_staged"
fshards test_vocab_gpu packages/vocab/tests/test_vocab_gpu.py $N 2 $L -k tke
ksanitize vocab $N $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tke"  # at once with the tests
collect; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
# the B = 1 / 8 rows of each bench, one line a (case, impl): each wheel's two calls, their mean, new - before, and the
# CUPTI kernel µs (cluster16_tke / cluster8_tke have new calls only: compare them with the tk rows)
python3 ci/device/bench_ab.py "$R" > $R/ab.txt 2>&1
tar czf $OUT/v.tgz -C /tmp rv
cat $R/summary.txt $R/tests-sorted.txt $R/sanitizer.txt $R/failures.txt $R/ab.txt 2>/dev/null
