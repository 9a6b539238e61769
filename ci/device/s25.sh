#!/bin/bash
# Session 25's second device call (<= 300 s): ncu source-level profiles of run 125's wheels (.carry/s24: base = 9da2ab4,
# new = 70cd621), to give the next cut its numbers: B8 L128K's kEarly refine on new (one launch, 3+3 exact: the
# instructions an item after session 24's two cuts, against run 123's 12,545), and B8 L4K 4+2 skip, the one case run
# 125 measured slower on new (57.26 vs 55.80 us), its coarse and refine launches on base and on new (--launch-skip 4:
# the two references profile_decode.py runs first, items and mma_pv+coarse_imma, launch a coarse and a refine each).
# Results in $OUT/r25.tgz (the .ncu-rep files left out): <name>-details.txt, <name>-source.csv.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r25
source ci/device/lib.sh
call_setup 300 phases.txt
for w in base new; do inst ".carry/s24/$w/mlops_attention-*.whl" /tmp/s25-$w; done
gpu_info
prof() {  # prof NAME WHEEL NCU-ARGS... -- PROGRAM ARGS... (as s23f.sh's)
  local n=$1 w=$2; shift 2
  PYTHONPATH=/tmp/s25-$w timeout 100 ncu --set full --clock-control none --import-source no -f -o $R/$n "$@" > $R/$n.log 2>&1
  echo "$n rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/$n.ncu-rep --page details --print-units base > $R/$n-details.txt 2>&1
  ncu -i $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
}
prof new-b8-l131072 new -k regex:refine_mma4_kernel -c 1 \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
for w in base new; do
  prof $w-b8-l4096-42skip $w -k regex:"coarse|refine" --launch-skip 4 -c 2 \
    python3 packages/attention/bench/profile_decode.py --B 8 --L 4096 --variant planner --mode 4+2
done
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
ls -la $R >> $R/phases.txt
(cd /tmp && tar czf $OUT/r25.tgz --exclude="*.ncu-rep" $(basename $R))
cat $R/phases.txt
