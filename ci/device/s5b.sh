#!/bin/bash
# Session 5, device run 26 (nvidia-h200-x2): the compute_61 (nvcc 12.4, GPU 0) and compute_80 (nvcc
# 13.0, GPU 1) PTX builds of commit a955706's norm and positional (= HEAD's kernels), JIT-compiled by
# the driver, their GPU test files from the same commit's tree, each split into contiguous shards
# (tools/testing/mlops_shard.py) run at once on the 32 cores so the kernels JIT in parallel (run 24
# ran them in one process each and was cut at 8 % / 80 %). One JIT cache per arch tag.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; S=$PWD/.carry/snapA; cat $S/COMMIT > $R/commit.txt
P="python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard"
gpu=0
for tag in c61 c80; do
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/$tag .carry/gpu/$tag/mlops_{norm,positional}-*.whl
  for spec in norm:test_norm_gpu.py:14 positional:test_positional_gpu.py:2; do
    IFS=: read n f k <<< "$spec"
    for ((i = 0; i < k; i++)); do
      ( export PYTHONPATH=/tmp/$tag:$S/tools/testing:$PWD/tools/testing MLOPS_ARCH_TAG=$tag CUDA_VISIBLE_DEVICES=$gpu \
          CUDA_CACHE_PATH=/tmp/jit-$tag MLOPS_SHARD=$i/$k
        cd $S && timeout 520 $P packages/$n/tests/$f > $R/$n-$tag-$i.log 2>&1
        echo "$n-$tag-$i rc=$? $(grep -E 'passed|failed|error' $R/$n-$tag-$i.log | tail -1 | cut -c1-160)" >> $R/summary.txt ) &
    done
  done
  gpu=1
done
wait
sort $R/summary.txt > $R/s.txt
cd $OUT && tar czf r.tgz r && cat r/s.txt; rm -rf r
