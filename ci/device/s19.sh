#!/bin/bash
# Session 19, the lead's first device call (one H200, bounded to END_S = 540 s of the script). Wheels in .carry/s19/
# (built here: nox -s gpu_build -- --tags sm90, each in its own worktree):
#   attn-base/  b746ae1's attention (HEAD: mlops::launch_pdl's host path, not GPU-run since 0f1a442)
#   attn-fo/    the same with packages/attention/bench/probes/fo_probe.patch applied: the refine's closed-group reads in
#               the fragment-ordered order (docs/attention.md "Session 18 (f)"). Wrong bits by design: timing only.
#   vocab/      b746ae1's vocab (launch_pdl's stream / pipe / decode launches, not GPU-run since 0f1a442)
# (A) quiet GPU: bench_attention.py --variants planner: base, fo, base, fo (interleaved: the probe's gain against the
#     spread between a wheel's two calls);
# (B) at once: the whole test_attention_gpu.py on base (5 shards), test_vocab_gpu.py (5) and test_vocab_sampler_gpu.py
#     (3) on vocab; compute-sanitizer racecheck + memcheck of s17a_sanitize.py (attention base) and of the LM head's
#     padded-strides subset (vocab: pipe3 / stream32, the launch_pdl launches).
# Results: $OUT/r19.tgz and $OUT/summary.txt. DRY=1: prints what it would run.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r19
source ci/device/lib.sh
C=.carry/s19
call_setup 540 phases.txt tests.txt summary.txt
inst "$C/attn-base/mlops_attention-*.whl" /tmp/s19a-base
inst "$C/attn-fo/mlops_attention-*.whl" /tmp/s19a-fo
inst "$C/vocab/mlops_vocab-*.whl" /tmp/s19v
gpu_info
# (A)
RESERVE=420 attn_bench /tmp/s19a- base base-1 35 20
RESERVE=390 attn_bench /tmp/s19a- fo fo-1 35 20
RESERVE=360 attn_bench /tmp/s19a- base base-2 35 20
RESERVE=330 attn_bench /tmp/s19a- fo fo-2 35 20
# (B): to END - 30 s, at most 330 s
L=$((END - 30 - SECONDS)); [ $L -gt 330 ] && L=330; [ $L -lt 60 ] && L=60
echo "tests start at ${SECONDS}s, limit ${L}s" >> $R/phases.txt
shards sm90 attention /tmp/s19a-base 5 $L
fshards vocab packages/vocab/tests/test_vocab_gpu.py /tmp/s19v 5 $L
fshards sampler packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/s19v 3 $L
ssanitize /tmp/s19a-base $L ci/device/s17a_sanitize.py
ksanitize vsan /tmp/s19v $L packages/vocab/tests/test_vocab_gpu.py "padded_strides_sanitizer_subset and (pipe3 or stream32)"
wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
collect
python3 ci/device/bench_rows.py $R > $R/bench.txt
cat $R/phases.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt $R/bench.txt > $OUT/summary.txt
(cd /tmp && tar czf $OUT/r19.tgz r19)
cat $OUT/summary.txt
