#!/bin/bash
# Session 35, prepared for after s35v.sh (same machine, its wheels; ~200 s): which pipe limits the sampler's exp-heavy
# rows at B = 64 once 45abaeb took two XU conversions an element out of the lean weights (run 51's profile reported
# issue slots and stalls, never the pipes). ncu of the planner's B = 64 picks for temperature, top-p, top-k and the
# combination (profile_vocab.py --cases s35; each after its warm-up, which ncu profiles too): the full set (speed of
# light, compute workload, warp states, instruction stats), then the per-pipe metrics by regex (the instructions
# executed a pipe and each pipe's active cycles, % of peak). Carry: .carry/s35v (s35v.sh's wheels). Results in
# $OUT/n.tgz; the pipes' lines printed.
export PYTHONUNBUFFERED=1
R=$OUT/r/n; mkdir -p $R; source ci/device/lib.sh
N=/tmp/s35v-new
[ -d $N/mlops ] || inst ".carry/s35v/new/mlops_vocab-*.whl" $N
export PYTHONPATH=$N
K="-k regex:sample_cluster_kernel --clock-control none"
timeout 300 ncu --set full --import-source no $K -o $R/s35 \
  python3 packages/vocab/bench/profile_vocab.py --cases s35 --no-lm-head > $R/ncu-full.log 2>&1
echo "ncu full rc=$? [${SECONDS}s]" >> $R/summary.txt
ncu --import $R/s35.ncu-rep --print-summary none > $R/ncu-details.txt 2>&1
ncu --query-metrics 2>&1 | grep -iE "pipe" > $R/pipe-metrics.txt  # the names this ncu has (none used here before)
P='regex:^sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active$'
Q='regex:^sm__pipe_[a-z0-9_]+_cycles_active\.avg\.pct_of_peak_sustained_active$'
timeout 200 ncu --metrics "$P,$Q" $K python3 packages/vocab/bench/profile_vocab.py --cases s35 --no-lm-head \
  > $R/ncu-pipes.txt 2>&1
echo "ncu pipes rc=$? [${SECONDS}s]" >> $R/summary.txt
grep -E "sample_cluster_kernel|pipe" $R/ncu-pipes.txt | grep -vE " 0(\.0+)?$" | cut -c1-160 > $R/pipes.txt
grep -E "highest-utilized|Issue Slots Busy|Duration" $R/ncu-details.txt > $R/highlights.txt
(cd $OUT/r && tar czf $OUT/n.tgz n)
cat $R/summary.txt $R/highlights.txt $R/pipes.txt
