#!/bin/bash
# Session 19, the lead's third device call (one H200, END_S = 300 s of the script). Wheels in .carry/s19d/:
#   base/      b746ae1's attention (runs 101 / 102's base)
#   dbl/       the planned kEarly refine with its stages double-buffered (2 CTAs an SM, the next item's records copied
#              under this item's work; the same bits): the tree after 5ca3a59
#   abl-N/     ablation probes (bench/probes/ablate.patch): 31 (run 102's: every compute phase left out), 32 (the records
#              copied for a CTA's first item only, no L2 prefetch), 63 (both)
# (A) quiet GPU, in turn: bench_attention.py --variants planner of base, dbl, abl32, abl63, abl31, dbl, base;
# (B) on dbl at once: test_attention_gpu.py (5 shards), compute-sanitizer racecheck / memcheck of s17a_sanitize.py (the
#     kEarly instance over more than one round, one and two head passes, exact and skip) and the script itself.
# Results: $OUT/r19d.tgz, $OUT/summary.txt. DRY=1: prints what it would run. The RESERVE values assume END_S = 300: run
# 103 ran it with END_S=230, which skipped the first three benches (base-1, dbl-1, abl32).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r19d
source ci/device/lib.sh
call_setup 300 phases.txt tests.txt
for w in base dbl abl-31 abl-32 abl-63; do inst ".carry/s19d/$w/mlops_attention-*.whl" /tmp/s19d-${w/-/}; done
gpu_info
PYTHONPATH=/tmp/s19d-dbl timeout 60 python3 ci/device/s17a_sanitize.py > $R/s17a-dbl.log 2>&1
echo "s17a on dbl rc=$? $(tail -1 $R/s17a-dbl.log) at ${SECONDS}s" >> $R/phases.txt
RESERVE=240 attn_bench /tmp/s19d- base base-1 25 8
RESERVE=225 attn_bench /tmp/s19d- dbl dbl-1 25 8
RESERVE=210 attn_bench /tmp/s19d- abl32 abl32 25 8
RESERVE=195 attn_bench /tmp/s19d- abl63 abl63 25 8
RESERVE=180 attn_bench /tmp/s19d- abl31 abl31 25 8
RESERVE=165 attn_bench /tmp/s19d- dbl dbl-2 25 8
RESERVE=150 attn_bench /tmp/s19d- base base-2 25 8
attn_tests_tail /tmp/s19d-dbl r19d
