#!/bin/bash
# Session 15, attention (one H200): issue 6's B1 L16K decode (planner: refine_mma4_kernel<128, 8, false, true> then
# combine_warps_kernel<128, true> as its programmatic dependent). Two changes, the same bits, one wheel each:
#   new1/ (combine only): combine_warps_kernel loads the first tile's partials with the m / l before M and reads a
#         whole tile's e / l before its chains (no shared load inside the l chain, no bounds branch a step);
#   new/  (combine + split staging): refine_mma4_kernel's chunk copy on two mbarriers, K part then V planes; the
#         scores wait for the K part only, the P V MMAs for the V planes.
#   before/ = da780c5 (the planned kernels of GPU runs 80-82).
# Wheels .carry/s15a/{before,new1,new}/ (sm_90). Results under $OUT/r/a (nothing else of $OUT is touched).
# (1) bench_attention.py --variants planner over the six issue-6 cases (B 1 / 8 x L 4K / 16K / 128K, random q; events,
#     L2 flushed, interleaved with SDPA): before, new, then (after the tests) before, new, new1 as time allows;
# (2) between them, at once: test_attention_gpu.py -k "planner or mma_pv4 or stage_pipe or imma_occ" on the new wheel
#     in 6 shards (every refine_mma4_kernel instance, the PDL combine after refine_mma4 / refine_stage, the plain
#     combine) and compute-sanitizer racecheck then memcheck of ci/device/s15a_sanitize.py (planner and mma_pv4r,
#     exact / skip, two shapes, == the host's bits);
# (3) last, if >= 45 s are left: bench --targets --kernel-time --variants planner on the new wheel.
# Everything bounded to end by END_S (default 235) seconds of the script. DRY=1: shell only.
# Command line: bash ci/device/s15a.sh   (carry: .carry/s15a)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/a; mkdir -p $R; source ci/device/lib.sh
END=${END_S:-235}
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $*"; }
fi
for w in before new1 new; do inst ".carry/s15a/$w/mlops_attention-*.whl" /tmp/a15$w; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
# bench WHEEL TAG [args]: one bench call of a wheel (at most 45 s, and not past END - RESERVE)
bench() {
  local L=$((END - ${RESERVE:-0} - SECONDS)); [ $L -gt 45 ] && L=45
  if [ $L -lt 20 ]; then echo "bench $2 skipped (${L}s left) at ${SECONDS}s" >> $R/phases.txt; return; fi
  mkdir -p $R/bench-$2
  MLOPS_BENCH_OUT=$R/bench-$2 PYTHONPATH=/tmp/a15$1:$PWD/tools/testing timeout $L python3 \
    packages/attention/bench/bench_attention.py --variants planner "${@:3}" > $R/bench-$2.log 2>&1
  echo "bench $2 ($1) rc=$? at ${SECONDS}s" >> $R/phases.txt
}
RESERVE=90 bench before before-1
RESERVE=90 bench new new-1
L=$((END - 90 - SECONDS)); [ $L -gt 75 ] && L=75; [ $L -lt 50 ] && L=50
shards sm90 attention /tmp/a15new 6 $L -k "planner or mma_pv4 or stage_pipe or imma_occ"
( for tool in racecheck memcheck; do
    PYTHONPATH=/tmp/a15new timeout $((L / 2)) compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 ci/device/s15a_sanitize.py > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
  done ) &
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
bench before before-2
bench new new-2
bench new1 new1-2
[ $((END - SECONDS)) -ge 45 ] && bench new new-kt --targets --kernel-time
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log 2>/dev/null | head -20 > $R/failures.txt
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt
python3 -c '
import json, glob, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/bench-*/*.jsonl")):
    tag = f.split("/bench-")[1].split("/")[0]
    for l in open(f):
        r = json.loads(l)
        if "us" in r and ("exact [planner]" in r["impl"] or "sdpa" in r["impl"]):
            print(tag, "|", r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("kernel_us", ""))' $R 2>/dev/null
