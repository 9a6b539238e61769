#!/bin/bash
# Session 22, the lead's second device call (GPU run 116). One H200, END_S = 460 s. Wheels (.carry/s22/): new (2ad413f:
# the bulk L2 prefetch, run 115's "new"), evf (54ea883: + the staged copies evict_first), spl (3caed54: + the one-round
# instance's copy in two parts), dyn (711be5b: + the kEarly refine's items from a counter), bfp (f34bf93: + the BF16
# item's rows prefetched; sm90 and c75s), dtl (f34bf93 + bench/probes/timeline_dyn.patch). First the timeline probe on
# dtl, then bench_attention.py --variants planner --kernel-time, new / evf / spl / dyn / bfp twice, then the whole
# test_attention_gpu.py on bfp (5 shards), its c75s subset (2 shards) and the s17a sanitizer script on bfp.
# Results: $OUT/r22b.tgz, $OUT/summary.txt, $OUT/timeline.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r22b
source ci/device/lib.sh
call_setup 460 phases.txt tests.txt
for w in new evf spl dyn bfp dtl; do inst ".carry/s22/$w/mlops_attention-*.whl" /tmp/s22b-$w; done
inst ".carry/s22/bfpc75s/mlops_attention-*.whl" /tmp/s22b-c75s
gpu_info
attn_timeline /tmp/s22b-dtl
for t in new-1 evf-1 spl-1 dyn-1 bfp-1 new-2 evf-2 spl-2 dyn-2 bfp-2; do
  attn_bench /tmp/s22b- ${t%-*} $t 40 8 --kernel-time
done
L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
fshards c75s packages/attention/tests/test_attention_gpu.py /tmp/s22b-c75s 2 $L -k "mma_pv or warps or items or stage or planner"
attn_tests_tail /tmp/s22b-bfp r22b
