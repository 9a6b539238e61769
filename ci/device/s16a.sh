#!/bin/bash
# Session 16, attention (one H200, <= 240 s): issue 6's B1 L16K decode, the planned refine's front (refine_mma4_kernel
# at D 128, every instance; the same bits). Before, a closed item's q digits waited for four dependent global-load
# latencies after the chunk copy's issue: the q rows one after another (two LDG.E.U16 a thread, 17 % of run 90's
# B1 L4K stall samples, 24 % of B1 L16K's), the q barrier, then k_scale, then k_min. Now a closed item's warps
# load their q, k_scale and k_min together (setup_group_warp_g, from global, after the refine flags' barrier as
# before), and the q rows (sm.qf) are loaded only by the BF16 item (the only reader), two loads issued together.
#   before/ = the wheel of c973125 (= 7ecf8ca's attention sources: the planned kernels of GPU runs 86 / 87 / 90);
#   new/    = the wheel of this session's change.
# (1) bench_attention.py --variants planner over the six issue-6 cases (events, L2 flushed, SDPA interleaved):
#     before, new, then (after the tests) before, new;
# (2) between them, at once: test_attention_gpu.py -k "planner or mma_pv4 or fold" on the new wheel in 6 shards (every
#     refine_mma4_kernel instance: planner picks, mma_pv4 / mma_pv4w / mma_pv4r / mma_pv4f) and compute-sanitizer
#     racecheck then memcheck of ci/device/s15a_sanitize.py (planner and mma_pv4r, exact / skip, 32 / 8 and 32 / 4
#     heads: two head passes, an odd closed-group count; == the host's bits).
# Everything under /tmp/ra, then $OUT/a.tgz of it; a short summary printed. Bounded to end by END_S (default 235)
# seconds. DRY=1: prints what it would run.
# Command line: bash ci/device/s16a.sh   (carry: .carry/s16a)
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=/tmp/ra; rm -rf $R; mkdir -p $R; source ci/device/lib.sh
END=${END_S:-235}
OUT=${OUT:-/tmp}
dry_stubs
for w in before new; do inst ".carry/s16a/$w/mlops_attention-*.whl" /tmp/a16$w; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
# bench WHEEL TAG: one bench call of a wheel (at most 45 s, and not past END - RESERVE)
bench() { attn_bench /tmp/a16 "$1" "$2" 45 20; }
RESERVE=100 bench before before-1
RESERVE=100 bench new new-1
L=$((END - 95 - SECONDS)); [ $L -gt 75 ] && L=75; [ $L -lt 45 ] && L=45
shards sm90 attention /tmp/a16new 6 $L -k "planner or mma_pv4 or fold"
ssanitize /tmp/a16new $((L / 2)) ci/device/s15a_sanitize.py
wait; echo "tests done at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
bench before before-2
bench new new-2
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
tar czf $OUT/a.tgz -C /tmp ra
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt
grep -v sdpa $R/rows.txt
