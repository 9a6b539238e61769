#!/bin/bash
# Session 26's third device call (<= 200 s): ncu source-level profile of run 129's new wheel (.carry/s26/new =
# 3c68e41, the K codes fragment-ordered): B8 L128K's kEarly refine (one launch, 3+3 exact), to give the next cut its
# per-line numbers (ci/device/ncu_lines.py against a local -lineinfo compile), as s25.sh did for run 126.
# Results in $OUT/r26c.tgz (the .ncu-rep files left out): <name>-details.txt, <name>-source.csv.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r26c
source ci/device/lib.sh
call_setup 200 phases.txt
inst ".carry/s26/new/mlops_attention-*.whl" /tmp/s26c-new
gpu_info
ncu_prof new-b8-l131072 /tmp/s26c-new -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
ls -la $R >> $R/phases.txt
(cd /tmp && tar czf $OUT/r26c.tgz --exclude="*.ncu-rep" $(basename $R))
cat $R/phases.txt
