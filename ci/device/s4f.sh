#!/bin/bash
# Session 4, device run 24 (nvidia-h200-x2): the virtual-arch builds of commit a955706's kernels (the
# round-B wheels' sources), PTX JIT-compiled by the driver: norm (the r16lx* quantizers' integer E4M3 /
# E2M1 paths below sm_89), positional (stage: cp.async on compute_80, plain loads on compute_61; the
# flat kernels) and attention (stage: plain copies + barrier below sm_90) under compute_61 (nvcc 12.4,
# GPU 0) and compute_80 (nvcc 13.0, GPU 1). Tests from the same commit's tree (.carry/snapA).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; cat .carry/snapA/COMMIT > $R/commit.txt
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
gpu=0
for tag in c61 c80; do
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/$tag .carry/gpu/$tag/mlops_{norm,positional,attention}-*.whl
  for t in norm/tests/test_norm_gpu.py positional/tests/test_positional_gpu.py attention/tests/test_attention_gpu.py; do
    n=$(dirname $(dirname $t))
    ( export PYTHONPATH=/tmp/$tag:$PWD/.carry/snapA/tools/testing MLOPS_ARCH_TAG=$tag CUDA_VISIBLE_DEVICES=$gpu
      timeout 280 $P .carry/snapA/packages/$t > $R/$n-$tag.log 2>&1; s $n-$tag $? ) &
  done
  gpu=1
done
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
