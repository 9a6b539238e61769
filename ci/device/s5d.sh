#!/bin/bash
# Session 5, device run 28 (nvidia-h200-x2), the session's last call: round B's planners (norm: r16lx4we /
# r16lx2e picks; positional: dec for decode from the cache, dec / stage4 on the fly) and candidates
# (positional decx5, norm round-B variants if any) on sm_90, and the round's new kernels under the
# compute_61 / compute_80 PTX builds (JIT, sharded: tools/testing/mlops_shard.py).
# 1. quiet host: the norm Python-overhead row.
# 2. GPU 1: positional bench (planner rows + --variants of the candidates), norm bench (planned rows).
#    GPU 0 at once: the sm_90 norm and positional test directories.
# 3. both GPUs: the positional GPU file (8 shards a tag) and norm's new-variant tests (6 shards a tag)
#    under compute_61 (GPU 0) and compute_80 (GPU 1), JIT processes at nice 10.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
S=$PWD/.carry/snapA; cat $S/COMMIT > $R/commit.txt
for tag in sm90 c61 c80; do
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/$tag .carry/gpu/$tag/mlops_{norm,positional}-*.whl
done
cd $S
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
export PYTHONPATH=/tmp/sm90:$S/tools/testing MLOPS_ARCH_TAG=sm90
CUDA_VISIBLE_DEVICES=1 timeout 60 python3 -c "
import sys; sys.path.insert(0, 'packages/norm/bench'); import bench_norm as m
from mlops_bench import Bench; b = Bench('norm'); b.header(); m.overhead(b)" > $R/norm-overhead.log 2>&1; s norm-overhead $?
( export CUDA_VISIBLE_DEVICES=1
  timeout 150 python3 packages/positional/bench/bench_positional.py --variants --variant-names dec,decx5,early2x5,stage4 > $R/pos-bench.log 2>&1; s pos-bench $?
  timeout 240 python3 packages/norm/bench/bench_norm.py --shapes 2048x4096,16384x4096 --variants --variant-names r16lx2,r16lx4,r16lx2e,r16lx4we,r16lx4wb --kernel-time r16lx2,r16lx4we,r16lx4wb > $R/norm-bench.log 2>&1; s norm-bench $? ) &
( export CUDA_VISIBLE_DEVICES=0
  ( timeout 300 $P packages/norm/tests/test_norm_gpu.py > $R/norm-sm90.log 2>&1; s norm-sm90 $? ) &
  ( timeout 300 $P packages/positional/tests/test_positional_gpu.py > $R/pos-sm90.log 2>&1; s pos-sm90 $? ) &
  wait ) &
wait
left=$((565 - SECONDS)); echo "JIT phase: $left s left" >> $R/summary.txt  # the tar must fit in the call's 600 s
gpu=0
for tag in c61 c80; do
  for spec in positional:test_positional_gpu.py:8: norm:test_norm_gpu.py:6:r16lx2e or r16lx4we or r16lx4wb; do
    IFS=: read n f k sel <<< "$spec"
    for ((i = 0; i < k; i++)); do
      ( export PYTHONPATH=/tmp/$tag:$S/tools/testing MLOPS_ARCH_TAG=$tag CUDA_VISIBLE_DEVICES=$gpu \
          CUDA_CACHE_PATH=/tmp/jit-$tag MLOPS_SHARD=$i/$k
        timeout $left nice -n 10 $P -p mlops_shard packages/$n/tests/$f ${sel:+-k "$sel"} > $R/$n-$tag-$i.log 2>&1
        echo "$n-$tag-$i rc=$? $(grep -E 'passed|failed|error' $R/$n-$tag-$i.log | tail -1 | cut -c1-160)" >> $R/jit.txt ) &
    done
  done
  gpu=1
done
wait
sort $R/jit.txt >> $R/summary.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
