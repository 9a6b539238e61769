#!/bin/bash
# Session 8, device run 48 (one H200): for the next session's choice of what to cut in mma_pv+coarse_imma (48095af):
# ncu --set full of one decode's two kernels (refine_mma_kernel, combine_warps_kernel) at B1 L16K and at B8 L16K,
# exact 3+3, with the SASS source page (executed instructions and stall samples an instruction).
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
inst ".carry/gpu/sm90/mlops_attention-*.whl" /tmp/sm90-attention
export PYTHONPATH=/tmp/sm90-attention
for B in 1 8; do
  timeout 150 ncu --set full --import-source no -k regex:"refine_mma|combine_warps" --launch-skip 2 -c 2 -o $R/mma-b$B \
    python3 packages/attention/bench/profile_decode.py --B $B --L 16384 --variant mma_pv+coarse_imma --exact > $R/ncu-b$B.log 2>&1
  echo "ncu B=$B rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/mma-b$B.ncu-rep --page details --print-units base > $R/details-b$B.txt 2>&1
  ncu -i $R/mma-b$B.ncu-rep --page source --csv --print-source sass -k regex:refine_mma > $R/sass-b$B.csv 2>&1
done
cd $OUT && tar czf r.tgz r && cat r/phases.txt; grep -E "refine_mma|combine_warps|Duration" r/details-b1.txt | head -8; rm -rf r
