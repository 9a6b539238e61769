#!/bin/bash
# Session 12, the lead's last device call (one H200, run 71), sm90 wheels of the session's final attention and vocab
# (clean worktree at HEAD, .carry/s12f): (1) ncu --set full of the planner's own B1 L16K exact decode (refine_mma4_kernel
# and its combine_warps_kernel: where its 35 us go; run 70's profile took the named mma_pv's launch instead);
# (2) the whole attention GPU file (the refines' in-place item walk touched helpers other variants share) and both
# vocab GPU files (the plan now takes the tk forms), 13 processes at once, bounded by the call's end. DRY=1: shell only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; ncu() { echo "DRY ncu $*"; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s12f/mlops_attention-*.whl" /tmp/f-attention
inst ".carry/s12f/mlops_vocab-*.whl" /tmp/f-vocab
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
PYTHONPATH=/tmp/f-attention timeout 70 ncu --set full --import-source no \
  -k regex:"refine_mma4_kernel|combine_warps_kernel" --launch-skip 1 -c 2 -o $R/b1-planner \
  python3 packages/attention/bench/profile_decode.py --B 1 --L 16384 --variant planner --exact > $R/ncu-b1.log 2>&1
echo "ncu rc=$? [${SECONDS}s]" >> $R/summary.txt
[ -f $R/b1-planner.ncu-rep ] && ncu -i $R/b1-planner.ncu-rep --page details --print-units base > $R/details-b1.txt 2>&1
rm -f $R/b1-planner.ncu-rep
L=$((370 - SECONDS)); [ $L -gt 330 ] && L=330
shards sm90 attention /tmp/f-attention 4 $L
for fs in test_vocab_gpu.py:6 test_vocab_sampler_gpu.py:3; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=/tmp/f-vocab:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n CUDA_CACHE_PATH=/tmp/jit-sm90 \
        timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f \
        > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
  done
done
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/summary.txt r/tests-sorted.txt r/failures.txt; rm -rf r
