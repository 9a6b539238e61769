#!/bin/bash
# Session 20, the lead's first device call (one H200, END_S = 300 s of the script). Wheels in .carry/s20/:
#   base/  b746ae1's attention (the sources of 125fa7a: runs 101-103's base)
#   new/   the streamed kEarly refine (the next item's K planes copied under this item's P V; three mbarriers)
# (A) s17a_sanitize.py on new (the kEarly instance against the host's bits, one and two head passes, exact and skip);
# (B) quiet GPU, in turn: bench_attention.py --variants planner of base, new, base, new;
# (C) on new at once: test_attention_gpu.py (5 shards), compute-sanitizer racecheck / memcheck of s17a_sanitize.py.
# Results: $OUT/r20.tgz, $OUT/summary.txt. DRY=1: prints what it would run.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20
source ci/device/lib.sh
call_setup 300 phases.txt tests.txt
for w in base new; do inst ".carry/s20/$w/mlops_attention-*.whl" /tmp/s20-$w; done
gpu_info
PYTHONPATH=/tmp/s20-new timeout 60 python3 ci/device/s17a_sanitize.py > $R/s17a-new.log 2>&1
echo "s17a on new rc=$? $(tail -1 $R/s17a-new.log) at ${SECONDS}s" >> $R/phases.txt
RESERVE=200 attn_bench /tmp/s20- base base-1 25 8
RESERVE=185 attn_bench /tmp/s20- new new-1 25 8
RESERVE=170 attn_bench /tmp/s20- base base-2 25 8
RESERVE=155 attn_bench /tmp/s20- new new-2 25 8
attn_tests_tail /tmp/s20-new r20
