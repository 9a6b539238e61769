#!/bin/bash
# Session 9, device run 51 (one H200): where the sampler's time goes at the open targets (issue 5):
# ncu --set full of the planned launches (profile_vocab.py --cases s9: B = 1 top-p wide / top-k gather,
# B = 64 temperature lean, top-p wide, top-k lean and wide), each after its warm-up, plus the SASS source
# page (per-instruction stall samples) of the measured launches. Wheel: .carry/gpu/sm90 vocab of HEAD.
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
git rev-parse HEAD > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/m .carry/gpu/sm90/mlops_vocab-*.whl
export PYTHONPATH=/tmp/m
timeout 400 ncu --set full --import-source no --clock-control none -k regex:sample_cluster_kernel -o $R/samp \
  python3 packages/vocab/bench/profile_vocab.py --cases s9 --no-lm-head > $R/ncu-run.log 2>&1
echo "ncu rc=$?" >> $R/summary.txt
ncu --import $R/samp.ncu-rep --print-summary none > $R/ncu-details.txt 2>&1
for id in 1 3 5 7 9 11; do
  timeout 60 ncu --import $R/samp.ncu-rep --page source --print-source sass --csv --launch-skip 0 --print-kernel-base function \
    --kernel-id ::regex:sample_cluster_kernel:$((id + 1)) > $R/src-$id.csv 2>&1
done
grep -q -i "error" $R/src-1.csv && timeout 120 ncu --import $R/samp.ncu-rep --page source --print-source sass --csv > $R/src-all.csv 2>&1
ls -la $R >> $R/summary.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt; rm -rf r
