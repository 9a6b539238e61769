#!/bin/bash
# Session 26's sixth device call (<= 200 s): ncu of run 132's new wheel (.carry/s26/fin = 4b138be: the K codes
# fragment-ordered, no L2 prefetch of the next item): B8 L128K's kEarly refine (one launch, 3+3 exact), to see the L2's
# share after the prefetch went (run 130: 94 % with it). Results in $OUT/r26f.tgz (the .ncu-rep files left out).
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r26f
source ci/device/lib.sh
call_setup 200 phases.txt
inst ".carry/s26/fin/mlops_attention-*.whl" /tmp/s26f-new
gpu_info
ncu_prof new-b8-l131072 /tmp/s26f-new -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
ls -la $R >> $R/phases.txt
(cd /tmp && tar czf $OUT/r26f.tgz --exclude="*.ncu-rep" $(basename $R))
cat $R/phases.txt
