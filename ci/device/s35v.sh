#!/bin/bash
# Session 35's changes, prepared without a device machine (none was lent in session 35); for the next session's first
# H200 call, ~350 s. Carry (build them here, `python3 -m nox -s gpu_build -- --tags sm90 --package vocab` in a
# worktree of each commit; session 35's other change, attention's quant_row, left every kernel's sm_90 SASS as it was):
#   .carry/s35v/before/mlops_vocab-*.whl   the sm90 vocab wheel of fc5411c (before the change)
#   .carry/s35v/new/mlops_vocab-*.whl      the sm90 vocab wheel of the commit under test (45abaeb or later)
#   .carry/probe_old/sample_cluster_kernel.cuh   `git show fc5411c:packages/vocab/src/sample_cluster_kernel.cuh`
# (1) the timeline probe (packages/vocab/bench/sample_timeline_probe.cu) built from the header before and after, run
#     before / new / before / new (the lean weight's n by one FFMA: every lean form's exps);
# (2) alone on the GPU, before / new / before / new: the sampling bench (--quick; B = 1, 8, 64, every mode) of the
#     planned call and cluster8_tp3, at most 60 s each;
# (3) at once: both vocab GPU files whole on the new wheel (6 shards each: every lean kernel changed), compute-sanitizer
#     memcheck of the lean / tp3 sanitizer subset, racecheck of the tp3 subset.
# Results under $OUT/r/v/ (tarred to $OUT/v.tgz); the summary lines are printed at the end.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh
N=/tmp/s35v-new; B=/tmp/s35v-before; rm -rf $N $B
ls -l .carry/s35v/new/ .carry/s35v/before/ > $R/wheels.txt 2>&1
inst ".carry/s35v/new/mlops_vocab-*.whl" $N; echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s35v/before/mlops_vocab-*.whl" $B; echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
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
    packages/vocab/bench/bench_vocab.py --only sampling --quick --variants cluster8_tp3 > $R/$name.log 2>&1
  summ $name $?
done
shards_of sm90 vocab packages/vocab/tests/test_vocab_gpu.py $N 6 300
shards_of sm90 vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py $N 6 300
san() {  # NAME TOOL TARGET FILE -k EXPR
  ( PYTHONPATH=$3:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout 300 compute-sanitizer --tool $2 --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider $4 -k "$5" > $R/$1.log 2>&1
    summ $1 $? ) &
}
san vocab-memcheck memcheck $N packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (lean or tp3)"
san vocab-racecheck racecheck $N packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tp3"
wait
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests.txt
