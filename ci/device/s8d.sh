#!/bin/bash
# Session 8, device run 44 (one H200): mma_pv+coarse_imma with the l / V-min sums as lane sums + a butterfly
# (the digits form's definition changed with it; no chains over 32 tokens on 4 lanes). (1) smoke; (2) alone:
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
python3 - <<'P'
import json
for l in open("r/bench.log"):
    if not l.startswith("{"): continue
    r = json.loads(l)
    if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("kernel_us"), "|", r.get("frac_copy_bw"))
P
rm -rf r
