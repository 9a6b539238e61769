#!/bin/bash
# Session 13, the lead's first device call (one H200, run 73): the sm90 vocab wheel of 5c969d7 (session 12's three
# sampler refactors, draw_locate / draw_weights4 / staged512 dispatch, CPU-verified only until now; .carry/s13v0)
# (1) alone: the sampling bench of the planned calls (--quick), to set beside run 69's figures;
# (2) both vocab GPU files whole on sm_90, 9 shards at once, bounded by the call's end. DRY=1: shell only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (shard=$MLOPS_SHARD) 1 passed"; }
fi
git rev-parse HEAD > $R/commit.txt 2>/dev/null
rm -rf /tmp/s13v0; inst ".carry/s13v0/mlops_vocab-*.whl" /tmp/s13v0
echo "install rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/s13v0:$PWD/tools/testing timeout 120 python3 \
  packages/vocab/bench/bench_vocab.py --only sampling --quick > $R/bench.log 2>&1
summ bench $?
L=$((330 - SECONDS)); [ $L -lt 60 ] && L=60
for fs in test_vocab_gpu.py:6 test_vocab_sampler_gpu.py:3; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=/tmp/s13v0:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n CUDA_CACHE_PATH=/tmp/jit-sm90 \
        timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f \
        > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
  done
done
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
grep -h '"impl": "mlops' $R/bench/*.jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["case"], "|", r.get("ran_as"), "|", r.get("us"), "|", r.get("kernel_us"))' > $R/rows.txt 2>&1
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/summary.txt r/tests-sorted.txt r/failures.txt r/rows.txt; rm -rf r
