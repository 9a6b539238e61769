#!/bin/bash
# Session 14, attention (one H200; part of GPU run 79): mma_pv4r+coarse_imma, mma_pv4's refine with the thread index
# read again a phase (refine_mma4_kernel<D, 8, false, true>: ptxas sm_90 spills 8 / 8 bytes instead of mma_pv4's
# 128 / 148, 5192 SASS instructions instead of 5288), not planned until measured. Wheel: .carry/s14attn/sm90 (new;
# the planner's / mma_pv4's / mma_pv4f's kernels keep their SASS). Results under $OUT/r/attn (nothing else of $OUT
# is touched; no tar, no rm). (1) bench --targets: planner, mma_pv4 and mma_pv4r (events, one process, interleaved);
# (2) ncu durations / instructions / local loads of the B1 L16K exact decode's kernels: mma_pv4r, mma_pv4, planner,
# 2 decodes each (the mma_pv reference's combine skipped), and of one B8 L16K exact refine launch of mma_pv4r / mma_pv4; (3) `test_attention_gpu.py -k "mma_pv4r or planner"` on
# sm_90 in 4 shards and, beside it, compute-sanitizer memcheck / racecheck of mma_pv4r (ci/device/s12a_sanitize.py),
# bounded to end by END_S (default 190) seconds of the script. DRY=1: shell only.
# Command line: bash ci/device/s14a.sh   (defaults: BENCH_S=60 NCU_S=30 NCU8_S=25 END_S=190; about 100-190 s)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/attn; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; ncu() { echo "DRY ncu $*"; }
  compute-sanitizer() { echo "DRY sanitizer $*"; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
fi
inst ".carry/s14attn/sm90/mlops_attention-*.whl" /tmp/a14
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
V=mma_pv4+coarse_imma,mma_pv4r+coarse_imma
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/a14:$PWD/tools/testing timeout ${BENCH_S:-60} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner,$V > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
# 12 kernels: (refine_mma4, combine_warps) x 2 decodes x (mma_pv4r, mma_pv4, planner); local loads: the spills' LDL
M=gpu__time_duration.sum,launch__grid_size,smsp__inst_executed.sum,smsp__sass_inst_executed_op_local_ld.sum
for m in $M ${M%,smsp__sass*}; do  # without the local-load metric if this ncu does not know it
  PYTHONPATH=/tmp/a14 timeout ${NCU_S:-30} ncu --metrics $m -k regex:"refine_mma4|combine_warps" --launch-skip 1 -c 12 \
    python3 packages/attention/bench/profile_decode.py --B 1 --L 16384 --exact --reps 2 \
    --variant mma_pv4r+coarse_imma,mma_pv4+coarse_imma,planner > $R/ncu-b1.log 2>&1
  rc=$?; echo "ncu rc=$rc metrics=$m at ${SECONDS}s" >> $R/phases.txt
  [ $rc -eq 0 ] && break
done
# B8 L16K (4160 items, the issue-bound many-round case): one refine launch each, mma_pv4r then mma_pv4 (run 70's ncu)
PYTHONPATH=/tmp/a14 timeout ${NCU8_S:-25} ncu --metrics gpu__time_duration.sum,smsp__inst_executed.sum -k regex:refine_mma4 \
  -c 2 python3 packages/attention/bench/profile_decode.py --B 8 --L 16384 --exact \
  --variant mma_pv4r+coarse_imma,mma_pv4+coarse_imma > $R/ncu-b8.log 2>&1
echo "ncu b8 rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((${END_S:-190} - SECONDS)); [ $L -lt 30 ] && L=30
shards sm90 attention /tmp/a14 4 $L -k "mma_pv4r or planner"
( for tool in memcheck racecheck; do
    FBLA_SANITIZE_VARIANTS=mma_pv4r+coarse_imma PYTHONPATH=/tmp/a14 timeout $((L / 2)) compute-sanitizer --tool $tool \
      --error-exitcode 9 python3 ci/device/s12a_sanitize.py > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
  done ) &
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log | head -20 > $R/failures.txt
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt
grep -h "refine_mma4\|combine_warps\|duration\|inst_executed\|local_ld\|same bits" $R/ncu-b1.log $R/ncu-b8.log | head -80
python3 -c '
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench/*.jsonl")):
    for l in open(f):
        r = json.loads(l)
        if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"])' $R 2>/dev/null
