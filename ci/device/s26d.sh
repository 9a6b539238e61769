#!/bin/bash
# Session 26's fourth device call: run 130's ncu put the kEarly refine's L2 at 94 % of its throughput (each record
# byte crosses it twice: the next item's bulk L2 prefetch, then the bulk copy). A timing probe of that prefetch
# (wheels .carry/s26/, sm90, worktrees of aec7b9c with one line changed, the same outputs): new = 3c68e41's wheel
# (the same refine), nopf = no L2 prefetch of the next item, kspf = only the next item's groups' k_min / k_scale
# (the front's global reads) prefetched. bench_attention.py --variants planner, all cases, three interleaved rounds.
# Results: $OUT/r26d.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r26d
source ci/device/lib.sh
call_setup 300 phases.txt
for w in new nopf kspf; do inst ".carry/s26/$w/mlops_attention-*.whl" /tmp/s26d-$w; done
gpu_info
for t in new-1 nopf-1 kspf-1 kspf-2 nopf-2 new-2 new-3 nopf-3 kspf-3; do
  attn_bench /tmp/s26d- ${t%-*} $t 40 8
done
attn_bench_tail r26d
