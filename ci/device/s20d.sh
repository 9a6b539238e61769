#!/bin/bash
# Session 20, the lead's fourth device call: vocab's lean_weight_of_u on common/exp.h's exp_det_reduced (8 lean
# sample_cluster_kernel instances' SASS moved: branch layout, the same FFMA / FMUL counts). One H200, END_S = 300 s.
# Wheels in .carry/s20d/: before/ = b746ae1's vocab (125fa7a's vocab sources), new/ = the change.
# (A) quiet GPU: bench_vocab.py --only sampling --quick (planned calls, B 1 / 8 / 64), before / new / before / new;
# (B) on new at once: test_vocab_sampler_gpu.py (4 shards), test_vocab_gpu.py (4 shards), compute-sanitizer racecheck /
#     memcheck of the sampler's "sanitizer_subset and (tk or tp)" tests (the 8 changed instances: cluster8 / 16 tk, tp, tp2, tp3).
# Results: $OUT/r20d.tgz, $OUT/summary.txt (bench_ab.py's table). DRY=1: prints what it would run.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20d
source ci/device/lib.sh
call_setup 300 phases.txt tests.txt summary.txt
for w in before new; do inst ".carry/s20d/$w/mlops_vocab-*.whl" /tmp/s20d-$w; done
gpu_info
for t in before-1 new-1 before-2 new-2; do
  L=$((END - 170 - SECONDS)); [ $L -gt 45 ] && L=45
  if [ $L -lt 20 ]; then echo "bench-$t skipped (${L}s left) at ${SECONDS}s" >> $R/phases.txt; continue; fi
  mkdir -p $R/bench-$t
  MLOPS_BENCH_OUT=$R/bench-$t PYTHONPATH=/tmp/s20d-${t%-*}:$PWD/tools/testing timeout $L python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick > $R/bench-$t.log 2>&1
  echo "bench-$t rc=$? at ${SECONDS}s" >> $R/phases.txt
done
L=$((END - 15 - SECONDS)); [ $L -gt 160 ] && L=160; [ $L -lt 40 ] && L=40
echo "tests start at ${SECONDS}s, limit ${L}s" >> $R/phases.txt
fshards sampler packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/s20d-new 4 $L
fshards vocab packages/vocab/tests/test_vocab_gpu.py /tmp/s20d-new 4 $L
ksanitize tktp /tmp/s20d-new $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and (tk or tp)"
collect; echo "tests done at ${SECONDS}s" >> $R/phases.txt
[ -n "$DRY" ] && { cat $R/phases.txt $R/summary.txt; exit 0; }
python3 ci/device/bench_ab.py $R > $R/ab.txt 2>&1
cat $R/phases.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt $R/ab.txt > $OUT/summary.txt
(cd /tmp && tar czf $OUT/r20d.tgz r20d)
cat $OUT/summary.txt
