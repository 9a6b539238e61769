#!/bin/bash
# Session 14, part 2 (issue 5, top-p at B = 64; the vocab part of GPU run 80, one H200, at most 150 s): the tp2 forms
# (cluster8_tp2 / cluster16_tp2, new named variants, planned nowhere) against the tp forms they are built on. Wheels:
# .carry/s14vocab2/ (new, sm90, the commit in $R/commit.txt) and .carry/s14vocab2/before/ (6b8be2f's, run 79's "new":
# the tp forms as planned now), each into a fresh --target.
# (1) alone on the GPU, in turn before / new / before / new: the sampling bench (--quick; B = 1, 8, 64; every mode)
#     of the planned call (the same kernels in both wheels: the anchors), cluster8_tp / cluster16_tp (unchanged code
#     in the new wheel: anchors too), and on the new wheel cluster8_tp2 / cluster16_tp2 (kernel time by CUPTI for
#     cluster8_tp2 at B = 64); each at most 25 s, skipped where less than 20 s would be left before the tests' 60 s;
# (2) then at once: the GPU tests of the tp2 forms on the new wheel (both vocab GPU files, -k "tp2": every tp2
#     instance bit for bit against the host emulation, the two peaks over a bulk, per-row configurations with
#     penalties, graph replay; two shards each) and compute-sanitizer racecheck / memcheck of the tp2 sanitizer
#     subset, all bounded by the script's END (150 s).
# Results under $OUT/r/vocab2/ (and $OUT/r/vocab2.tgz); the summary lines are printed at the end.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/vocab2; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
END=${END:-150}
N=/tmp/s14v2-new; B=/tmp/s14v2-before; rm -rf $N $B
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s14vocab2/ .carry/s14vocab2/before/ > $R/wheels.txt 2>&1
inst ".carry/s14vocab2/mlops_vocab-*.whl" $N
echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s14vocab2/before/mlops_vocab-*.whl" $B
echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
VB=cluster8_tp,cluster16_tp                              # the before wheel has no tp2 (bench_vocab.py rejects it)
VN=cluster8_tp,cluster16_tp,cluster8_tp2,cluster16_tp2
for t in before-1:$B:$VB new-1:$N:$VN before-2:$B:$VB new-2:$N:$VN; do  # alone on the GPU, interleaved
  IFS=: read -r side tgt var <<< "$t"
  name=bench-$side; lim=$((END - 60 - SECONDS)); [ $lim -gt 25 ] && lim=25
  if [ $lim -lt 20 ]; then echo "$name skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout $lim python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --variants $var > $R/$name.log 2>&1
  summ $name $?
done
L=$((END - 5 - SECONDS)); [ $L -gt 90 ] && L=90; [ $L -lt 30 ] && L=30
for fs in test_vocab_sampler_gpu.py:2 test_vocab_gpu.py:2; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n CUDA_CACHE_PATH=/tmp/jit-s14v2 timeout $L \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f -k "tp2" \
        > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
for tool in racecheck memcheck; do  # the tp2 forms' sanitizer subset, at once with the tests
  ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $L compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and tp2" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $? ) &
done
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/vocab-*.log 2>/dev/null | sort | uniq -c > $R/sanitizer.txt
# the B = 1 / 64 rows of each bench, one line a (case, impl): the means of the two calls of each wheel side by side
# (cluster8_tp2 / cluster16_tp2 have new calls only: compare them with cluster8_tp / cluster16_tp's rows)
python3 ci/device/bench_ab.py "$R" --skip-batch 8 > $R/ab.txt 2>&1
(cd $R/.. && tar czf vocab2.tgz vocab2)
cat $R/summary.txt $R/tests-sorted.txt $R/sanitizer.txt $R/failures.txt $R/ab.txt 2>/dev/null
