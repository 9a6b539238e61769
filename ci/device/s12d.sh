#!/bin/bash
# Session 12, attention (one H200, run 72): combine_warps_kernel as a CTA of 4 warps a (row, 32 channels), a round's
# m / l / partials loaded at once into shared memory, then warp 0's slot-order chains (same bits). Wheel:
# .carry/s12attn3/sm90. (1) bench_attention --targets, planner and mma_pv+coarse_imma (events); (2) the whole
# attention GPU file on sm_90 in 6 shards, bounded to end by TESTS_END (135 s) of the script. DRY=1: shell only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s12attn3/sm90/mlops_attention-*.whl" /tmp/a3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/a3:$PWD/tools/testing timeout ${BENCH_S:-45} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner,mma_pv+coarse_imma > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((${TESTS_END:-135} - SECONDS)); [ $L -lt 20 ] && L=20
shards sm90 attention /tmp/a3 6 $L
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log | head -20 > $R/failures.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/phases.txt r/tests-sorted.txt r/failures.txt
python3 -c '
import json, glob
for f in glob.glob("r/bench/*.jsonl"):
    for l in open(f):
        r = json.loads(l)
        if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"])' 2>/dev/null
rm -rf r
