#!/bin/bash
# Session 14, the vocab sampler's spills (issue 5; the vocab part of GPU run 79, one H200, at most 240 s): the tk /
# tp forms (cluster8_tk / cluster16_tk / cluster8_tp / cluster16_tp) read the row's sanitized configuration and two
# of its tests from shared memory instead of holding them in registers across the kernel, so ptxas spills 20 / 16
# bytes where it spilled 50 / 46 (same integers, same tokens). Wheels: .carry/s14vocab/ (new, sm90) and
# .carry/s14vocab/before/ (11927c8's sampler, the kernels run 76 / 78 measured), each into a fresh --target.
# (1) alone on the GPU, in turn before / new / before / new: the sampling bench (--quick; B = 1, 8, 64; every mode:
#     top-k, top-p, top-k + top-p + min-p, penalties + top-p, temperature ...) of the planned call and cluster8_tk /
#     cluster16_tk / cluster8_tp by name; the planned non-top-k calls (cluster8_lean / cluster16_lean / the wide
#     forms) are unchanged code: the anchors between the calls;
# (2) then at once: the GPU tests of the changed kernels on the new wheel (both vocab GPU files, -k "_tk or _tp or
#     planned_variant": every tk / tp instance bit for bit against the host emulation, and the planned call per mode
#     at B = 1 / 8 / 64; two shards each) and compute-sanitizer racecheck / memcheck of the tk / tp sanitizer subset,
#     all bounded by the script's END (235 s; each bench at most 60 s, skipped where less than 40 s would be left
#     before the tests' 85 s).
# Results under $OUT/r/vocab/ (and $OUT/r/vocab.tgz); the summary lines are printed at the end.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/vocab; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
END=${END:-235}
N=/tmp/s14v-new; B=/tmp/s14v-before; rm -rf $N $B
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s14vocab/ .carry/s14vocab/before/ > $R/wheels.txt 2>&1
inst ".carry/s14vocab/mlops_vocab-*.whl" $N
echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s14vocab/before/mlops_vocab-*.whl" $B
echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
VAR=cluster8_tk,cluster16_tk,cluster8_tp  # cluster16_tp is planned nowhere: left out for time
for t in before-1:$B new-1:$N before-2:$B new-2:$N; do  # alone on the GPU, interleaved
  name=bench-${t%%:*}; lim=$((END - 85 - SECONDS)); [ $lim -gt 60 ] && lim=60
  if [ $lim -lt 40 ]; then echo "$name skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=${t#*:}:$PWD/tools/testing timeout $lim python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --variants $VAR > $R/$name.log 2>&1
  summ $name $?
done
L=$((END - 5 - SECONDS)); [ $L -gt 150 ] && L=150; [ $L -lt 30 ] && L=30
for fs in test_vocab_sampler_gpu.py:2 test_vocab_gpu.py:2; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n CUDA_CACHE_PATH=/tmp/jit-s14v timeout $L \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f -k "_tk or _tp or planned_variant" \
        > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
for tool in racecheck memcheck; do  # the tk / tp forms' sanitizer subset, at once with the tests
  ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $L compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and (_tk or _tp)" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $? ) &
done
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/vocab-*.log 2>/dev/null | sort | uniq -c > $R/sanitizer.txt
# the B = 1 / 64 rows of each bench, one line a (case, impl): the means of the two calls of each wheel side by side
python3 ci/device/bench_ab.py "$R" --skip-batch 8 > $R/ab.txt 2>&1
(cd $R/.. && tar czf vocab.tgz vocab)
cat $R/summary.txt $R/tests-sorted.txt $R/sanitizer.txt $R/failures.txt $R/ab.txt 2>/dev/null
