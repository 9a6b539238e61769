#!/bin/bash
# Session 34 (issue 5, the wide round's listing and gather; one H200 call, at most ~330 s): wheels .carry/s34v/before/
# (the sm90 vocab wheel of the session's base commit) and .carry/s34v/new/ (with the change), each into its own --target.
# (1) the timeline probe (packages/vocab/bench/sample_timeline_probe.cu) built twice on the machine: the kernel header
#     before the change with the same marks (.carry/probe_old/, carried) and after, run before / new;
# (2) alone on the GPU, before / new / before / new: the sampling bench (--quick; B = 1, 8, 64, every mode) of the
#     planned call and of cluster16_wide, cluster16_tp3, cluster8_tp3 (the forms whose wide round changed), each at most
#     40 s;
# (3) then at once: the GPU tests of the changed forms on the new wheel (both vocab GPU files, -k "wide or tp or
#     planned", two shards each) and compute-sanitizer racecheck / memcheck of the sanitizer subset of the wide / tp3
#     forms.
# Results under $OUT/r/v/ (tarred to $OUT/v.tgz); the summary lines are printed at the end.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh
N=/tmp/s34v-new; B=/tmp/s34v-before; rm -rf $N $B
ls -l .carry/s34v/new/ .carry/s34v/before/ > $R/wheels.txt 2>&1
inst ".carry/s34v/new/mlops_vocab-*.whl" $N; echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s34v/before/mlops_vocab-*.whl" $B; echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
F="-O3 -std=c++17 -arch=sm_90 -fmad=false -Ipackages/vocab/src -Ipackages/vocab/include -Ipackages/common/include"
(nvcc $F -o /tmp/stp packages/vocab/bench/sample_timeline_probe.cu &
 nvcc -I.carry/probe_old $F -o /tmp/stp_old packages/vocab/bench/sample_timeline_probe.cu & wait)
timeout 60 /tmp/stp_old > $R/timeline-before.txt 2>&1; summ timeline-before $?
timeout 60 /tmp/stp > $R/timeline-new.txt 2>&1; summ timeline-new $?
V=cluster16_wide,cluster16_tp3,cluster8_tp3
for t in before-1:$B new-1:$N before-2:$B new-2:$N; do
  IFS=: read -r side tgt <<< "$t"; name=bench-$side; mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout 40 python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --variants $V > $R/$name.log 2>&1
  summ $name $?
done
L=100
for fs in "test_vocab_sampler_gpu.py:2:wide or tp or planned" "test_vocab_gpu.py:2:wide or tp or planned"; do
  IFS=: read -r f n k <<< "$fs"; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n CUDA_CACHE_PATH=/tmp/jit-s34v timeout $L \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f -k "$k" \
        > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
for tool in racecheck memcheck; do
  ( PYTHONPATH=$N:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $L compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and (wide or tp3)" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $? ) &
done
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
