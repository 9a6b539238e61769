#!/bin/bash
# Session 12, the vocab sampler's tk forms changed in place (tk_finish, build_candidates_tk), one H200, one call
# of at most 240 s: the sm90 vocab wheel of the session (.carry/s12vocab2/sm90) into a fresh /tmp/v2; first,
# alone on the GPU, the sampling bench of cluster8_tk / cluster16_tk beside cluster8_lean and cluster16_gather
# (unchanged: the anchors against run 66's figures); then, at once, the sampler GPU tests of the tk variants
# (both vocab GPU files, -k _tk, two shards each) and compute-sanitizer racecheck / memcheck of the
# tk forms' sanitizer subset, every one bounded by the call's end.
# DRY=1: the shell logic only (no python), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* 1 passed"; }
  python3() { if [ "$1" = -c ]; then command python3 "$@"; else echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; fi; }
fi
T=/tmp/v2; W=.carry/s12vocab2/sm90
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls $W/ > $R/wheel.txt 2>&1
inst "$W/mlops_vocab-*.whl" $T
echo "install rc=$? $(ls $T 2>&1 | tr '\n' ' ') [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=$T:$PWD/tools/testing timeout 115 python3 \
  packages/vocab/bench/bench_vocab.py --only sampling --quick --variants cluster8_tk,cluster16_tk,cluster8_lean,cluster16_gather \
  > $R/bench.log 2>&1
summ bench $?
L=$((222 - SECONDS)); [ $L -lt 20 ] && L=20
for fs in test_vocab_sampler_gpu.py:2 test_vocab_gpu.py:2; do
  f=${fs%%:*}; n=${fs##*:}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=$T:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n timeout $L python3 -m pytest -q \
        --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/$f -k _tk > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-160)" >> $R/tests.txt ) &
  done
done
for tool in racecheck memcheck; do  # vocab_sanitize's command on the tk forms' subset, at once with the tests
  ( PYTHONPATH=$T:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $L compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and tk" \
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
