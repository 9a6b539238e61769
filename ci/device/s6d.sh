#!/bin/bash
# Session 6, device run 34 (one H200, the session's last ~7 min): the positional GPU file under the
# compute_61 PTX build (nvcc 12.4) of this commit, JIT-compiled by the driver, 8 contiguous shards at
# once (tools/testing/mlops_shard.py): the dec kernels' launch without dynamic shared memory on the
# direct cache path (run 33 checked it on sm_90 only). Phases bounded so the tar returns in the call.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/c61 .carry/gpu/c61/mlops_positional-*.whl
k=8
for ((i = 0; i < k; i++)); do
  ( export PYTHONPATH=/tmp/c61:$PWD/tools/testing MLOPS_ARCH_TAG=c61 CUDA_CACHE_PATH=/tmp/jit-c61 MLOPS_SHARD=$i/$k
    timeout 300 python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/positional/tests/test_positional_gpu.py > $R/c61-$i.log 2>&1
    echo "c61-$i rc=$? $(grep -E 'passed|failed|error' $R/c61-$i.log | tail -1 | cut -c1-160)" >> $R/jit.txt ) &
done
wait
sort $R/jit.txt > $R/summary.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
