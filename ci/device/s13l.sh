#!/bin/bash
# Session 13, run 77: the lm_head plan at M = 2 .. 8 (sm90 vocab wheel of 5499c8a + a2bccfd's bench, .carry/s13lm):
# (1) alone: bench_vocab.py --only lm_head (M = 1 .. 8, 151936 and 32000 x 4096, read flush, weights rotated,
#     graph replay) of the planned call (now the 4-stage pipe at M = 2 .. 8 where its last wave is full) beside the
#     4-stage pipe, the new 3-stage pipe3, the 6-stage pipe_deep, stream32 and cuBLAS;
# (2) test_vocab_lm_head.py whole (the plan's CPU test) and test_vocab_gpu.py -k lm_head in 4 shards. DRY=1: shell only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (shard=$MLOPS_SHARD) 1 passed"; }
fi
git rev-parse HEAD > $R/commit.txt 2>/dev/null
rm -rf /tmp/s13l; inst ".carry/s13lm/mlops_vocab-*.whl" /tmp/s13l
echo "install rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/s13l:$PWD/tools/testing timeout 200 python3 \
  packages/vocab/bench/bench_vocab.py --only lm_head \
  --variants mma_m16n8k16_bf16_pipe,mma_m16n8k16_bf16_pipe3,mma_m16n8k16_bf16_pipe_deep,mma_m16n8k16_bf16_stream32 \
  > $R/bench.log 2>&1
summ bench $?
L=$((330 - SECONDS)); [ $L -lt 60 ] && L=60
( PYTHONPATH=/tmp/s13l:$PWD/tools/testing timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider \
    packages/vocab/tests/test_vocab_lm_head.py > $R/lm-cpu.log 2>&1
  echo "test_vocab_lm_head rc=$? $(grep -E 'passed|failed|error' $R/lm-cpu.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
for ((i = 0; i < 4; i++)); do
  ( PYTHONPATH=/tmp/s13l:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/4 CUDA_CACHE_PATH=/tmp/jit-sm90 \
      timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/vocab/tests/test_vocab_gpu.py \
      -k lm_head > $R/lm-gpu-$i.log 2>&1
    echo "test_vocab_gpu -k lm_head shard $i/4 rc=$? $(grep -E 'passed|failed|error' $R/lm-gpu-$i.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
done
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
grep -h '"case": "lm_head' $R/bench/*.jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["case"], "|", r["impl"], "|", r.get("us"), "|", r.get("frac_copy_bw"))' > $R/rows.txt 2>&1
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/summary.txt r/tests-sorted.txt r/failures.txt r/rows.txt; rm -rf r
