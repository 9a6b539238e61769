#!/bin/bash
# Session 8, device run 45 (one H200): mma_pv+coarse_imma with the P V code words from the e words, then the o
# words (no spills past 12 bytes; run 44 spilled 144). (1) smoke; (2) alone:
# bench_attention --targets, imma_occ beside mma_pv; (3) compute-sanitizer racecheck and memcheck of mma_pv
# alone (ci/device/fbla_sanitize.py: the sanitizer-subset shapes and a second pass of heads); (4) the attention
# GPU file under sm_90 (every variant) and mma_pv's tests under compute_80 / compute_61 PTX.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
for t in sm90 c80 c61; do inst ".carry/gpu/$t/mlops_attention-*.whl" /tmp/$t-attention; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
TT=$PWD/tools/testing
PYTHONPATH=/tmp/sm90-attention:$TT timeout 120 python3 -m pytest -q --tb=short -p no:cacheprovider \
  packages/attention/tests/test_attention_gpu.py -k "mma_pv and 3+3 and 128 and 4" > $R/smoke.log 2>&1
echo "smoke rc=$? $(tail -1 $R/smoke.log | cut -c1-150) at ${SECONDS}s" >> $R/phases.txt
if grep -q " passed" $R/smoke.log && ! grep -q "failed" $R/smoke.log; then
  PYTHONPATH=/tmp/sm90-attention:$TT timeout 200 python3 packages/attention/bench/bench_attention.py --targets \
    --variants imma_occ+coarse_imma,mma_pv+coarse_imma --kernel-time > $R/bench.log 2>&1
  echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
  PYTHONPATH=/tmp/sm90-attention timeout 120 ncu --set full --import-source no -k regex:refine_mma --launch-skip 1 -c 1 \
    -o $R/mma-b8 python3 packages/attention/bench/profile_decode.py --B 8 --L 16384 --variant mma_pv+coarse_imma --exact \
    > $R/ncu-b8.log 2>&1
  echo "ncu rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/mma-b8.ncu-rep --page details --print-units base > $R/details-b8.txt 2>&1
fi
for tool in racecheck memcheck; do
  PYTHONPATH=/tmp/sm90-attention timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 ci/device/fbla_sanitize.py > $R/sanitizer-$tool.log 2>&1
  echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
done &
L=$((540 - SECONDS)); [ $L -gt 300 ] && L=300
shards sm90 attention /tmp/sm90-attention 5 $L
shards c80 attention /tmp/c80-attention 3 $L -k mma_pv
shards c61 attention /tmp/c61-attention 3 $L -k mma_pv
wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt
grep -E "Duration|Issue Slots Busy|Executed Instructions  |Achieved Active Warps" r/details-b8.txt
python3 - <<'P'
import json
for l in open("r/bench.log"):
    if not l.startswith("{"): continue
    r = json.loads(l)
    if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("kernel_us"), "|", r.get("frac_copy_bw"))
P
rm -rf r
