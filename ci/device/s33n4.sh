#!/bin/bash
# Session 33, the final check of the norm changes (one H200, <= 560 s): the whole test_norm_gpu.py on HEAD's sm90 wheel
# in 12 shards at once (the planned calls below 2 rows an SM now run the "u" kernels), the c61s wheel on -k "lu or
# planned or few_rows", and one round of bench_norm.py's planned rows (the shapes of issue 2's table) beside F.rms_norm.
# Wheels: .carry/s33n4/{sm90,c61s}/mlops_norm-*.whl. Everything under /tmp/rn4, returned as $OUT/n4.tgz.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn4
rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nn .carry/s33n4/sm90/mlops_norm-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/n61 .carry/s33n4/c61s/mlops_norm-*.whl
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
mkdir -p $R/bench
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/nn:$PWD/tools/testing timeout 120 python3 packages/norm/bench/bench_norm.py \
  > $R/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
L=$((540 - SECONDS)); [ $L -lt 30 ] && L=30
for ((i = 0; i < 12; i++)); do
  ( PYTHONPATH=/tmp/nn:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/12 timeout $L python3 -m pytest -q \
      --tb=short -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py > $R/tests-sm90-$i.log 2>&1
    echo "tests sm90 shard $i/12 rc=$? $(grep -E 'passed|failed|error' $R/tests-sm90-$i.log | tail -1 | cut -c1-140) at ${SECONDS}s" >> $R/tests.txt ) &
done
( PYTHONPATH=/tmp/n61:$PWD/tools/testing MLOPS_ARCH_TAG=c61s timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider \
    packages/norm/tests/test_norm_gpu.py -k "lu or planned or few_rows" > $R/tests-c61s.log 2>&1
  echo "tests c61s rc=$? $(grep -E 'passed|failed|error' $R/tests-c61s.log | tail -1 | cut -c1-140) at ${SECONDS}s" >> $R/tests.txt ) &
wait
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
python3 - > $R/summary.txt <<'PY'
import glob, json
for f in glob.glob("/tmp/rn4/bench/*.jsonl"):
    for l in open(f):
        r = json.loads(l)
        if r.get("impl") in ("mlops", "F.rms_norm") and r.get("case", "").startswith(("rms_norm", "add_rms_norm")):
            print(f"{r['shape']:10s} {r['case']:22s} {r['impl']:10s} {r['us']}")
PY
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n4.tgz rn4
