#!/bin/bash
# Session 14, attention (one H200; GPU run 81): the digits planner on sm_90 with mma_pv4r's refine also within
# mma_pv's one round of refine items (e866866: decode_t runs refine_mma4_kernel<D, 8, false, true> on sm_90 whenever
# ctas is 0; run 80: B1 L4K 3+3 exact mma_pv4r 23.97 us against mma_pv's 25.79, the planner's 26.14). Wheel:
# .carry/s14attn3/ (sm_90, of e866866). Results under $OUT/r/attn3 (nothing else of $OUT is touched; no tar, no rm).
# (a) alone on the GPU: bench_attention.py without --targets: the six issue-6 cases (B 1 / 8 x L 4K / 16K / 128K,
#     random q), planner beside mma_pv4r (3+3 / 4+2, exact / skip) and SDPA, events, interleaved;
# (b) then `-k planner` of the attention GPU file on sm_90 in 3 shards, bounded to end by END_S (default 110) seconds
#     of the script. DRY=1: shell only.
# Command line: bash ci/device/s14a3.sh   (defaults: BENCH_S=50 END_S=110; about 40-110 s)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/attn3; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s14attn3/mlops_attention-*.whl" /tmp/a14d
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/a14d:$PWD/tools/testing timeout ${BENCH_S:-50} python3 \
  packages/attention/bench/bench_attention.py --variants planner,mma_pv4r+coarse_imma > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((${END_S:-110} - SECONDS)); [ $L -lt 40 ] && L=40
shards sm90 attention /tmp/a14d 3 $L -k planner
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log 2>/dev/null | head -20 > $R/failures.txt
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt
python3 -c '
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench/*.jsonl")):
    for l in open(f):
        r = json.loads(l)
        if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"])' $R 2>/dev/null
