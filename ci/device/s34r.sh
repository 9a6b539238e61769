#!/bin/bash
# Session 34, second change, NOT KEPT (packages/vocab/bench/probes/stage_roll.patch, apply on 4d408b8; issue 5, the
# cluster16 forms' staging measured from the stored copy in a rolled loop: slower, run 193); one
# H200 call, ~400 s): wheels .carry/s34r/before/ (42a330f's sm90 vocab wheel) and .carry/s34r/new/ (with the change).
# (1) the timeline probe built from the header before (.carry/probe_old/: 4d408b8's, which has the marks) and after,
#     run before / new / before / new;
# (2) the sampling bench of the planned call at B = 1 and 8 (every mode; --quick), before / new / before / new;
# (3) at once: both vocab GPU files whole on the new wheel (6 shards each) and compute-sanitizer racecheck / memcheck
#     of the sanitizer subset's cluster16 forms.
# Results under $OUT/r/v/ (tarred to $OUT/v.tgz); the summary lines are printed at the end.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh
N=/tmp/s34r-new; B=/tmp/s34r-before; rm -rf $N $B
inst ".carry/s34r/new/mlops_vocab-*.whl" $N; echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s34r/before/mlops_vocab-*.whl" $B; echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
F="-O3 -std=c++17 -arch=sm_90 -fmad=false -Ipackages/vocab/src -Ipackages/vocab/include -Ipackages/common/include"
(nvcc $F -o /tmp/stp packages/vocab/bench/sample_timeline_probe.cu &
 nvcc -I.carry/probe_old $F -o /tmp/stp_old packages/vocab/bench/sample_timeline_probe.cu & wait)
for k in 1 2; do
  timeout 60 /tmp/stp_old > $R/timeline-before-$k.txt 2>&1; summ timeline-before-$k $?
  timeout 60 /tmp/stp > $R/timeline-new-$k.txt 2>&1; summ timeline-new-$k $?
done
for t in before-1:$B new-1:$N before-2:$B new-2:$N; do
  IFS=: read -r side tgt <<< "$t"; name=bench-$side; mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout 60 python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --batches 1,8 > $R/$name.log 2>&1
  summ $name $?
done
for f in test_vocab_gpu.py test_vocab_sampler_gpu.py; do
  b=$(basename $f .py)
  for ((i = 0; i < 6; i++)); do
    ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/6 CUDA_CACHE_PATH=/tmp/jit-s34r timeout 300 \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f > $R/$b-$i.log 2>&1
      echo "$b shard $i/6 rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
for tool in racecheck memcheck; do
  ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and cluster16" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $? ) &
done
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
