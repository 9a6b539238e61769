#!/bin/bash
# Session 36 (after run 196's "Max Active Clusters 30"): (1) bench/cluster_occupancy_probe.cu: clusters in flight for
# cluster sizes 2 - 16 at the staged sampler's shared memory (and rounds for B = 64 / 32 / 8); (2) the sampling bench at
# B around the rounds' edges (16, 30, 31, 32, 48, 60, 61, 64) for temperature, top-p and top-k, the planned call and
# cluster8_tp3 / cluster16_tp3 named: if the rows run in rounds of 30 clusters, B = 31 and B = 61 step up. Carry
# .carry/s35v (its new wheel = 45abaeb's sampler). Results in $OUT (occupancy.txt, waves.log, waves-rows.txt).
export PYTHONUNBUFFERED=1
mkdir -p $OUT/w; source ci/device/lib.sh
inst ".carry/s35v/new/mlops_vocab-*.whl" /tmp/nw
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cop packages/vocab/bench/cluster_occupancy_probe.cu > $OUT/occupancy.txt 2>&1 &&
  /tmp/cop >> $OUT/occupancy.txt 2>&1
echo "occupancy rc=$? [${SECONDS}s]"
MLOPS_BENCH_OUT=$OUT/w PYTHONPATH=/tmp/nw:$PWD/tools/testing timeout 400 python3 packages/vocab/bench/bench_vocab.py \
  --only sampling --quick --batches 16,30,31,32,48,60,61,64 --modes temperature,top_p0.9,top_k50 \
  --variants cluster8_tp3,cluster16_tp3 > $OUT/waves.log 2>&1
echo "bench rc=$? [${SECONDS}s]"
grep -h '"impl": "mlops' $OUT/waves.log | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    ks = r.get('kernel_seconds')
    print(r['case'][15:], '|', r['impl'], '|', r.get('ran_as'), '|', r['us'], '|', round(ks * 1e6, 2) if ks else '')" \
  > $OUT/waves-rows.txt
cat $OUT/occupancy.txt $OUT/waves-rows.txt
