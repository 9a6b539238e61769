#!/bin/bash
# Session 12, the vocab sampler's tk forms (one H200, one call): the sm90 vocab wheel of the session
# (.carry/s12vocab/sm90) into /tmp/m; first, alone on the GPU, the sampling bench of the planned call beside
# cluster8_tk / cluster16_tk and the planned top-k forms (cluster8_lean, cluster16_gather); then the sampler GPU
# tests of the tk variants (both vocab GPU files, -k _tk, two shards each at once), bounded by the call's end.
# DRY=1: the shell logic only (no python), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  python3() { if [ "$1" = -c ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls .carry/s12vocab/sm90/ > $R/wheel.txt 2>&1
inst ".carry/s12vocab/sm90/mlops_vocab-*.whl" /tmp/m
echo "install rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/m:$PWD/tools/testing timeout 140 python3 \
  packages/vocab/bench/bench_vocab.py --only sampling --quick --variants cluster8_tk,cluster16_tk,cluster8_lean,cluster16_gather \
  > $R/bench.log 2>&1
summ bench $?
L=$((280 - SECONDS)); [ $L -lt 30 ] && L=30
for fs in test_vocab_sampler_gpu.py:2 test_vocab_gpu.py:2; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n timeout $L python3 -m pytest -q \
        --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f -k _tk > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
wait; echo "tests done [${SECONDS}s]" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h '"impl": "mlops' $R/bench/*.jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["case"], "|", r["impl"], "|", r.get("ran_as"), "|", r.get("us"), "|", r.get("kernel_us"))' > $R/rows.txt 2>&1
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt r/rows.txt; rm -rf r
