#!/bin/bash
# Session 13, attention (one H200): mma_pv4f+coarse_imma, mma_pv4's refine with the combine folded into it
# (refine_mma4_kernel<D, 8, true>: the CTA counting a (b, kv head)'s last item combines; fold_zero_kernel / the coarse
# pass zero the counters), not planned until measured. Written for GPU run 75, which did not happen (no device lent in
# session 13): ready for a later session. Wheels: .carry/s13attn/sm90 (new), .carry/s13attn/before (d9d39ef's, the
# same attention sources as HEAD before session 13). (1) bench --targets, new wheel: planner, mma_pv4 (combine kernel)
# and mma_pv4f (folded); old wheel: planner (events); (2) ncu durations of the B1 L16K exact decode's kernels, new
# wheel, mma_pv4f (fold_zero + folded refine) then mma_pv4 (refine + combine_warps), 2 decodes each (the mma_pv
# reference's combine skipped); (3) the whole attention GPU file on sm_90 in 6 shards and, beside it,
# compute-sanitizer memcheck / racecheck of mma_pv4f (ci/device/s13a_sanitize.py), bounded to end by END_S of the
# script. DRY=1: shell only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench-new $R/bench-old; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; ncu() { echo "DRY ncu $*"; }
  compute-sanitizer() { echo "DRY sanitizer $*"; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s13attn/sm90/mlops_attention-*.whl" /tmp/a13
inst ".carry/s13attn/before/mlops_attention-*.whl" /tmp/a12
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
MLOPS_BENCH_OUT=$R/bench-new PYTHONPATH=/tmp/a13:$PWD/tools/testing timeout ${BENCH_S:-50} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner,mma_pv4+coarse_imma,mma_pv4f+coarse_imma \
  > $R/bench-new.log 2>&1
echo "bench new rc=$? at ${SECONDS}s" >> $R/phases.txt
MLOPS_BENCH_OUT=$R/bench-old PYTHONPATH=/tmp/a12:$PWD/tools/testing timeout ${BENCH_OLD_S:-40} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner > $R/bench-old.log 2>&1
echo "bench old rc=$? at ${SECONDS}s" >> $R/phases.txt
PYTHONPATH=/tmp/a13 timeout ${NCU_S:-25} ncu --metrics gpu__time_duration.sum,launch__grid_size,smsp__inst_executed.sum \
  -k regex:"refine_mma4|fold_zero|combine_warps" --launch-skip 1 -c 8 python3 packages/attention/bench/profile_decode.py \
  --B 1 --L 16384 --variant mma_pv4f+coarse_imma,mma_pv4+coarse_imma --exact --reps 2 > $R/ncu-b1.log 2>&1
echo "ncu rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((${END_S:-315} - SECONDS)); [ $L -lt 30 ] && L=30
shards sm90 attention /tmp/a13 6 $L
( for tool in memcheck racecheck; do
    PYTHONPATH=/tmp/a13 timeout $((L / 2)) compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 ci/device/s13a_sanitize.py > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
  done ) &
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log | head -20 > $R/failures.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/phases.txt r/tests-sorted.txt r/failures.txt
grep -h "refine_mma4\|fold_zero\|combine\|duration\|inst_executed" r/ncu-b1.log | head -30
python3 -c '
import json, glob
for f in sorted(glob.glob("r/bench-*/*.jsonl")):
    for l in open(f):
        r = json.loads(l)
        if "us" in r: print(f.split("/")[1], "|", r["shape"], "|", r["impl"], "|", r["us"])' 2>/dev/null
rm -rf r
