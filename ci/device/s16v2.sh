#!/bin/bash
# Session 16, helper v2 (issue 5, top-p at B = 64 <= 60 us; the vocab part of a GPU run, one H200, at most 150 s): the
# tpl forms (cluster8_tpl / cluster16_tpl, new named variants, planned nowhere): the tp3 forms (cluster8_tp3 is the
# planned B = 64 top-p call) with the candidate list built in the wide pass under a bound kWlSpan * T below the max,
# compacted to the crossing bin and above where it covers it, so the second pass over the staged slice
# (build_candidates_tk) goes. Wheels: .carry/s16v2b/new/ (sm90, the commit in $R/commit.txt) and .carry/s16v2b/before/
# (830f37e's: HEAD's vocab sources before the change), each into a fresh --target.
# (1) alone on the GPU, in turn before / new / before / new: the sampling bench (--quick --batches 8,64 --modes
#     top_p0.9,penalties_top_p0.9,temperature) of the planned call (the same kernels in both wheels: the anchors),
#     cluster8_tp3 (unchanged code in the new wheel: an anchor too) and on the new wheel cluster8_tpl / cluster16_tpl;
#     CUPTI kernel times at B = 64 for the planned call, cluster8_tp3 and cluster8_tpl; each at most 22 s, skipped
#     where less than 12 s would be left before the tests' 45 s;
# (2) then at once: the tpl forms' GPU tests on the new wheel (test_vocab_sampler_gpu.py -k "tpl or
#     staged_variants_run_staged", test_vocab_gpu.py -k tpl: every tpl instance bit for bit against the host emulation;
#     two shards each) and compute-sanitizer racecheck / memcheck of the tpl sanitizer subset, bounded by END (150 s).
# Results under /tmp/rv2/ (one tarball: $OUT/v2.tgz); the summary, the tests, the sanitizer lines and the A/B table.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rv2; rm -rf $R; mkdir -p $R; source ci/device/lib.sh
OUT=${OUT:-/tmp/out-s16v2}; mkdir -p $OUT
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ] || [ "$1" = ci/device/bench_ab.py ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
END=${END:-150}
N=/tmp/s16v2-new; B=/tmp/s16v2-before; rm -rf $N $B
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s16v2b/new/ .carry/s16v2b/before/ > $R/wheels.txt 2>&1
inst ".carry/s16v2b/new/mlops_vocab-*.whl" $N
echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s16v2b/before/mlops_vocab-*.whl" $B
echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
VB=cluster8_tp3                                   # the before wheel has no tpl (bench_vocab.py rejects it)
VN=cluster8_tp3,cluster8_tpl,cluster16_tpl
M=top_p0.9,penalties_top_p0.9,temperature
for t in before-1:$B:$VB new-1:$N:$VN before-2:$B:$VB new-2:$N:$VN; do  # alone on the GPU, interleaved
  IFS=: read -r side tgt var <<< "$t"
  name=bench-$side; lim=$((END - 45 - SECONDS)); [ $lim -gt 22 ] && lim=22
  if [ $lim -lt 12 ]; then echo "$name skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout $lim python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --batches 8,64 --modes $M --variants $var \
    > $R/$name.log 2>&1
  summ $name $?
done
L=$((END - 6 - SECONDS)); [ $L -gt 90 ] && L=90; [ $L -lt 30 ] && L=30
fshards test_vocab_sampler_gpu packages/vocab/tests/test_vocab_sampler_gpu.py $N 2 $L -k "tpl or staged_variants_run_staged"
fshards test_vocab_gpu packages/vocab/tests/test_vocab_gpu.py $N 2 $L -k tpl
ksanitize vocab $N $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tpl"  # at once with the tests
collect; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
# the B = 8 / 64 rows of each bench, one line a (case, impl): each wheel's two calls, their mean, new - before, and the
# CUPTI kernel µs (cluster8_tpl / cluster16_tpl have new calls only: compare them with the tp3 rows)
python3 ci/device/bench_ab.py "$R" > $R/ab.txt 2>&1
tar czf $OUT/v2.tgz -C /tmp rv2
cat $R/summary.txt $R/tests-sorted.txt $R/sanitizer.txt $R/failures.txt $R/ab.txt 2>/dev/null
