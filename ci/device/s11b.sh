#!/bin/bash
# Session 11, device run 61 (one H200): every package's GPU test files on sm_90 at one commit (the sm90 wheels of
# `nox -s gpu_build -- --tags sm90`, HEAD of the session), shards of all packages at once; first, alone, a short
# bench_norm.py call that checks the fixed plain_norm_us / planner fields.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
for p in norm positional vocab attention optimizers; do inst ".carry/gpu/sm90/mlops_$p-*.whl" /tmp/sm90-$p; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/sm90-norm:$PWD/tools/testing timeout 60 python3 packages/norm/bench/bench_norm.py \
  --shapes 2048x4096 --variants --variant-names r16lx2e --kernel-time r16lx2e > $R/bench.log 2>&1
summ bench $?
L=$((450 - SECONDS)); [ $L -gt 400 ] && L=400
# file:shards, the larger files in more shards (run 56: norm 1105 tests; run 52: vocab 798; run 58: attention 289)
for fs in norm/test_norm_gpu.py:5 vocab/test_vocab_gpu.py:2 vocab/test_vocab_sampler_gpu.py:3 \
          attention/test_attention_gpu.py:3 positional/test_positional_gpu.py:1 optimizers/test_optimizers_gpu.py:1; do
  f=${fs%%:*}; n=${fs##*:}; p=${f%%/*}; b=$(basename $f .py)
  for ((i = 0; i < n; i++)); do
    ( PYTHONPATH=/tmp/sm90-$p:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$n CUDA_CACHE_PATH=/tmp/jit-sm90 \
        timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/$p/tests/$b.py \
        > $R/$b-$i.log 2>&1
      echo "$b shard $i/$n rc=$? $(grep -E 'passed|failed|error' $R/$b-$i.log | tail -1 | cut -c1-120)" >> $R/tests.txt ) &
  done
done
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r
