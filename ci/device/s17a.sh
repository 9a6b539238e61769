#!/bin/bash
# Session 17, helper a, attention (one H200, <= 240 s; ~170 s expected): issue 6's decode, the planned refine
# (refine_mma4_kernel; the same bits everywhere).
#   new1 (every refine_mma4_kernel instance): a closed item's digits phase without branches in its four
#     p = exp(s - m) (exp_det_le: exp_det's polynomial path for x <= 88.5 / NaN, selects for the range / NaN cases, the
#     valid flag folded into the argument), P V digits without hi's clamp and hi's int -> float (pv_digits; lo's clamp
#     as min.NaN / max.NaN), the slice max as FMNMX (fmax_nonneg), and a thread's chunk max only for its head tig (8
#     shared loads and maxima, not 32; the BF16 item takes every head's in its own branch). Planned refine 5152 -> 5088
#     SASS instructions, its chunk-max + digits main path 433 -> 305.
#   new = new1 + the kEarly instance refine_mma4_kernel<128, 8, false, true, true> (session 16 a2's front, 3bf71d2:
#     q digits before the refine flags, 3 vector loads, the flags' barrier left out in exact mode), planned on sm_90 at
#     D 128 only where the refine's CTAs take more than one round (B8 L4K / L16K / L128K, B1 L128K); B1 L4K / L16K keep
#     mma_pv4r's kernel (new1's).
#   before/ = 7f1fba7's sm90 attention wheel (its attention sources are 203cea7's: = .carry/s16a/new/, runs 93 / 95).
# (1) bench_attention.py --variants planner over the six issue-6 cases, 3+3 and 4+2 exact (events, L2 flushed, SDPA
#     interleaved): before, new1, new; then (after the tests) two more such rounds, and a fourth while time is left;
# (2) between them, at once: test_attention_gpu.py -k "planner or mma_pv4 or fold" on new in 6 shards (every
#     refine_mma4_kernel instance; test_planner_digits_gpu[many_rounds_d128] runs the kEarly instance; == the host
#     emulation's bits), compute-sanitizer racecheck and memcheck (the four at once) of ci/device/s15a_sanitize.py
#     (one round: mma_pv4r's kernel) and of ci/device/s17a_sanitize.py (more than one round at D 128: the kEarly
#     instance), then the same tests on new1 in 6 shards.
# Everything under /tmp/r17a, then $OUT/r/a/a.tgz of it and its summary files beside it; a short summary printed.
# Bounded to end by END_S (default 235) seconds. DRY=1: prints what it would run.
# Command line: bash ci/device/s17a.sh   (carry: .carry/s17a)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
OUT=${OUT:-/tmp}
R=/tmp/r17a; rm -rf $R; mkdir -p $R $OUT/r/a; source ci/device/lib.sh
END=${END_S:-235}
dry_stubs
for w in before new1 new; do inst ".carry/s17a/$w/mlops_attention-*.whl" /tmp/s17a$w; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
# bench WHEEL TAG: one bench call of a wheel (at most 30 s, and not past END - RESERVE)
bench() { attn_bench /tmp/s17a "$1" "$2" 30 12; }
# sani SCRIPT LABEL LIMIT: racecheck and memcheck of a script on new, each in the background (at once)
sani() {
  local tool
  for tool in racecheck memcheck; do
    ( PYTHONPATH=/tmp/s17anew timeout $3 compute-sanitizer --tool $tool --error-exitcode 9 python3 $1 \
        > $R/$2-$tool.log 2>&1
      echo "sanitizer $2 $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/$2-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt ) &
  done
}
RESERVE=200 bench before before-1
RESERVE=190 bench new1 new1-1
RESERVE=180 bench new new-1
L=$((END - 110 - SECONDS)); [ $L -gt 80 ] && L=80; [ $L -lt 40 ] && L=40
shards sm90 attention /tmp/s17anew 6 $L -k "planner or mma_pv4 or fold"
sani ci/device/s15a_sanitize.py s15a $L
sani ci/device/s17a_sanitize.py s17a $L
wait; echo "tests (new) done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
mv $R/tests.txt $R/tests-new.txt 2>/dev/null
L=$((END - 70 - SECONDS)); [ $L -gt 60 ] && L=60
if [ $L -ge 25 ]; then
  for i in 0 1 2 3 4 5; do mv $R/sm90-attention-$i.log $R/new-sm90-attention-$i.log 2>/dev/null; done
  shards sm90 attention /tmp/s17anew1 6 $L -k "planner or mma_pv4 or fold"
  wait; echo "tests (new1) done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
  mv $R/tests.txt $R/tests-new1.txt 2>/dev/null
else
  echo "tests (new1) skipped (${L}s left) at ${SECONDS}s" >> $R/phases.txt
fi
cat $R/tests-new.txt $R/tests-new1.txt > $R/tests.txt 2>/dev/null
for r in 2 3; do
  RESERVE=5 bench before before-$r
  RESERVE=5 bench new1 new1-$r
  RESERVE=5 bench new new-$r
done
RESERVE=30 bench before before-4
RESERVE=15 bench new1 new1-4
RESERVE=3 bench new new-4
collect
python3 -c '
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench-*/*.jsonl")):
    tag = f.split("/bench-")[1].split("/")[0]
    for l in open(f):
        r = json.loads(l)
        if "us" in r and ("exact [planner]" in r["impl"] or "sdpa" in r["impl"]):
            print(tag, "|", r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("kernel_us", ""))' $R > $R/rows.txt 2>&1
tar czf $OUT/r/a/a.tgz -C /tmp r17a
cp $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt $R/rows.txt $OUT/r/a/ 2>/dev/null
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt
grep -v sdpa $R/rows.txt | sort -t'|' -k2,3 -s
