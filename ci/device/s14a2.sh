#!/bin/bash
# Session 14, attention (one H200; GPU run 80): the digits planner with mma_pv4r's refine (9bb53e4: decode_t runs
# refine_mma4_kernel<D, 8, false, true> past mma_pv's one round of items, in one round anywhere, in more rounds on
# sm_90 only; mma_pv's kernel within its one round). Wheels: .carry/s14attn2/ (sm_90) and, when built,
# .carry/s14attn2/c80/ (compute_80 PTX: the reread kernel under the driver's JIT). Results under $OUT/r/attn2 (nothing
# else of $OUT is touched; no tar, no rm).
# (a) alone on the GPU: bench_attention.py without --targets: the six issue-6 cases (B 1 / 8 x L 4K / 16K / 128K,
#     random q), planner beside mma_pv, mma_pv4 and mma_pv4r (3+3 / 4+2, exact / skip) and SDPA, events, interleaved;
# (b) then at once: the WHOLE attention GPU file on sm_90 in 6 shards (run 78: 366 tests, ~180 s in 4 shards) and,
#     when the c80 wheel is there, its `-k "mma_pv4r or planner"` in 2 shards; each bounded to end by END_S (default
#     235) seconds of the script. DRY=1: shell only.
# Command line: bash ci/device/s14a2.sh   (defaults: BENCH_S=70 END_S=235; about 150-235 s)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/attn2; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s14attn2/mlops_attention-*.whl" /tmp/a14b
C80=""; if ls .carry/s14attn2/c80/mlops_attention-*.whl > /dev/null 2>&1; then
  inst ".carry/s14attn2/c80/mlops_attention-*.whl" /tmp/a14c80; C80=1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s (c80 wheel: ${C80:-none})" >> $R/phases.txt
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/a14b:$PWD/tools/testing timeout ${BENCH_S:-70} python3 \
  packages/attention/bench/bench_attention.py \
  --variants planner,mma_pv+coarse_imma,mma_pv4+coarse_imma,mma_pv4r+coarse_imma > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((${END_S:-235} - SECONDS)); [ $L -lt 60 ] && L=60
shards sm90 attention /tmp/a14b 6 $L
[ -n "$C80" ] && shards c80 attention /tmp/a14c80 2 $L -k "mma_pv4r or planner"
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log $R/c80-attention-*.log 2>/dev/null | head -20 > $R/failures.txt
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt
python3 -c '
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench/*.jsonl")):
    for l in open(f):
        r = json.loads(l)
        if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"])' $R 2>/dev/null
