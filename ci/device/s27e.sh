#!/bin/bash
# Session 27's fifth device call (<= 200 s): ncu source-level profile of the final wheel's B8 L128K kEarly refine
# (.carry/s27/d6 = dd5efd3, one launch, 3+3 exact), for ci/device/ncu_lines.py against a local -lineinfo compile
# (as s26c.sh for run 130). Results in $OUT/r27e.tgz (the .ncu-rep files left out): <name>-details.txt,
# <name>-source.csv.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r27e
source ci/device/lib.sh
call_setup 200 phases.txt
inst ".carry/s27/d6/mlops_attention-*.whl" /tmp/r27e-new
gpu_info
ncu_prof d6-b8-l131072 /tmp/r27e-new -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
ls -la $R >> $R/phases.txt
(cd /tmp && tar czf $OUT/r27e.tgz --exclude="*.ncu-rep" $(basename $R))
cat $R/phases.txt
