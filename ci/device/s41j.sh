#!/bin/bash
# Session 41, run 210: three sm90 vocab wheels side by side on the sampler's planned calls: before/ (6405a57's default:
# HEAD's kernels before session 41), new/ (2bf0ef7: the near bins two copies on the global-slice forms, the full
# round's bins carrying), newk/ (2bf0ef7 with CUDAFLAGS=-DMLOPS_SAMPLE_GSL_LIST_LOADS=4: list_near's K = 4 loads a lane
# in flight, the listing that run 208's every-row probe put at 4 - 10 us of a B = 64 top-p row), each built in a fresh
# worktree by `python3 -m nox -s gpu_build -- --tags sm90 --package vocab`, and their timeline probes stp_<side>
# (nvcc [-D...] -O3 -std=c++17 -arch=sm_90 -fmad=false -I... bench/sample_timeline_probe.cu, every row's points).
# 1. the probes at B = 64 and 1, two rounds; 2. the bench (B = 1, 8, 48, 64; the five modes) before / new / newk twice;
# 3. test_vocab_sampler_gpu.py whole on newk (6 shards) and the sanitizers on its tp3g / wide subset, to END s.
# Results in $OUT/v.tgz; `DRY=1 OUT=/tmp/x bash ci/device/s41j.sh`: the shell logic.
# Session 42, run 213: CARRY=.carry/s42b TESTS="packages/vocab/tests/test_vocab_sampler_gpu.py
# packages/vocab/tests/test_vocab_gpu.py" bash ci/device/s41j.sh (before/ 33da4dc, the default's kernels; new/ f413c72
# with -DMLOPS_SAMPLE_GSL_NIBBLES=1, the near codes; newk/ 7ff78aa with the codes and -DMLOPS_SAMPLE_PENALTY_TABLE=1;
# docs/vocab.md "Session 42"); run 215 with .carry/s42c; not run yet: .carry/s42d (before 44f6e56's default, new 7ff78aa,
# newk 44f6e56 with the codes: the nibble-wise listing). TESTS (optional): the test files of the shards,
# test_vocab_sampler_gpu.py unless set.
# Session 43: .carry/s42d rebuilt with new/ = f55996a with -DMLOPS_SAMPLE_PENALTY_PREFETCH=1 (the table's
# logits loaded while counting); NEW_K (optional): a -k expression of test_vocab_sampler_gpu.py also run on new/.
# SIDES (optional, "before new newk" unless set: before first), TEST_SIDE (the side tested, newk unless set), SAN_K
# (memcheck's -k, "sanitizer_subset and (tp3g or wide)" unless set) and RACE_K (racecheck's, SAN_K's unless set).
# The default build alone (8ede06f: the near codes and the penalty prefetch together, not yet run on a GPU), ~200 s:
# CARRY=.carry/s43a SIDES=new TEST_SIDE=new SAN_K="sanitizer_subset and (tp3g or penalt)"
# RACE_K="sanitizer_subset and tp3g and (penalt or near_codes)" END=200 bash ci/device/s41j.sh
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/s41j-r/v; rm -rf $R; mkdir -p $R $OUT; source ci/device/lib.sh; dry_stubs
snap() { (cd $R/.. && tar czf $OUT/v.tgz v); }
C=${CARRY:-.carry/s41j} SIDES=${SIDES:-before new newk} T=${TEST_SIDE:-newk}
for s in $SIDES; do rm -rf /tmp/j-$s; inst "$C/$s/mlops_vocab-*.whl" /tmp/j-$s; echo "install $s rc=$? [${SECONDS}s]" >> $R/summary.txt; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
for k in 1 2; do
  for s in $SIDES; do
    exe=$C/stp_$s; [ -n "$DRY" ] && exe="echo DRY $exe"
    timeout 60 $exe 64 1 > $R/timeline-$s-$k.log 2>&1; summ timeline-$s-$k $?
  done
done
snap
for k in 1 2; do
  for s in $SIDES; do
    name=bench-$s-$k; mkdir -p $R/$name
    MLOPS_BENCH_OUT=$R/$name PYTHONPATH=/tmp/j-$s:$PWD/tools/testing timeout 100 python3 packages/vocab/bench/bench_vocab.py \
      --only sampling --quick --batches 1,8,48,64 \
      --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 > $R/$name.log 2>&1
    summ $name $?
  done
done
for s in $SIDES; do  # bench_ab.py's before / new pairs: before against each (none where SIDES has no before)
  [ $s = before ] || [ ! -d $R/bench-before-1 ] && continue
  mkdir -p $R/ab-$s
  for k in 1 2; do ln -s ../bench-before-$k $R/ab-$s/bench-before-$k; ln -s ../bench-$s-$k $R/ab-$s/bench-new-$k; done
  python3 ci/device/bench_ab.py $R/ab-$s > $R/ab-$s.txt 2>&1
done
snap
L=$((${END:-540} - SECONDS)); [ $L -gt 300 ] && L=300
if [ $L -ge 100 ]; then
  fshards vocab-sampler "${TESTS:-packages/vocab/tests/test_vocab_sampler_gpu.py}" /tmp/j-$T 6 $L
  K=${SAN_K:-sanitizer_subset and (tp3g or wide)}
  SAN=memcheck ksanitize vocab /tmp/j-$T $L packages/vocab/tests/test_vocab_sampler_gpu.py "$K"
  SAN=racecheck ksanitize vocab /tmp/j-$T $L packages/vocab/tests/test_vocab_sampler_gpu.py "${RACE_K:-$K}"
  if [ -n "$NEW_K" ]; then  # session 43: the tests -k NEW_K on new/ too, one shard, and its sanitizer subset
    fshards vocab-new packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/j-new 1 $L -k "$NEW_K"
    ksanitize vocab-new /tmp/j-new $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and ($NEW_K)"
  fi
fi
collect
snap
cat $R/gpu.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt
