#!/bin/bash
# Session 20, the lead's fifth device call: where the planned refine's issue slots go, per SASS instruction.
# (A) run 106's ncu report of the kEarly refine at B8 L16K (.carry/s20e/ncu-base.ncu-rep) exported as its SASS source
#     page (instructions executed and warp-state samples a SASS line);
# (B) ncu --set full of the B1 L16K 3+3 exact planned decode's refine (mma_pv4r's kernel, one round) and its source page.
# Wheel: .carry/s20/base (125fa7a's attention sources). One H200, END_S = 200 s. Results: $OUT/r20e.tgz, summary.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r20e
source ci/device/lib.sh
call_setup 200 phases.txt tests.txt
inst ".carry/s20/base/mlops_attention-*.whl" /tmp/s20e-base
gpu_info
ncu -i .carry/s20e/ncu-base.ncu-rep --page source --csv --print-source sass > $R/b8l16k-source.csv 2>&1
echo "source page b8l16k rc=$? at ${SECONDS}s" >> $R/phases.txt
PYTHONPATH=/tmp/s20e-base timeout 60 ncu --set full --import-source no -k regex:refine_mma4_kernel -c 1 -o $R/ncu-b1 \
  python3 packages/attention/bench/profile_decode.py --B 1 --L 16384 --variant planner --exact > $R/ncu-b1.log 2>&1
echo "ncu b1l16k rc=$? at ${SECONDS}s" >> $R/phases.txt
ncu -i $R/ncu-b1.ncu-rep --page details --print-units base > $R/details-b1.txt 2>&1
ncu -i $R/ncu-b1.ncu-rep --page raw --csv > $R/raw-b1.csv 2>&1
ncu -i $R/ncu-b1.ncu-rep --page source --csv --print-source sass > $R/b1l16k-source.csv 2>&1
echo "exports rc=$? at ${SECONDS}s" >> $R/phases.txt
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
rm -f $R/ncu-b1.ncu-rep
(cd /tmp && tar czf $OUT/r20e.tgz r20e)
cat $R/phases.txt; head -3 $R/b8l16k-source.csv | cut -c1-400
grep -E "Duration|Executed Ipc|Issued Warp|No Eligible|Compute \(SM\)|DRAM Throughput|Achieved Occupancy" $R/details-b1.txt
