#!/bin/bash
# Session 22, the lead's first device call. One H200, END_S = 420 s. Wheels: .carry/s21c/new (10d11bd: the same SASS as
# 95d45fe, session 21's end; "base"), .carry/s22/new (2ad413f: the next item's L2 prefetch as one bulk request),
# .carry/s22/tl (2ad413f + bench/probes/timeline.patch: clock64 at the refine's phase boundaries). First the timeline
# probe (bench/probes/timeline.py: B1 L16K, B8 L128K, B1 L4K planned exact 3+3), then bench_attention.py --variants
# planner --kernel-time, base / new / base / new, then the whole test_attention_gpu.py and the s17a sanitizer script on
# new. Results: $OUT/r22.tgz, $OUT/summary.txt (with the timeline's medians).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r22
source ci/device/lib.sh
call_setup 420 phases.txt tests.txt
inst ".carry/s21c/new/mlops_attention-*.whl" /tmp/s22-base
inst ".carry/s22/new/mlops_attention-*.whl" /tmp/s22-new
inst ".carry/s22/tl/mlops_attention-*.whl" /tmp/s22-tl
gpu_info
attn_timeline /tmp/s22-tl
for t in base-1 new-1 base-2 new-2; do
  attn_bench /tmp/s22- ${t%-*} $t 60 8 --kernel-time
done
attn_tests_tail /tmp/s22-new r22
