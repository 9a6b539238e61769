#!/bin/bash
# Session 13, the vocab sampler's tp forms (cluster8_tp / cluster16_tp: the tk forms whose top-p without top-k
# takes the wide first round with one shared RED an element, a list of slice indices at or above the crossing
# bin, and the list draw by chunk sums), one H200, GPU run 76, one call of at most 330 s: the sm90 vocab wheel
# of the session (.carry/s13vocab/sm90) into a fresh /tmp/m; first, alone on the GPU, the sampling bench of
# cluster8_tp / cluster16_tp beside cluster8_wide / cluster16_wide (the top-p forms planned now, unchanged: the
# anchors against run 69's figures; the planned call is timed too); then, at once, the sampler GPU tests of the
# tp variants (both vocab GPU files, -k _tp, two shards each) and compute-sanitizer racecheck / memcheck of the
# tp forms' sanitizer subset, every one bounded by the call's end.
# DRY=1: the shell logic only (no python), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
T=/tmp/m; W=.carry/s13vocab/sm90
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls $W/ > $R/wheel.txt 2>&1
inst "$W/mlops_vocab-*.whl" $T
echo "install rc=$? $(ls $T 2>&1 | tr '\n' ' ') [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=$T:$PWD/tools/testing timeout 150 python3 \
  packages/vocab/bench/bench_vocab.py --only sampling --quick --variants cluster8_tp,cluster16_tp,cluster8_wide,cluster16_wide \
  > $R/bench.log 2>&1
summ bench $?
L=$((312 - SECONDS)); [ $L -lt 20 ] && L=20
for fs in test_vocab_sampler_gpu.py:2 test_vocab_gpu.py:2; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=$T:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n timeout $L python3 -m pytest -q \
        --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f -k _tp > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
for tool in racecheck memcheck; do  # vocab_sanitize's command on the tp forms' subset, at once with the tests
  ( PYTHONPATH=$T:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $L compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and _tp" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $? ) &
done
wait; echo "tests done [${SECONDS}s]" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h '"impl": "mlops' $R/bench/*.jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["case"], "|", r["impl"], "|", r.get("ran_as"), "|", r.get("us"), "|", r.get("kernel_us"))' > $R/rows.txt 2>&1
grep -h "ERROR SUMMARY\|Error\b" $R/vocab-*.log 2>/dev/null | sort | uniq -c | head -20 > $R/sanitizer.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt r/sanitizer.txt r/rows.txt; rm -rf r
