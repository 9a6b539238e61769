#!/bin/bash
# Session 12, attention, call 3 (one H200, <= 200 s): the mma refines' per-item work cut (item_add instead of
# dividing every item, setup_group_warp without the coarse pass's wsum / wabs; the same bits). Wheels:
# .carry/s12attn2/sm90 (new) and .carry/s12attn/sm90 (run 67's, "before"), each in its own fresh target.
# (1) bench_attention --targets, new wheel: planner, mma_pv, mma_pv4 (events); (2) the same bench of the old wheel,
# planner and mma_pv (an A/B in one run); (3) ncu instruction counts of one refine launch of mma_pv and mma_pv4 at
# B8 L16K, old and new; (4) the mma_pv / planner GPU tests on sm_90 in 4 shards; (5) with the time left, ncu --set
# full of the B1 L16K planned decode's kernels (coarse, refine_mma4, combine).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench-new $R/bench-old; source ci/device/lib.sh
inst ".carry/s12attn2/sm90/mlops_attention-*.whl" /tmp/a2
inst ".carry/s12attn/sm90/mlops_attention-*.whl" /tmp/a1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
MLOPS_BENCH_OUT=$R/bench-new PYTHONPATH=/tmp/a2:$PWD/tools/testing timeout ${BENCH_S:-45} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner,mma_pv+coarse_imma,mma_pv4+coarse_imma \
  > $R/bench-new.log 2>&1
echo "bench new rc=$? at ${SECONDS}s" >> $R/phases.txt
MLOPS_BENCH_OUT=$R/bench-old PYTHONPATH=/tmp/a1:$PWD/tools/testing timeout ${BENCH_OLD_S:-35} python3 \
  packages/attention/bench/bench_attention.py --targets --variants planner,mma_pv+coarse_imma \
  > $R/bench-old.log 2>&1
echo "bench old rc=$? at ${SECONDS}s" >> $R/phases.txt
for t in new:/tmp/a2 old:/tmp/a1; do
  PYTHONPATH=${t#*:} timeout ${NCU_S:-25} ncu --metrics smsp__inst_executed.sum,gpu__time_duration.sum,launch__grid_size \
    -k regex:refine_mma --launch-skip 1 -c 2 python3 packages/attention/bench/profile_decode.py --B 8 --L 16384 \
    --variant mma_pv+coarse_imma,mma_pv4+coarse_imma --exact > $R/ncu-inst-${t%%:*}.log 2>&1
  echo "ncu inst ${t%%:*} rc=$? at ${SECONDS}s" >> $R/phases.txt
done
shards sm90k attention /tmp/a2 4 ${TEST_S:-45} -k "mma_pv or planner"
wait; echo "mma_pv / planner tests done at ${SECONDS}s" >> $R/phases.txt
L=$((${END_S:-188} - SECONDS)); [ $L -gt 10 ] && {
  PYTHONPATH=/tmp/a2 timeout $L ncu --set full --import-source no -k regex:"coarse|refine_mma|combine" -c 8 \
    -o $R/b1-planned python3 packages/attention/bench/profile_decode.py --B 1 --L 16384 \
    --variant mma_pv+coarse_imma --exact > $R/ncu-b1.log 2>&1
  echo "ncu full rc=$? at ${SECONDS}s (limit ${L}s)" >> $R/phases.txt
  [ -f $R/b1-planned.ncu-rep ] && ncu -i $R/b1-planned.ncu-rep --page details --print-units base > $R/details-b1.txt 2>&1; }
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
grep -h "FAILED\|Error" $R/sm90k-attention-*.log | head -20 > $R/failures.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt r/phases.txt r/tests-sorted.txt r/failures.txt && grep -h "inst_executed\|duration\|refine_mma" r/ncu-inst-*.log | head -24; rm -rf r
