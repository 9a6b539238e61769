#!/bin/bash
# Session 7, device run 40 (one H200, the session's last ~5 min of device time): vocab's sampler GPU file
# under the CUDA 11.8 build (sm_90 SASS, wheel of 416f9ea; run 39 ran its other GPU file), 8 shards.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/u-vocab .carry/gpu/sm90cu118/mlops_vocab-*.whl
for ((i = 0; i < 8; i++)); do
  ( PYTHONPATH=/tmp/u-vocab:$PWD/tools/testing MLOPS_ARCH_TAG=sm90cu118 MLOPS_SHARD=$i/8 timeout 140 python3 -m pytest -q --tb=short \
      -p no:cacheprovider -p mlops_shard packages/vocab/tests/test_vocab_sampler_gpu.py > $R/s-$i.log 2>&1
    echo "sampler shard $i rc=$? $(grep -E 'passed|failed|error' $R/s-$i.log | tail -1 | cut -c1-120)" >> $R/tests.txt ) &
done
wait
cd $OUT && tar czf r.tgz r && sort r/tests.txt; rm -rf r
