#!/bin/bash
# Session 26's ncu calls (<= 200 s): ncu source-level profile of one wheel's B8 L128K kEarly refine (one launch, 3+3
# exact), for ci/device/ncu_lines.py against a local -lineinfo compile, as s25.sh did for run 126.
# W: the wheel's folder under .carry/s26/ (default new = 3c68e41, run 130), or WD: the folder itself; N: the run's name
# (default r26c). s26f.sh is W=fin N=r26f (4b138be, run 133); s27e.sh is WD=.carry/s27/d6 N=r27e (dd5efd3, run 139). Results in $OUT/$N.tgz (the .ncu-rep files left out):
# <name>-details.txt, <name>-source.csv.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
W=${W:-new}
WD=${WD:-.carry/s26/$W}
N=${N:-r26c}
R=/tmp/$N
source ci/device/lib.sh
call_setup 200 phases.txt
inst "$WD/mlops_attention-*.whl" /tmp/$N-new
gpu_info
ncu_prof new-b8-l131072 /tmp/$N-new -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
ls -la $R >> $R/phases.txt
(cd /tmp && tar czf $OUT/$N.tgz --exclude="*.ncu-rep" $(basename $R))
cat $R/phases.txt
