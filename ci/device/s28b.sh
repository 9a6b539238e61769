#!/bin/bash
# Session 28's A / B device call with the tested wheel's GPU tests: s28a.sh's benches and timelines (W, TL, N), then
# the whole test_attention_gpu.py on T (5 shards) with racecheck / memcheck of ci/device/s17a_sanitize.py, and (when
# T_C75S names a folder) the c75s wheel's subset. One H200, END_S = 480 s. Results: $OUT/$N.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/$N
source ci/device/lib.sh
call_setup 480 phases.txt tests.txt
inst_named /tmp/$N-
[ -n "$T_C75S" ] && inst "$T_C75S/mlops_attention-*.whl" /tmp/$N-c75s
gpu_info
attn_timelines /tmp/$N-
attn_abn /tmp/$N- "${names[@]}"
[ -n "$DRY" ] || for n in $TL; do grep -A4 "B8 L128K\|B1 L16K" $R/timeline-$n.txt | sed "s/^/$n: /" >> $R/phases.txt; done
[ -n "$T_C75S" ] && attn_c75s /tmp/$N-c75s
attn_tests_tail /tmp/$N-$T $N
