#!/bin/bash
# Session 16, helper a2, attention (one H200, <= 150 s): issue 6's B1 L16K decode, the planned refine's front again
# (refine_mma4_kernel at D 128, every instance; the same bits). 203cea7 (run 93: kept) computes a closed item's q
# digits from its q, k_scale and k_min loaded together, but after the refine flags' barrier. Now (a2) those digits
# are computed before pass_q_and_flags (they read global memory only and write sm.what / sw / bias, which the flags
# do not touch), so their loads overlap the flags' work and barrier; and the lane's 12 values are 3 vector loads
# (k_scale, k_min: 16 bytes, records are 16-byte aligned; q: 8 bytes where its address allows, else 4 loads).
# And pass_q_and_flags leaves out its barrier there where every block is refined (exact mode, the BF16 item).
#   before/ = 203cea7's wheel (= .carry/s16a/new/, run 93's "new");  new/ = a2's wheel.
# (1) bench_attention.py --variants planner over the six issue-6 cases (events, L2 flushed, SDPA interleaved):
#     before, new, then (after the tests) before, new, before, new;
# (2) between them, at once: test_attention_gpu.py -k "planner or mma_pv4 or fold" on the new wheel in 6 shards (every
#     refine_mma4_kernel instance) and compute-sanitizer racecheck then memcheck of ci/device/s15a_sanitize.py
#     (planner and mma_pv4r, exact / skip, two head passes, an odd closed-group count; == the host's bits).
# Everything under /tmp/ra2, then $OUT/a2.tgz of it; a short summary printed. Bounded to end by END_S (default 150)
# seconds. DRY=1: prints what it would run.
# Command line: bash ci/device/s16a2.sh   (carry: .carry/s16a2b)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=/tmp/ra2; rm -rf $R; mkdir -p $R; source ci/device/lib.sh
END=${END_S:-150}
OUT=${OUT:-/tmp}
dry_stubs
for w in before new; do inst ".carry/s16a2b/$w/mlops_attention-*.whl" /tmp/a2b$w; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
# bench WHEEL TAG: one bench call of a wheel (at most 30 s, and not past END - RESERVE)
bench() { attn_bench /tmp/a2b "$1" "$2" 30 12; }
RESERVE=100 bench before before-1
RESERVE=100 bench new new-1
L=$((END - 55 - SECONDS)); [ $L -gt 60 ] && L=60; [ $L -lt 35 ] && L=35
shards sm90 attention /tmp/a2bnew 6 $L -k "planner or mma_pv4 or fold"
( for tool in racecheck memcheck; do
    PYTHONPATH=/tmp/a2bnew timeout $((L / 2)) compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 ci/device/s15a_sanitize.py > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
  done ) &
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
RESERVE=5 bench before before-2
RESERVE=5 bench new new-2
RESERVE=5 bench before before-3
RESERVE=5 bench new new-3
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h "^FAILED\|^ERROR\|Error" $R/sm90-attention-*.log 2>/dev/null | head -20 > $R/failures.txt
python3 -c '
import json, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/bench-*/*.jsonl")):
    tag = f.split("/bench-")[1].split("/")[0]
    for l in open(f):
        r = json.loads(l)
        if "us" in r and ("exact [planner]" in r["impl"] or "sdpa" in r["impl"]):
            print(tag, "|", r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("kernel_us", ""))' $R > $R/rows.txt 2>&1
tar czf $OUT/a2.tgz -C /tmp ra2
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt
grep -v sdpa $R/rows.txt | sort -t'|' -k2,3 -s
