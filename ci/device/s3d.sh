#!/bin/bash
# Session 3, device run 16 (one H200): the virtual-arch builds of commit 7f2515c (round A's kernels,
# PTX JIT-compiled by the driver): attention and vocab under compute_61 (nvcc 12.4; DP4A decode, the
# CUDA-core lm_head, the block samplers: the cluster / pipe / staged variants fall back) and
# compute_80 (nvcc 13.0; the m16n8k16 pipe lm_head). Four pytest processes share the GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R
s() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200)" >> $R/summary.txt; }
P="python3 -m pytest -q --tb=short -p no:cacheprovider"
for tag in c61 c80; do
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/$tag .carry/gpu/$tag/*.whl
  ( export PYTHONPATH=/tmp/$tag:$PWD/.carry/snapA/tools/testing MLOPS_ARCH_TAG=$tag
    timeout 420 $P .carry/snapA/packages/attention/tests/test_attention_gpu.py > $R/att-$tag.log 2>&1; s att-$tag $? ) &
  ( export PYTHONPATH=/tmp/$tag:$PWD/.carry/snapA/tools/testing MLOPS_ARCH_TAG=$tag
    timeout 420 $P .carry/snapA/packages/vocab/tests/test_vocab_gpu.py .carry/snapA/packages/vocab/tests/test_vocab_sampler_gpu.py > $R/voc-$tag.log 2>&1; s voc-$tag $? ) &
done
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
