#!/bin/bash
# Session 18 (l), a part for ci/device/s15.sh (one H200, <= 120 s: 4 + 12 + 15 + 60 + 12 + 12 at most; the lead gave the tests 60 s, not 32): what the LM
# head's statistics cost, before / new.
# Wheels: .carry/s18b/vocab/before/ (c78dd6e's vocab) and .carry/s18b/vocab/new/ (the pipe kernels' statistics on the
# stream kernels' PDL path: a clear kernel in front instead of a memset node, the decode launched early; docs/vocab.md
# "Session 18 (l)"). Steps, each bounded:
#   (1) quiet GPU: ci/device/s18l_bench.py before, new (32000 / 151936 x 4096, M = 1, 2, 4, 8, planned lm_head
#       plain and stats=True, cuBLAS beside; graphs over two weight copies, read flush, events), new with the CUPTI
#       timeline of the M = 1 calls;
#   (2) new: test_vocab_gpu.py -k "lm_head and (pipe or stream32 or graph or decode)" in 5 shards (~100 tests: every
#       pipe instance and the stream32 forms at M = 1 .. 8 against the float64 bound and their statistics against the
#       logits, the PDL graph / back-to-back test over every stream and now every pipe instance, graph replay of the
#       planned call, the decode kernel) and compute-sanitizer racecheck + memcheck of the padded-strides subset of
#       pipe3 and the stream32 forms, all at once (60 s);
#   (3) quiet GPU: s18l_bench.py new, before (the second round, in the other order).
# Results: $OUT/r/l/ (bench-<label>-<round>/ JSON lines, logs, summary.txt, tests-sorted.txt, failures.txt).
# DRY=1: the commands only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/l; mkdir -p $R; touch $R/tests.txt $R/summary.txt; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (shard=$MLOPS_SHARD) 1 passed"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $*"; }
fi
C=.carry/s18b/vocab
rm -rf /tmp/l18b /tmp/l18n
inst "$C/before/mlops_vocab-*.whl" /tmp/l18b
inst "$C/new/mlops_vocab-*.whl" /tmp/l18n
echo "installed [${SECONDS}s]" >> $R/summary.txt
# lbench LABEL ROUND LIMIT [--timeline]
lbench() {
  local t=/tmp/l18${1:0:1}
  mkdir -p $R/bench-$1-$2
  MLOPS_BENCH_OUT=$R/bench-$1-$2 PYTHONPATH=$t:$PWD/tools/testing timeout $3 python3 ci/device/s18l_bench.py $1 \
    ${@:4} > $R/bench-$1-$2.log 2>&1
  echo "bench $1 round $2 rc=$? [${SECONDS}s]" >> $R/summary.txt
  grep -E "^(before|new) |^timeline|^  " $R/bench-$1-$2.log >> $R/summary.txt
}
lbench before 1 12
lbench new 1 15 --timeline
fshards lm packages/vocab/tests/test_vocab_gpu.py /tmp/l18n 5 60 -k "lm_head and (pipe or stream32 or graph or decode)"
ksanitize san /tmp/l18n 60 packages/vocab/tests/test_vocab_gpu.py "padded_strides_sanitizer_subset and (pipe3 or stream32)"
collect
cat $R/tests-sorted.txt >> $R/summary.txt
echo "tests done [${SECONDS}s]" >> $R/summary.txt
lbench new 2 12
lbench before 2 12
cat $R/summary.txt $R/failures.txt $R/sanitizer.txt
