#!/bin/bash
# Session 33, second call (one H200, <= 560 s): the planner of the "u" variants (plan_call's kFewRowsPicks) against the
# plan before it, and the tests of what the planner changed.
#   (1) bench_norm.py's planned rows (y and every quantized output; no --variants) at T 1 / 8 / 128 / 256 x H 2048 /
#       4096 / 8192 and the control 2048x4096, before (.carry/s33n/sm90: the variants without the planner) and new
#       (.carry/s33n2/sm90) in turn, 3 rounds each, interleaved;
#   (2) on the new wheel: test_norm_gpu.py -k "planned or few_rows or graph or sanitizer" and test_norm_compile.py,
#       test_norm_errors.py, the planner tests (test_norm_numerics.py -k planner); the norm C API test.
# Everything under /tmp/rn2, returned as $OUT/n2.tgz; summary.txt: a line a case and shape, before / new per round.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn2
rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nb .carry/s33n/sm90/mlops_norm-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nn .carry/s33n2/sm90/mlops_norm-*.whl
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
S=1x2048,8x2048,128x2048,256x2048,1x4096,8x4096,128x4096,256x4096,1x8192,8x8192,128x8192,256x8192,2048x4096
bench() {  # bench NAME TARGET LIMIT [bench args...]
  local n=$1-$SECONDS t=$2 l=$3; shift 3
  mkdir -p $R/$n
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=$t:$PWD/tools/testing timeout $l python3 packages/norm/bench/bench_norm.py "$@" \
    > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
}
for i in 1 2 3; do
  bench before /tmp/nb 60 --shapes $S
  bench new /tmp/nn 60 --shapes $S
done
L=$((540 - SECONDS)); [ $L -lt 30 ] && L=30
t() {  # t NAME pytest-args...
  local n=$1; shift
  ( PYTHONPATH=/tmp/nn:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $L python3 -m pytest -q --tb=short \
      -p no:cacheprovider "$@" > $R/tests-$n.log 2>&1
    echo "tests $n rc=$? $(grep -E 'passed|failed|error' $R/tests-$n.log | tail -1 | cut -c1-140) at ${SECONDS}s" >> $R/tests.txt ) &
}
t gpu packages/norm/tests/test_norm_gpu.py -k "planned or few_rows or graph or sanitizer"
t compile packages/norm/tests/test_norm_compile.py packages/norm/tests/test_norm_errors.py
t planner packages/norm/tests/test_norm_numerics.py -k planner
wait
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
python3 - > $R/summary.txt <<'EOF'
import glob, json, os
rows = {}
for d in sorted(glob.glob("/tmp/rn2/*-*/"), key=lambda p: int(p.rstrip("/").rsplit("-", 1)[1])):
    who = os.path.basename(d.rstrip("/")).split("-")[0]
    for f in glob.glob(d + "*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            c = r.get("case", "")
            if r.get("impl") == "mlops" and c in ("rms_norm", "rms_norm+int8", "rms_norm+nvfp4", "rms_norm+fp8", "rms_norm+fp8_static"):
                rows.setdefault((r["shape"], c.replace("rms_norm", "") or "y"), {}).setdefault(who, []).append(r["us"])
            if r.get("impl") == "F.rms_norm" and c == "rms_norm":
                rows.setdefault((r["shape"], "F.rms_norm"), {}).setdefault(who, []).append(r["us"])
for (shape, case), v in rows.items():
    print(f"{shape:9s} {case:12s}", "  ".join(f"{k}={'/'.join(str(u) for u in us)}" for k, us in v.items()))
EOF
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n2.tgz rn2
