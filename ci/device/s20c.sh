#!/bin/bash
# Session 20, the lead's third device call: ncu of the planned refine (refine_mma4_kernel, the kEarly instance) at B8
# L16K 3+3 exact (~8 rounds of items) for the wheels base (.carry/s20/base), nopre and cur (.carry/s20b/): why the
# streamed refine's early K copy is slower (run 105). One H200, END_S = 200 s. Results: $OUT/r20c.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20c
source ci/device/lib.sh
call_setup 200 phases.txt tests.txt
inst ".carry/s20/base/mlops_attention-*.whl" /tmp/s20c-base
for w in cur nopre; do inst ".carry/s20b/$w/mlops_attention-*.whl" /tmp/s20c-$w; done
gpu_info
for w in base nopre cur; do
  PYTHONPATH=/tmp/s20c-$w timeout 60 ncu --set full --import-source no -k regex:refine_mma4_kernel -c 1 -o $R/ncu-$w \
    python3 packages/attention/bench/profile_decode.py --B 8 --L 16384 --variant planner --exact > $R/ncu-$w.log 2>&1
  echo "ncu $w rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/ncu-$w.ncu-rep --page details --print-units base > $R/details-$w.txt 2>&1
  ncu -i $R/ncu-$w.ncu-rep --page raw --csv > $R/raw-$w.csv 2>&1
done
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
cat $R/phases.txt > $OUT/summary.txt
for w in base nopre cur; do
  echo "== $w" >> $OUT/summary.txt
  grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Local Memory|No Eligible|Issued Warp|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|Theoretical Occ" $R/details-$w.txt >> $OUT/summary.txt
done
(cd /tmp && tar czf $OUT/r20c.tgz r20c)
cat $OUT/summary.txt
