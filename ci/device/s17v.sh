#!/bin/bash
# Session 17, helper v (issue 5, top-k and top-k + top-p + min-p <= 15 us at B = 1; the vocab part of a GPU run, one
# H200, at most 200 s): the tkl forms (cluster8_tkl / cluster16_tkl, new named variants 27 / 28, planned nowhere): the
# tk forms (cluster16_tk is the planned B = 1 call for top-k and for the combination; cluster8_tk from B = 8 on) with
# each CTA's own top-k list built by CTA-local rounds before the max's cluster barrier and published with the max, so
# the gather's cluster barrier and the cluster-wide first round go. Wheels: .carry/s17v/new/ (sm90, 294e2a1 or the
# commit in $R/commit.txt) and .carry/s17v/before/ (the vocab sources of 7f1fba7 = 830f37e's, the code planned now),
# each into a fresh --target.
# (1) alone on the GPU, in turn before / new / before / new: the sampling bench (--quick --batches 1,8 --modes
#     top_k50,top_k50_top_p0.9_min_p0.05,temperature) of the planned call (the same kernels in both wheels: the
#     anchors), cluster16_tk / cluster8_tk (unchanged code in the new wheel: anchors too) and on the new wheel
#     cluster16_tkl / cluster8_tkl; CUPTI kernel times (KERNEL_TIMED: the planned call, the tk / tkl forms at B = 1 and
#     8); each at most 30 s, skipped where less than 15 s would be left before the tests' 80 s;
# (2) then at once: the tkl forms' GPU tests on the new wheel (test_vocab_sampler_gpu.py -k "tkl or
#     staged_variants_run_staged", test_vocab_gpu.py -k tkl: every tkl instance bit for bit against the host
#     emulation; two shards each) and compute-sanitizer racecheck / memcheck of the tkl sanitizer subset, bounded by END.
# Results under /tmp/rv17/ (one tarball: $OUT/r/v/v17.tgz, next to summary.txt and ab.txt); the summary, the tests, the
# sanitizer lines and the A/B table
# (one line a (case, impl) at B = 1 / 8: the two calls of each wheel, their mean, new - before, CUPTI) at the end.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rv17; rm -rf $R; mkdir -p $R; source ci/device/lib.sh
OUT=${OUT:-/tmp/out-s17v}; mkdir -p $OUT/r/v
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ] || [ "$1" = ci/device/bench_ab.py ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
END=${END:-195}
N=/tmp/s17v-new; B=/tmp/s17v-before; rm -rf $N $B
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s17v/new/ .carry/s17v/before/ > $R/wheels.txt 2>&1
inst ".carry/s17v/new/mlops_vocab-*.whl" $N
echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s17v/before/mlops_vocab-*.whl" $B
echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
VB=cluster16_tk,cluster8_tk                              # the before wheel has no tkl (bench_vocab.py rejects it)
VN=cluster16_tk,cluster8_tk,cluster16_tkl,cluster8_tkl
M=top_k50,top_k50_top_p0.9_min_p0.05,temperature
for t in before-1:$B:$VB new-1:$N:$VN before-2:$B:$VB new-2:$N:$VN; do  # alone on the GPU, interleaved
  IFS=: read -r side tgt var <<< "$t"
  name=bench-$side; lim=$((END - 80 - SECONDS)); [ $lim -gt 30 ] && lim=30
  if [ $lim -lt 15 ]; then echo "$name skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout $lim python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --batches 1,8 --modes $M --variants $var \
    > $R/$name.log 2>&1
  summ $name $?
done
L=$((END - 6 - SECONDS)); [ $L -gt 90 ] && L=90; [ $L -lt 30 ] && L=30
fshards test_vocab_sampler_gpu packages/vocab/tests/test_vocab_sampler_gpu.py $N 2 $L -k "tkl or staged_variants_run_staged"
fshards test_vocab_gpu packages/vocab/tests/test_vocab_gpu.py $N 2 $L -k tkl
ksanitize vocab $N $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tkl"  # at once with the tests
collect; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
# the B = 1 / 8 rows of each bench, one line a (case, impl): each wheel's two calls, their mean, new - before, and the
# CUPTI kernel µs (cluster16_tkl / cluster8_tkl have new calls only: compare them with the tk rows)
python3 ci/device/bench_ab.py "$R" > $R/ab.txt 2>&1
tar czf $OUT/r/v/v17.tgz -C /tmp rv17
cp $R/summary.txt $R/ab.txt $OUT/r/v/ 2>/dev/null
cat $R/summary.txt $R/tests-sorted.txt $R/sanitizer.txt $R/failures.txt $R/ab.txt 2>/dev/null
