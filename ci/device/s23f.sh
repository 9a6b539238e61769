#!/bin/bash
# Session 23, the lead's sixth device call (GPU run 123, <= 300 s): ncu source-level profiles (stall sampling and
# instructions executed per SASS instruction) of session 23's planned kernels (.carry/s23/new = 374b241): B8 L128K's
# kEarly refine (refine_mma4_kernel<128, 8, false, true, true>, one launch) and B1 L16K's refine + combine, 3+3 exact.
# Results in $OUT/r23f.tgz (the .ncu-rep files left out): <name>-details.txt, <name>-source.csv.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r23f
source ci/device/lib.sh
call_setup 300 phases.txt
inst ".carry/s23/new/mlops_attention-*.whl" /tmp/s23f-new
gpu_info
prof() {  # prof NAME NCU-ARGS... -- PROGRAM ARGS... (as s16p.sh's)
  local n=$1; shift
  PYTHONPATH=/tmp/s23f-new timeout 130 ncu --set full --clock-control none --import-source no -f -o $R/$n "$@" > $R/$n.log 2>&1
  echo "$n rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/$n.ncu-rep --page details --print-units base > $R/$n-details.txt 2>&1
  ncu -i $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
}
prof attn-b8-l131072 -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
prof attn-b1-l16384 -k regex:"refine_mma4_kernel|combine_warps_kernel" --launch-skip 1 -c 2 \
  python3 packages/attention/bench/profile_decode.py --B 1 --L 16384 --variant planner --exact
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
ls -la $R >> $R/phases.txt
(cd /tmp && tar czf $OUT/r23f.tgz --exclude="*.ncu-rep" $(basename $R))
cat $R/phases.txt
