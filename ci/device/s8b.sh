#!/bin/bash
# Session 8, device run 42 (one H200): why mma_pv+coarse_imma (da682e7) runs B8 L128K at 1772 us (23 % of the
# copy bandwidth, run 41) and B1 L16K at 44 us: ncu --set full of one refine_mma_kernel launch at B8 L16K and
# one at B1 L16K (exact, 3+3), the details page and the SASS-level source page (stall samples an instruction).
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
inst ".carry/gpu/sm90/mlops_attention-*.whl" /tmp/sm90-attention
export PYTHONPATH=/tmp/sm90-attention
for s in "8 16384" "1 16384"; do
  set -- $s
  timeout 200 ncu --set full --import-source no -k regex:refine_mma --launch-skip 1 -c 1 -o $R/mma-b$1 \
    python3 packages/attention/bench/profile_decode.py --B $1 --L $2 --variant mma_pv+coarse_imma --exact > $R/ncu-b$1.log 2>&1
  echo "ncu B=$1 rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/mma-b$1.ncu-rep --page details --print-units base > $R/details-b$1.txt 2>&1
  ncu -i $R/mma-b$1.ncu-rep --page source --csv --print-source sass > $R/sass-b$1.csv 2>&1
done
cd $OUT && tar czf r.tgz r && cat r/phases.txt; grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput|Registers Per|Block Limit|No Eligible|Stall" r/details-b8.txt | head -40; rm -rf r
